#!/usr/bin/env python3
"""PyTorch with cuDNN running seed 002: the reference for ember's `cats_vs_dogs --device cuda`.

The seed's model and loop exactly: Net = conv 1->32->64->128 (5x5, ReLU, 2x2 max-pool each),
fc 512->512 (ReLU), fc 512->2, softmax(dim=1); MSELoss against one-hot labels; Adam(lr=0.001);
batch 100; 5 epochs; 50x50 grayscale images scaled to 0..1; the last 10% held out for
validation. Like the seed, each epoch walks the (once shuffled) training set in order, in slices
of 100 (`--shuffle` draws a new order every epoch, as ember's DataLoader does).

The data is on the GPU before the clock starts, so an epoch is the training alone:
  * by default synthetic images of the real set's size (24,946 images -> 22,452 training, 2,494
    validation): stripes whose direction is the class, plus noise, so the loss does go down;
  * --data FILE.npy: the seed's training_data.npy (an object array of [image, one_hot] pairs);
  * --data FOLDER: a PetImages folder (Cat/, Dog/), decoded with PIL (grayscale, 50x50); files
    that do not decode are skipped, as the seed's try/except does.

cuDNN picks its fastest algorithms (torch.backends.cudnn.benchmark = True); TF32 is off, as in
ember, unless --tf32 (PyTorch's own default lets cuDNN use TF32 for convolutions).

Prints the seed's lines ("Epoch: 0. Loss: ...", "Accuracy:  0.71"), each epoch's training time
(between torch.cuda.synchronize() calls) and the median, then a table of per-layer convolution
times at the training batch size: forward, and backward (dX where the layer's input needs it, dW,
db), medians of CUDA-event timings, with cuDNN and with cuDNN disabled (PyTorch's own kernels).

    python3 bench/pytorch/cats_vs_dogs_gpu.py                     # on the GPU
    python3 bench/pytorch/cats_vs_dogs_gpu.py --data PetImages    # the real photos
    python3 bench/pytorch/cats_vs_dogs_gpu.py --device cpu --limit-batches 2 --epochs 1
        # a smoke test of the script on a machine without a GPU (--threads N for PyTorch's
        # CPU threads)
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

IMG_SIZE = 50
REAL_SET_SIZE = 24946  # the seed's count of decodable photos (12476 cats + 12470 dogs)


class Net(nn.Module):
    """Seed 002's network, layer for layer."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        self.conv3 = nn.Conv2d(64, 128, 5)
        x = torch.randn(IMG_SIZE, IMG_SIZE).view(-1, 1, IMG_SIZE, IMG_SIZE)
        self._to_linear = None
        self.convs(x)
        self.fc1 = nn.Linear(self._to_linear, 512)
        self.fc2 = nn.Linear(512, 2)

    def convs(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv3(x)), (2, 2))
        if self._to_linear is None:
            self._to_linear = x[0].shape[0] * x[0].shape[1] * x[0].shape[2]
        return x

    def forward(self, x):
        x = self.convs(x)
        x = x.view(-1, self._to_linear)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.softmax(x, dim=1)


def synthetic(n, seed):
    """n images [n, 50, 50] in 0..1 and one-hot labels [n, 2]: horizontal stripes for class 0,
    vertical for class 1, random period and phase, plus noise."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (n,), generator=g)
    period = 6 + 8 * torch.rand(n, 1, 1, generator=g)
    phase = 2 * np.pi * torch.rand(n, 1, 1, generator=g)
    coord = torch.arange(IMG_SIZE, dtype=torch.float32)
    rows = coord.view(1, IMG_SIZE, 1).expand(n, IMG_SIZE, IMG_SIZE)
    cols = coord.view(1, 1, IMG_SIZE).expand(n, IMG_SIZE, IMG_SIZE)
    along = torch.where(labels.view(n, 1, 1) == 0, rows, cols)
    x = 0.5 + 0.25 * torch.sin(2 * np.pi * along / period + phase)
    x = (x + 0.15 * torch.randn(n, IMG_SIZE, IMG_SIZE, generator=g)).clamp(0, 1)
    return x, torch.eye(2)[labels]


def from_npy(path):
    """The seed's training_data.npy: an object array of [image uint8 50x50, one-hot] pairs."""
    data = np.load(path, allow_pickle=True)
    x = torch.tensor(np.stack([d[0] for d in data]), dtype=torch.float32) / 255.0
    y = torch.tensor(np.stack([d[1] for d in data]), dtype=torch.float32)
    return x.view(-1, IMG_SIZE, IMG_SIZE), y


