#!/usr/bin/env python3
"""PyTorch side of bench/bench_train: the three example models' training steps, split into phases.

The same models, losses, optimizers, batches and loop as ember's bench_train:
  mnist_mlp     seed 000's FullyNeuralNetwork 784-512-256-128-64-10, cross-entropy,
                SGD(lr=0.1, momentum=0.5), batch 64, 60,000 training images 1x28x28
  cifar10_cnn   seed 001's Net (conv 3->6, pool, conv 6->16, pool, fc 120-84-10), cross-entropy,
                SGD(lr=0.001, momentum=0.9), batch 4 (the tutorial's) and 64, 50,000 images 3x32x32
  cats_vs_dogs  seed 002's Net (conv 1->32->64->128, fc 512-2, softmax), MSE against one-hot
                labels, Adam(lr=1e-3), batch 100, 22,452 images 1x50x50
on synthetic data of the real sets' shapes, in host memory, normalized as the examples' transforms
leave it (--mnist-data / --cifar-data read the real IDX / CIFAR-10 binary files instead).

A step, in four phases, as in ember:
  data       x_all[idx], y_all[idx] for a shuffled idx (and on CUDA .pin_memory() and
             .to(device, non_blocking=True))
  forward    model(x) and the loss
  backward   loss.backward()
  optimizer  optimizer.step() and optimizer.zero_grad(set_to_none=True) (ember's default)
Each run is warm-up steps, then --repeats runs of --steps steps (--steps 0: enough for --min-time
seconds, at least 20); steps/s is the median run. The split run calls torch.cuda.synchronize() at
every phase boundary on the GPU (extra waits that make it slower than real training); on CUDA
steps/s and epoch s come from a second run without them, as in ember. "epoch s" is extrapolated:
(training-set size / batch) steps at the measured rate, not a timed pass.

On the GPU: cuDNN picks its fastest algorithms (cudnn.benchmark = True); TF32 is off for matmuls
and convolutions, as in ember, unless --tf32. --compile (torch.compile, PyTorch 2) and
--cuda-graphs (the whole step - forward, backward, optimizer - captured once and replayed, with
the batch copied into static input tensors) add Table 3, unsplit steps/s only; they are what
PyTorch offers against per-op launch overhead, which dominates these small models. Before timing
on CUDA, one forward and backward is checked against a CPU copy of the same weights (loss within
1e-5 + 1e-4 |cpu|, gradients within 1e-3 max|g| + 1e-3 |g|). PyTorch is the reference, so a
difference is printed as a NOTE and the numbers stay: its cuDNN may choose FFT or Winograd
algorithms whose float32 error exceeds that tolerance (seen on an H200 for cats_vs_dogs), and those
are what its users run.

    /usr/bin/python3 bench/pytorch/bench_train.py --device cpu --threads 2
    python3 bench/pytorch/bench_train.py --device cuda --compile --cuda-graphs --json train.json

--json writes the harness's format: {"bench", "header", "tables": [{"title", "columns", "rows"}]}.
"""
import argparse
import datetime
import gzip
import json
import math
import os
import platform
import statistics
import struct
import sys
import tempfile
import time



def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return line.split()
    except OSError:
        pass
    return []


