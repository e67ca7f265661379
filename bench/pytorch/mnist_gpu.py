#!/usr/bin/env python3
"""PyTorch on the GPU running seed 000: the reference for ember's `mnist_mlp --device cuda`.

The seed's model and loop exactly: FullyNeuralNetwork 784-512-256-128-64-10 with ReLU,
CrossEntropyLoss, SGD(lr=0.1, momentum=0.5), batch 64, 5 epochs, inputs normalized with mean
0.1307 and std 0.3081; Fashion-MNIST from its IDX files (same format and shapes as MNIST).

What differs from the seed is only how batches arrive: there is no DataLoader. The normalized
training and test sets are moved to the GPU once; each epoch draws a permutation on the GPU and
each batch is gathered from the resident data by index. The epoch time is then the training
itself, not PIL decoding and host-to-device copies.

    python3 bench/pytorch/mnist_gpu.py                  # eager PyTorch (the default)
    python3 bench/pytorch/mnist_gpu.py --compile        # torch.compile(model)
    python3 bench/pytorch/mnist_gpu.py --cuda-graphs    # one training step captured, replayed

Prints the seed's "[epoch, batch] loss" lines, then per epoch its training time (between
torch.cuda.synchronize() calls, without the test pass) and the test accuracy, and at the end the
median epoch time. TF32 is off unless --tf32 is given, as in ember. `--device cpu` runs the same
loop on the CPU (a smoke test of the script on a machine without a GPU).
"""
import argparse
import gzip
import os
import statistics
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as functional


def read_idx(path):
    """An IDX file (optionally gzipped) as a numpy array: magic, dims (big-endian), bytes."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(root, stem):
    for name in (stem, stem + ".gz"):
        path = os.path.join(root, name)
        if os.path.exists(path):
            return path
    sys.exit(f"mnist_gpu: {os.path.join(root, stem)}[.gz] not found (pass --data DIR)")


def load(root, prefix, device):
    """Images as float32 [N, 1, 28, 28], normalized as the seed's transform; labels int64 [N]."""
    images = torch.from_numpy(read_idx(find(root, f"{prefix}-images-idx3-ubyte")).copy())
    labels = torch.from_numpy(read_idx(find(root, f"{prefix}-labels-idx1-ubyte")).astype(np.int64))
    x = ((images.float() / 255.0 - 0.1307) / 0.3081).unsqueeze(1).contiguous()
    return x.to(device), labels.to(device)


class FullyNeuralNetwork(torch.nn.Module):
    """Seed 000's network, layer for layer."""

    def __init__(self):
        super().__init__()
        self.layer_1 = torch.nn.Linear(784, 512)  # 28 x 28 pixels
        self.layer_2 = torch.nn.Linear(512, 256)
        self.layer_3 = torch.nn.Linear(256, 128)
        self.layer_4 = torch.nn.Linear(128, 64)
        self.layer_5 = torch.nn.Linear(64, 10)

    def forward(self, data):
        x = data.view(-1, 784)
        x = functional.relu(self.layer_1(x))
        x = functional.relu(self.layer_2(x))
        x = functional.relu(self.layer_3(x))
        x = functional.relu(self.layer_4(x))
        return self.layer_5(x)