def from_folder(root, seed):
    """PetImages/Cat and PetImages/Dog (class folders sorted to labels), shuffled with seed."""
    from PIL import Image  # only this path needs PIL

    classes = sorted(d for d in os.listdir(root)
                     if os.path.isdir(os.path.join(root, d)) and not d.startswith("."))
    images, labels = [], []
    for label, cls in enumerate(classes):
        folder = os.path.join(root, cls)
        count = 0
        for name in sorted(os.listdir(folder)):
            try:
                with Image.open(os.path.join(folder, name)) as im:
                    im = im.convert("L").resize((IMG_SIZE, IMG_SIZE), Image.BILINEAR)
                    images.append(np.asarray(im, dtype=np.uint8))
                labels.append(label)
                count += 1
            except Exception:  # noqa: BLE001 - the seed skips whatever fails to decode
                pass
        print(f"{cls}: {count}")
    order = np.random.default_rng(seed).permutation(len(images))
    x = torch.tensor(np.stack(images)[order], dtype=torch.float32) / 255.0
    y = torch.eye(len(classes))[torch.tensor(labels)[order]]
    return x, y


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_epoch(net, optimizer, loss_function, train_X, train_y, batch_size, order, limit):
    """One pass in slices of batch_size, as the seed's loop. Returns (last loss tensor, the sum
    of the losses on the device, batches)."""
    net.train()
    total = torch.zeros((), device=train_X.device)
    loss = None
    batches = 0
    for i in range(0, len(train_X), batch_size):
        if limit and batches == limit:
            break
        if order is None:
            batch_X = train_X[i:i + batch_size].view(-1, 1, IMG_SIZE, IMG_SIZE)
            batch_y = train_y[i:i + batch_size]
        else:
            idx = order[i:i + batch_size]
            batch_X = train_X[idx].view(-1, 1, IMG_SIZE, IMG_SIZE)
            batch_y = train_y[idx]
        net.zero_grad()
        optimizer.zero_grad()
        outputs = net(batch_X)
        loss = loss_function(outputs, batch_y)
        loss.backward()
        optimizer.step()
        total += loss.detach()
        batches += 1
    return loss, total, batches


@torch.no_grad()
def test(net, test_X, test_y, chunk=500):
    """The seed's accuracy (argmax of the output vs argmax of the one-hot label), in batches."""
    net.eval()
    correct = torch.zeros((), dtype=torch.int64, device=test_X.device)
    for start in range(0, len(test_X), chunk):
        out = net(test_X[start:start + chunk].view(-1, 1, IMG_SIZE, IMG_SIZE))
        correct += (out.argmax(dim=1) == test_y[start:start + chunk].argmax(dim=1)).sum()
    return correct.item() / max(1, len(test_X))


def time_ms(fn, device, warmup, iters, setup=lambda: None):
    """Median milliseconds of fn(setup()), the setup outside the timed region: CUDA events on a
    GPU, perf_counter on the CPU."""
    for _ in range(warmup):
        fn(setup())
    times = []
    for _ in range(iters):
        state = setup()
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(state)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn(state)
            times.append(1000.0 * (time.perf_counter() - t0))
    return statistics.median(times)