def _set_thread_environment():
    """Read by libgomp and OpenBLAS when torch loads them, so set before the import: the settings
    under which Debian's CPU torch ran fastest here (bench/RESULTS.md, MNIST MLP epoch). An
    explicit environment wins. OpenBLAS does not recognise every AVX-512 CPU; SkylakeX names its
    AVX-512 kernels (only set where the CPU has AVX-512)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--threads", type=int, default=0)
    threads = pre.parse_known_args()[0].threads
    if threads > 0:
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if "avx512f" in _cpu_flags():
        os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")


_set_thread_environment()

import torch  # noqa: E402  (after the environment is set)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CONFIGS = [("mnist_mlp", 64), ("cifar10_cnn", 4), ("cifar10_cnn", 64), ("cats_vs_dogs", 100)]
MAIN_TITLE = "Table 1: training steps, steps/s and the split of a step's wall time"
SPLIT_TITLE = "Table 2: the split run (synchronized at each phase boundary), ms per step"
FAST_TITLE = "Table 3: PyTorch's faster GPU modes (unsplit run), steps/s"


# ---- the models, layer for layer as the seeds (and examples/common/models.h) define them -------

class FullyNeuralNetwork(nn.Module):
    """Seed 000."""

    def __init__(self):
        super().__init__()
        self.layer_1 = nn.Linear(784, 512)
        self.layer_2 = nn.Linear(512, 256)
        self.layer_3 = nn.Linear(256, 128)
        self.layer_4 = nn.Linear(128, 64)
        self.layer_5 = nn.Linear(64, 10)

    def forward(self, data):
        x = data.reshape(-1, 784)
        x = F.relu(self.layer_1(x))
        x = F.relu(self.layer_2(x))
        x = F.relu(self.layer_3(x))
        x = F.relu(self.layer_4(x))
        return self.layer_5(x)


class CifarNet(nn.Module):
    """Seed 001 (the tutorial's Net)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class CatsNet(nn.Module):
    """Seed 002 (50x50 grayscale; the flattened size found with a dummy image, as the seed)."""

    def __init__(self, image_size=50):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        self.conv3 = nn.Conv2d(64, 128, 5)
        with torch.no_grad():
            x = torch.randn(image_size, image_size).view(-1, 1, image_size, image_size)
            self._to_linear = self.convs(x)[0].numel()
        self.fc1 = nn.Linear(self._to_linear, 512)
        self.fc2 = nn.Linear(512, 2)

    def convs(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv3(x)), (2, 2))
        return x

    def forward(self, x):
        x = self.convs(x)
        x = x.view(-1, self._to_linear)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.softmax(x, dim=1)


def make_trainer(model_name, device, seed, capturable=False):
    """(model, criterion, optimizer) as the example sets them, weights from `seed`."""
    torch.manual_seed(seed)
    if model_name == "mnist_mlp":
        model, criterion = FullyNeuralNetwork(), nn.CrossEntropyLoss()
    elif model_name == "cifar10_cnn":
        model, criterion = CifarNet(), nn.CrossEntropyLoss()
    else:
        model, criterion = CatsNet(), nn.MSELoss()
    model.to(device).train()
    if model_name == "cats_vs_dogs":
        kwargs = {"capturable": True} if capturable else {}
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, **kwargs)
    elif model_name == "mnist_mlp":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    return model, criterion, optimizer


# ---- the training sets ------------------------------------------------------------------------

def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).view(*dims)


def find_file(root, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(root, name)):
            return os.path.join(root, name)
    raise FileNotFoundError(os.path.join(root, stem) + "[.gz]")


def training_set(model_name, seed, mnist_dir=None, cifar_dir=None):
    """(inputs float32 [N, C, H, W], targets, source) in host memory."""
    g = torch.Generator().manual_seed(seed)
    if model_name == "mnist_mlp":
        if mnist_dir:
            images = read_idx(find_file(mnist_dir, "train-images-idx3-ubyte"))
            labels = read_idx(find_file(mnist_dir, "train-labels-idx1-ubyte")).long()
            x = ((images.float() / 255.0 - 0.1307) / 0.3081).unsqueeze(1).contiguous()
            return x, labels, mnist_dir
        return (torch.randn(60000, 1, 28, 28, generator=g),
                torch.randint(0, 10, (60000,), generator=g), "synthetic")
    if model_name == "cifar10_cnn":
        if cifar_dir:
            if os.path.isdir(os.path.join(cifar_dir, "cifar-10-batches-bin")):
                cifar_dir = os.path.join(cifar_dir, "cifar-10-batches-bin")
            records = []
            for i in range(1, 6):
                with open(os.path.join(cifar_dir, f"data_batch_{i}.bin"), "rb") as f:
                    records.append(torch.frombuffer(bytearray(f.read()), dtype=torch.uint8))
            raw = torch.cat(records).view(-1, 1 + 3 * 32 * 32)
            x = (raw[:, 1:].float().view(-1, 3, 32, 32) / 255.0 - 0.5) / 0.5
            return x.contiguous(), raw[:, 0].long(), cifar_dir
        return (torch.rand(50000, 3, 32, 32, generator=g) * 2 - 1,
                torch.randint(0, 10, (50000,), generator=g), "synthetic")
    labels = torch.randint(0, 2, (22452,), generator=g)
    return torch.rand(22452, 1, 50, 50, generator=g), torch.eye(2)[labels], "synthetic"