class Trainer:
    """One training step three ways. Every step adds its loss to `running` on the device, so
    the host waits for the GPU only when a loss line is printed."""

    def __init__(self, model, criterion, optimizer, x_all, y_all, batch_size):
        self.model, self.criterion, self.optimizer = model, criterion, optimizer
        self.x_all, self.y_all, self.batch_size = x_all, y_all, batch_size
        self.running = torch.zeros((), device=x_all.device)
        self.graph = None

    def eager_step(self, idx):
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.criterion(self.model(self.x_all[idx]), self.y_all[idx])
        loss.backward()
        self.optimizer.step()
        self.running += loss.detach()

    def capture(self):
        """Records one whole step (gather, forward, backward, SGD update, loss sum) in a CUDA
        graph that reads its batch indices from self.static_idx; replaying it costs one launch.

        PyTorch's recipe: a few eager warm-up steps on a side stream first, so that everything
        created lazily (momentum buffers, cuBLAS workspaces, the autograd graph's buffers) exists
        before capture. The warm-up changes the weights, so they are restored in place afterwards
        and the momentum buffers zeroed: the first replay then computes exactly the first SGD
        step (buf = 0.5 * 0 + g = g), and the run matches the eager one."""
        saved = [p.detach().clone() for p in self.model.parameters()]
        self.static_idx = torch.arange(self.batch_size, device=self.x_all.device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.eager_step(self.static_idx)
        torch.cuda.current_stream().wait_stream(side)

        self.graph = torch.cuda.CUDAGraph()
        self.optimizer.zero_grad(set_to_none=True)  # backward then writes .grad, not +=
        with torch.cuda.graph(self.graph):
            loss = self.criterion(self.model(self.x_all[self.static_idx]),
                                  self.y_all[self.static_idx])
            loss.backward()
            self.optimizer.step()
            self.running += loss.detach()

        with torch.no_grad():
            for p, s in zip(self.model.parameters(), saved):
                p.copy_(s)
            for state in self.optimizer.state.values():
                if state.get("momentum_buffer") is not None:
                    state["momentum_buffer"].zero_()
            self.running.zero_()
        torch.cuda.synchronize()

    def step(self, idx):
        if self.graph is not None and idx.numel() == self.batch_size:
            self.static_idx.copy_(idx)
            self.graph.replay()
        else:  # eager mode, and the last, shorter batch of an epoch in graph mode
            self.eager_step(idx)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def train(epoch, trainer, generator, log_interval, limit_batches):
    model = trainer.model
    model.train()
    n = trainer.x_all.shape[0]
    bs = trainer.batch_size
    perm = torch.randperm(n, device=trainer.x_all.device, generator=generator)
    batches = (n + bs - 1) // bs
    if limit_batches:
        batches = min(batches, limit_batches)
    for batch_idx in range(batches):
        trainer.step(perm[batch_idx * bs:(batch_idx + 1) * bs])
        if log_interval and batch_idx % log_interval == 0:
            # As the seed (and ember's mnist_mlp): the sum since the last line divided by the
            # interval, also at batch 0.
            loss = trainer.running.item() / log_interval
            print("[%d, %5d] loss: %.3f" % (epoch, batch_idx, loss))
            trainer.running.zero_()
    return batches


@torch.no_grad()
def test(model, x_test, y_test, chunk=1000):
    model.eval()
    correct = torch.zeros((), dtype=torch.int64, device=x_test.device)
    for start in range(0, x_test.shape[0], chunk):
        predicted = model(x_test[start:start + chunk]).argmax(dim=1)
        correct += (predicted == y_test[start:start + chunk]).sum()
    return 100.0 * correct.item() / x_test.shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                    help="folder with the four IDX files, plain or .gz (default: Debian's "
                         "dataset-fashion-mnist)")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu for a smoke test")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log-interval", type=int, default=300,
                    help="batches between loss lines (0: none)")
    ap.add_argument("--limit-batches", type=int, default=0,
                    help="stop each epoch after this many batches (0: all; for smoke tests)")
    ap.add_argument("--tf32", action="store_true", help="allow TF32 matmuls (off, as in ember)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--compile", action="store_true", help="run torch.compile(model)")
    mode.add_argument("--cuda-graphs", action="store_true",
                      help="capture one training step in a CUDA graph and replay it")
    ap.add_argument("--compile-mode", default="default",
                    choices=["default", "reduce-overhead", "max-autotune"],
                    help="torch.compile's mode (reduce-overhead also uses CUDA graphs)")
    args = ap.parse_args()

    device = torch.device(args.device)
    if device.type == "cuda" and device.index is None:
        # "cuda" names the current device; set_device and the CUDA-graph pool want its index.
        device = torch.device("cuda", torch.cuda.current_device() if torch.cuda.is_available() else 0)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("mnist_gpu: no CUDA device visible to PyTorch (use --device cpu for a smoke test)")
    if args.cuda_graphs and device.type != "cuda":
        sys.exit("mnist_gpu: --cuda-graphs needs a CUDA device")
    if args.compile and not hasattr(torch, "compile"):
        sys.exit(f"mnist_gpu: --compile needs PyTorch 2.0 or later (this is {torch.__version__})")
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
    torch.manual_seed(args.seed)

    t0 = time.perf_counter()
    x_train, y_train = load(args.data, "train", device)
    x_test, y_test = load(args.data, "t10k", device)
    sync(device)
    load_s = time.perf_counter() - t0

    model = FullyNeuralNetwork().to(device)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    run_model = torch.compile(model, mode=args.compile_mode) if args.compile else model
    trainer = Trainer(run_model, criterion, optimizer, x_train, y_train, args.batch_size)
    generator = torch.Generator(device=device)
    generator.manual_seed(args.seed)

    mode_name = ("torch.compile(mode=%s)" % args.compile_mode if args.compile
                 else "CUDA graph of the whole step" if args.cuda_graphs else "eager")
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"torch {torch.__version__} on {where}: seed 000 MLP, {mode_name}, batch "
          f"{args.batch_size}, TF32 {'on' if args.tf32 else 'off'}")
    print(f"data: {x_train.shape[0]} training and {x_test.shape[0]} test images resident on "
          f"{device} ({load_s:.2f} s to load)")
    if args.cuda_graphs:
        t0 = time.perf_counter()
        trainer.capture()
        print(f"captured one training step in a CUDA graph ({time.perf_counter() - t0:.2f} s)")

    times = []
    for epoch in range(args.epochs):
        sync(device)
        t0 = time.perf_counter()
        batches = train(epoch, trainer, generator, args.log_interval, args.limit_batches)
        sync(device)
        seconds = time.perf_counter() - t0
        times.append(seconds)
        accuracy = test(model, x_test, y_test)
        note = " (includes compilation)" if args.compile and epoch == 0 else ""
        print(f"epoch {epoch}: {seconds:.3f} s training ({batches / seconds:.0f} batches/s){note}, "
              f"test accuracy {accuracy:.2f} %")
        sys.stdout.flush()
    print(f"median epoch: {statistics.median(times):.3f} s over {len(times)} epochs")


if __name__ == "__main__":
    main()