def conv_layer_times(net, batch_size, device, warmup, iters):
    """Forward and backward of each conv layer alone, on inputs of the shape it sees in
    training. conv1's input is the data, which needs no gradient: its backward is dW and db only,
    as in training; conv2 and conv3 also compute dX. Returns rows (name, input shape, weight
    shape, output shape, forward ms, backward ms)."""
    rows = []
    x = torch.rand(batch_size, 1, IMG_SIZE, IMG_SIZE, device=device)
    for name in ("conv1", "conv2", "conv3"):
        conv = getattr(net, name)
        inp = x.detach().requires_grad_(name != "conv1")
        wrt = [t for t in (inp, conv.weight, conv.bias) if t.requires_grad]
        with torch.no_grad():
            out_shape = conv(inp).shape
        grad = torch.randn(out_shape, device=device)

        def forward(_):
            with torch.no_grad():
                conv(inp)

        def backward(out):
            torch.autograd.grad(out, wrt, grad)

        fwd = time_ms(forward, device, warmup, iters)
        # Each backward needs a fresh graph: the forward that records it runs untimed.
        bwd = time_ms(backward, device, warmup, iters, setup=lambda: conv(inp))
        rows.append((name, tuple(inp.shape), tuple(conv.weight.shape), tuple(out_shape), fwd, bwd))
        with torch.no_grad():
            x = F.max_pool2d(F.relu(conv(inp)), (2, 2))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="",
                    help="the seed's training_data.npy, or a PetImages folder (default: "
                         "synthetic images of the real set's size)")
    ap.add_argument("--samples", type=int, default=REAL_SET_SIZE,
                    help="synthetic images to make (default: the real set's 24946)")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu for a smoke test")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shuffle", action="store_true",
                    help="a new sample order every epoch (ember's DataLoader); default: the "
                         "seed's fixed order")
    ap.add_argument("--limit-batches", type=int, default=0,
                    help="stop each epoch after this many batches (0: all; for smoke tests)")
    ap.add_argument("--tf32", action="store_true",
                    help="let cuDNN and cuBLAS use TF32 (off, as in ember)")
    ap.add_argument("--no-benchmark", action="store_true",
                    help="leave torch.backends.cudnn.benchmark off")
    ap.add_argument("--threads", type=int, default=0,
                    help="CPU threads for PyTorch (torch.set_num_threads; 0: its default)")
    ap.add_argument("--layer-iters", type=int, default=50,
                    help="timed repetitions per conv layer (0: skip the per-layer table)")
    args = ap.parse_args()

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit("cats_vs_dogs_gpu: no CUDA device visible to PyTorch (use --device cpu for a "
                 "smoke test)")
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.backends.cudnn.enabled = True
        torch.backends.cudnn.benchmark = not args.no_benchmark
        torch.backends.cudnn.allow_tf32 = args.tf32
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    t0 = time.perf_counter()
    if not args.data:
        X, y = synthetic(args.samples, args.seed)
        source = f"synthetic stripes, {len(X)} images"
    elif os.path.isdir(args.data):
        X, y = from_folder(args.data, args.seed)
        source = f"{args.data}, {len(X)} images"
    else:
        X, y = from_npy(args.data)
        source = f"{args.data}, {len(X)} images"
    VAL_PCT = 0.1  # the seed's 10% for validation
    val_size = int(len(X) * VAL_PCT)
    train_X, train_y = X[:-val_size].to(device), y[:-val_size].to(device)
    test_X, test_y = X[-val_size:].to(device), y[-val_size:].to(device)
    sync(device)
    load_s = time.perf_counter() - t0

    net = Net().to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    loss_function = nn.MSELoss()
    if device.type == "cuda":
        where = torch.cuda.get_device_name(device)
        cudnn = f"cuDNN {torch.backends.cudnn.version()}, benchmark " \
                f"{'on' if torch.backends.cudnn.benchmark else 'off'}"
    else:
        where, cudnn = f"CPU ({torch.get_num_threads()} threads)", "no cuDNN"
    print(f"torch {torch.__version__} on {where}, {cudnn}, TF32 {'on' if args.tf32 else 'off'}")
    print(f"data: {source} ({len(train_X)} training, {len(test_X)} validation) on {device}, "
          f"{load_s:.2f} s to prepare")
    print(net)

    generator = torch.Generator(device=device)
    generator.manual_seed(args.seed)
    times = []
    for epoch in range(args.epochs):
        order = (torch.randperm(len(train_X), device=device, generator=generator)
                 if args.shuffle else None)
        sync(device)
        t0 = time.perf_counter()
        loss, total, batches = train_epoch(net, optimizer, loss_function, train_X, train_y,
                                           args.batch_size, order, args.limit_batches)
        sync(device)
        seconds = time.perf_counter() - t0
        times.append(seconds)
        print(f"Epoch: {epoch}. Loss: {loss}")
        print(f"  epoch {epoch}: mean loss {total.item() / max(1, batches):.4f}, {seconds:.3f} s "
              f"({batches} batches, {batches * args.batch_size / seconds:.0f} images/s)")
        sys.stdout.flush()
    print("Accuracy: ", round(test(net, test_X, test_y), 3))
    print(f"median epoch: {statistics.median(times):.3f} s over {len(times)} epochs")

    if args.layer_iters > 0:
        warmup = max(3, args.layer_iters // 5)
        print(f"\nper-layer conv times at batch {args.batch_size}, ms (median of "
              f"{args.layer_iters}; backward = dX (conv2, conv3) + dW + db)")
        variants = [("cuDNN", True)] if device.type == "cuda" else [("CPU", True)]
        if device.type == "cuda":
            variants.append(("no cuDNN", False))
        header = f"  {'layer':6} {'input':>18} {'weight':>18} {'output':>18}"
        for label, _ in variants:
            header += f" {label + ' fwd':>13} {label + ' bwd':>13}"
        print(header)
        results = []
        for _, enabled in variants:
            torch.backends.cudnn.enabled = enabled
            results.append(conv_layer_times(net, args.batch_size, device, warmup,
                                            args.layer_iters))
        torch.backends.cudnn.enabled = True
        for i, (name, shp_in, shp_w, shp_out, _, _) in enumerate(results[0]):
            line = f"  {name:6} {str(list(shp_in)):>18} {str(list(shp_w)):>18} " \
                   f"{str(list(shp_out)):>18}"
            for rows in results:
                line += f" {rows[i][4]:13.4f} {rows[i][5]:13.4f}"
            print(line)


if __name__ == "__main__":
    main()