class BatchSource:
    """Full batches in a new shuffled order every epoch, gathered by index, moved to device."""

    def __init__(self, x_all, y_all, batch, device, seed):
        self.x_all, self.y_all, self.batch, self.device = x_all, y_all, batch, device
        self.gen = torch.Generator().manual_seed(seed)
        self.order, self.pos = None, 0

    def next(self):
        n = self.x_all.shape[0]
        if self.order is None or self.pos + self.batch > n:
            self.order, self.pos = torch.randperm(n, generator=self.gen), 0
        idx = self.order[self.pos:self.pos + self.batch]
        self.pos += self.batch
        x, y = self.x_all[idx], self.y_all[idx]
        if self.device.type == "cuda":
            x = x.pin_memory().to(self.device, non_blocking=True)
            y = y.pin_memory().to(self.device, non_blocking=True)
        return x, y


# ---- timing ---------------------------------------------------------------------------------

def run_steps(model, criterion, optimizer, source, steps, device, split):
    """Wall seconds of `steps` steps; with split (a dict), synchronizes at each phase boundary
    and adds each phase's seconds to it. Returns (seconds, last loss tensor)."""
    cuda = device.type == "cuda"

    def wait():
        if cuda:
            torch.cuda.synchronize(device)

    wait()
    start = time.perf_counter()
    loss = None
    for _ in range(steps):
        if split is not None:
            t0 = time.perf_counter()
        x, y = source.next()
        if split is not None:
            wait()
            t1 = time.perf_counter()
        loss = criterion(model(x), y)
        if split is not None:
            wait()
            t2 = time.perf_counter()
        loss.backward()
        if split is not None:
            wait()
            t3 = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if split is not None:
            wait()
            t4 = time.perf_counter()
            split["data"] += t1 - t0
            split["forward"] += t2 - t1
            split["backward"] += t3 - t2
            split["optimizer"] += t4 - t3
    wait()
    return time.perf_counter() - start, loss


def steps_for(args, warm_seconds, warm_steps):
    if args.steps > 0:
        return args.steps
    return max(20, math.ceil(args.min_time * warm_steps / warm_seconds))


def check_against_cpu(model_name, x_all, y_all, batch, device, seed):
    """'' when one forward and backward on device matches a CPU copy, else what differs."""
    cpu_model, cpu_crit, _ = make_trainer(model_name, torch.device("cpu"), seed)
    dev_model, dev_crit, _ = make_trainer(model_name, device, seed)
    idx = torch.randperm(x_all.shape[0], generator=torch.Generator().manual_seed(seed))[:batch]
    x, y = x_all[idx], y_all[idx]
    lc = cpu_crit(cpu_model(x), y)
    ld = dev_crit(dev_model(x.to(device)), y.to(device))
    lc.backward()
    ld.backward()
    if not abs(ld.item() - lc.item()) <= 1e-5 + 1e-4 * abs(lc.item()):
        return f"loss {ld.item()} on {device}, {lc.item()} on cpu"
    for (name, pc), pd in zip(cpu_model.named_parameters(), dev_model.parameters()):
        gc, gd = pc.grad, pd.grad.cpu()
        tol = 1e-3 * gc.abs().max() + 1e-3 * gc.abs()
        bad = ((gd - gc).abs() > tol).nonzero()
        if bad.numel():
            i = tuple(bad[0].tolist())
            return f"gradient of {name}{list(i)}: {gd[i].item()} on {device}, {gc[i].item()} on cpu"
    return ""


