#!/usr/bin/env python3
"""PyTorch side of bench/bench_mnist_epoch: one epoch of seed 000's MLP, data in memory.

Run with Debian's PyTorch (CPU) at its best settings on this machine:
    OPENBLAS_CORETYPE=SkylakeX OMP_NUM_THREADS=2 /usr/bin/python3 bench/pytorch/mnist_epoch.py --threads 2
The loop is the same as ember's: normalized float32 images in memory, a shuffled permutation per
epoch, batches gathered by index, SGD(lr=0.1, momentum=0.5), cross-entropy.
"""
import argparse
import gzip
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(root, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(root, name)):
            return os.path.join(root, name)
    raise FileNotFoundError(os.path.join(root, stem))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    images = torch.from_numpy(read_idx(find(args.data, "train-images-idx3-ubyte")).copy())
    labels = torch.from_numpy(read_idx(find(args.data, "train-labels-idx1-ubyte")).astype(np.int64))
    x_all = ((images.float() / 255.0 - 0.1307) / 0.3081).unsqueeze(1).contiguous()

    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256),
                          nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                          nn.Linear(64, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    n = x_all.shape[0]
    batches = (n + 63) // 64
    print(f"torch {torch.__version__}: seed 000 MLP, batch 64, {batches} batches/epoch, "
          f"{torch.get_num_threads()} threads, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}")
    times = []
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        perm = torch.randperm(n)
        for i in range(batches):
            idx = perm[i * 64:(i + 1) * 64]
            x, y = x_all[idx], labels[idx]
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        s = time.perf_counter() - t0
        times.append(s)
        print(f"epoch {epoch}: {s:.3f} s ({batches / s:.1f} batches/s), last loss {loss.item():.3f}")
    times.sort()
    print(f"median epoch: {times[len(times) // 2]:.3f} s")


if __name__ == "__main__":
    main()