def measure(args, model_name, batch, x_all, y_all, device):
    """dict with steps_per_s (headline), split_steps_per_s, per-step seconds per phase, steps,
    or {'fail': why}."""
    check = ""
    if device.type == "cuda":
        # PyTorch is the reference here, so a difference does not hide its numbers: its cuDNN
        # may pick algorithms (FFT, Winograd) whose float32 error exceeds the tolerance, and that
        # is what its users get. The table says so next to the numbers.
        check = check_against_cpu(model_name, x_all, y_all, batch, device, args.seed)
        if check:
            print(f"NOTE {model_name} {device.type} batch {batch}: the GPU's forward and backward "
                  f"differ from the CPU's beyond the tolerance ({check}); timed anyway")
    model, criterion, optimizer = make_trainer(model_name, device, args.seed)
    source = BatchSource(x_all, y_all, batch, device, args.seed)
    warm = max(args.warmup, 1)
    phases = {"data": 0.0, "forward": 0.0, "backward": 0.0, "optimizer": 0.0}
    warm_s, _ = run_steps(model, criterion, optimizer, source, warm, device, dict(phases))
    steps = steps_for(args, warm_s, warm)
    split_rates, plain_rates = [], []
    loss = None
    for _ in range(args.repeats):
        s, loss = run_steps(model, criterion, optimizer, source, steps, device, phases)
        split_rates.append(steps / s)
        if device.type == "cuda":
            s, loss = run_steps(model, criterion, optimizer, source, steps, device, None)
            plain_rates.append(steps / s)
    total = steps * args.repeats
    per_step = {k: v / total for k, v in phases.items()}
    if not math.isfinite(loss.item()):
        return {"fail": f"the loss is {loss.item()} after the timed steps"}
    return {"steps_per_s": statistics.median(plain_rates or split_rates),
            "split_steps_per_s": statistics.median(split_rates), "per_step": per_step,
            "steps": steps, "check": check}


def measure_fast(args, model_name, batch, x_all, y_all, device, mode):
    """Unsplit steps/s with torch.compile or a CUDA graph of the whole step; or a reason string."""
    if mode == "compile":
        if not hasattr(torch, "compile"):
            return f"torch.compile needs PyTorch 2 (this is {torch.__version__})"
        model, criterion, optimizer = make_trainer(model_name, device, args.seed)
        compiled = torch.compile(model)
        source = BatchSource(x_all, y_all, batch, device, args.seed)
        warm = max(args.warmup, 3)  # the first steps compile
        warm_s, _ = run_steps(compiled, criterion, optimizer, source, warm, device, None)
        warm_s, _ = run_steps(compiled, criterion, optimizer, source, warm, device, None)
        steps = steps_for(args, warm_s, warm)
        rates = []
        for _ in range(args.repeats):
            s, loss = run_steps(compiled, criterion, optimizer, source, steps, device, None)
            rates.append(steps / s)
        return statistics.median(rates)

    # CUDA graphs: capture forward, backward and optimizer step once (PyTorch's "whole network
    # capture"); each step copies the batch into the static inputs and replays the graph.
    model, criterion, optimizer = make_trainer(model_name, device, args.seed, capturable=True)
    source = BatchSource(x_all, y_all, batch, device, args.seed)
    x0, y0 = source.next()
    static_x, static_y = x0.clone(), y0.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as capture requires
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            criterion(model(static_x), static_y).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = criterion(model(static_x), static_y)
        static_loss.backward()
        optimizer.step()

    def graph_steps(steps):
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        for _ in range(steps):
            x, y = source.next()
            static_x.copy_(x, non_blocking=True)
            static_y.copy_(y, non_blocking=True)
            graph.replay()
        torch.cuda.synchronize(device)
        return time.perf_counter() - start

    warm = max(args.warmup, 1)
    steps = steps_for(args, graph_steps(warm), warm)
    rates = [steps / graph_steps(steps) for _ in range(args.repeats)]
    if not math.isfinite(static_loss.item()):
        return f"the loss is {static_loss.item()} after the timed steps"
    return statistics.median(rates)


# ---- tables ---------------------------------------------------------------------------------

def looks_numeric(cell):
    try:
        float(cell)
        return True
    except ValueError:
        return False


def print_table(title, columns, rows):
    print(title)
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    right = [bool(rows) and all(looks_numeric(r[i]) or r[i] in ("-", "FAIL") for r in rows)
             for i in range(len(columns))]
    for cells in [columns] + rows:
        line = " " + "".join("  " + (c.rjust(w) if r else c.ljust(w))
                             for c, w, r in zip(cells, widths, right))
        print(line.rstrip())


def write_json(path, name, header, tables):
    """The harness's format, written atomically (temp file + rename)."""
    doc = {"bench": name, "header": header,
           "tables": [{"title": t, "columns": c, "rows": r} for t, c, r in tables]}
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".bench_train.", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def machine_header(threads, device_list, cuda_why):
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    lines = [f"  torch {torch.__version__}, Python {platform.python_version()}",
             f"  cpu: {cpu}, {os.cpu_count()} logical cores; threads: {threads}",
             "  env: " + " ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in
                                  ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_CORETYPE"))]
    if any(d.type == "cuda" for d in device_list):
        p = torch.cuda.get_device_properties(0)
        lines.append(f"  gpu 0: {p.name} (sm_{p.major}{p.minor}, {p.multi_processor_count} SMs, "
                     f"{p.total_memory / 2**30:.1f} GiB)")
        lines.append(f"  CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
                     f"TF32 {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}, "
                     f"cudnn.benchmark on")
    elif cuda_why:
        lines.append(f"  cuda: not measured ({cuda_why})")
    lines.append("  date: " + datetime.datetime.now(datetime.timezone.utc)
                 .strftime("%Y-%m-%d %H:%M:%S UTC"))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "both"],
                    help="default: both when a GPU is usable, else cpu")
    ap.add_argument("--model", default="",
                    help="comma-separated subset of mnist_mlp,cifar10_cnn,cats_vs_dogs")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    ap.add_argument("--steps", type=int, default=0, help="timed steps per run (0: --min-time)")
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds per run with --steps 0")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs; the median is reported")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mnist-data", default=None, help="MNIST-format IDX folder")
    ap.add_argument("--cifar-data", default=None, help="CIFAR-10 binary batches folder")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile (GPU)")
    ap.add_argument("--cuda-graphs", action="store_true", help="also time a CUDA graph (GPU)")
    ap.add_argument("--tf32", action="store_true", help="allow TF32 (off, as in ember)")
    ap.add_argument("--json", default=None, help="also write the tables to this JSON file")
    args = ap.parse_args()

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    cuda_ok = torch.cuda.is_available()
    cuda_why = "" if cuda_ok else f"torch {torch.__version__} sees no usable GPU"
    devices = []
    if args.device in ("cpu", "both", "auto"):
        devices.append(torch.device("cpu"))
    if args.device in ("cuda", "both") or (args.device == "auto" and cuda_ok):
        if not cuda_ok:
            sys.exit(f"bench_train.py: --device {args.device}: {cuda_why}")
        devices.append(torch.device("cuda", 0))
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
    wanted = [m for m in args.model.split(",") if m]
    configs = [c for c in CONFIGS if not wanted or c[0] in wanted]
    if not configs:
        sys.exit(f"bench_train.py: --model {args.model!r} names none of "
                 "mnist_mlp, cifar10_cnn, cats_vs_dogs")

    header = machine_header(torch.get_num_threads(), devices,
                            cuda_why if args.device == "auto" else "")
    print("PyTorch bench_train: training steps of the example models (eager)")
    print(header, end="")
    print(f"  method: {max(args.warmup, 1)} warm-up steps, then {args.repeats} runs of "
          f"{args.steps if args.steps > 0 else f'enough for {args.min_time:.1f} s (>= 20)'} "
          "steps; steps/s is the median run.\n"
          "  epoch s = (training-set size / batch) steps at that rate: extrapolated, not timed.\n"
          "  The split synchronizes the GPU at every phase boundary; on CUDA steps/s and epoch s\n"
          "  come from a second run without those syncs (table 2 shows both).\n")

    main_cols = ["model", "device", "threads", "batch", "steps/s", "epoch s", "data %", "forward %",
                 "backward %", "optimizer %"]
    split_cols = ["model", "device", "threads", "batch", "step ms", "data ms", "forward ms", "backward ms",
                  "optimizer ms", "steps/s synced", "steps/s unsynced", "steps x runs"]
    fast_cols = ["model", "device", "threads", "batch", "mode", "steps/s", "epoch s"]
    main_rows, split_rows, fast_rows = [], [], []
    modes = (["compile"] if args.compile else []) + (["cuda graphs"] if args.cuda_graphs else [])
    sets = {}
    for model_name, batch in configs:
        if model_name not in sets:
            t0 = time.perf_counter()
            sets[model_name] = training_set(model_name, args.seed, args.mnist_data,
                                            args.cifar_data)
            x_all, _, source = sets[model_name]
            print(f"data {model_name}: {source}, {x_all.shape[0]} samples of "
                  f"{list(x_all.shape[1:])} ({time.perf_counter() - t0:.1f} s to prepare)")
        x_all, y_all, _ = sets[model_name]
        if x_all.shape[0] < batch:
            print(f"  {model_name} batch {batch}: skipped, the training set has only "
                  f"{x_all.shape[0]} samples")
            continue
        epoch_steps = math.ceil(x_all.shape[0] / batch)
        for device in devices:
            key = [model_name, device.type, str(torch.get_num_threads()), str(batch)]
            r = measure(args, model_name, batch, x_all, y_all, device)
            if "fail" in r:
                print(f"FAIL {model_name} {device.type} batch {batch}: {r['fail']}")
                main_rows.append(key + ["FAIL", "FAIL", "-", "-", "-", "-"])
                split_rows.append(key + ["FAIL", "-", "-", "-", "-", "FAIL", "FAIL", "-"])
                continue
            p = r["per_step"]
            total = sum(p.values())
            main_rows.append(key + [f"{r['steps_per_s']:.1f}",
                                    f"{epoch_steps / r['steps_per_s']:.2f}"]
                             + [f"{100 * p[k] / total:.1f}"
                                for k in ("data", "forward", "backward", "optimizer")])
            split_rows.append(key + [f"{1e3 * total:.3f}"]
                              + [f"{1e3 * p[k]:.3f}"
                                 for k in ("data", "forward", "backward", "optimizer")]
                              + [f"{r['split_steps_per_s']:.1f}",
                                 f"{r['steps_per_s']:.1f}" if device.type == "cuda" else "-",
                                 f"{r['steps']} x {args.repeats}"])
            print(f"  {model_name} {device.type} batch {batch}: {r['steps_per_s']:.1f} steps/s",
                  flush=True)
            if device.type != "cuda":
                continue
            for mode in modes:
                try:
                    rate = measure_fast(args, model_name, batch, x_all, y_all, device, mode)
                except Exception as e:  # noqa: BLE001 - report and go on with the other rows
                    rate = f"{type(e).__name__}: {e}"
                if isinstance(rate, str):
                    print(f"  {model_name} {mode}: not measured ({rate})")
                    fast_rows.append(key + [mode, "-", "-"])
                else:
                    fast_rows.append(key + [mode, f"{rate:.1f}", f"{epoch_steps / rate:.2f}"])
    if modes and "cuda" not in [d.type for d in devices]:
        print(f"  --compile / --cuda-graphs: not measured (they need the GPU: {cuda_why})")

    tables = [(MAIN_TITLE, main_cols, main_rows), (SPLIT_TITLE, split_cols, split_rows)]
    if fast_rows:
        tables.append((FAST_TITLE, fast_cols, fast_rows))
    for t in tables:
        print()
        print_table(*t)
    if args.json:
        write_json(args.json, "bench_train", header, tables)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
