"""The PyTorch column for bench/bench_gemm.cu: torch.matmul in FP32 and TF32 at the same shapes.

    python3 bench/pytorch/bench_gemm.py [--sizes 1024 2048 4096 8192] [--shapes all|squares|mnist]
                                        [--quick] [--json FILE] [--device cuda|cpu]

The shapes are bench_gemm's: squares M = N = K (--sizes) and the 15 GEMMs of one step of the
MNIST MLP (batch 64, 784-512-256-128-64-10: per layer X @ W^T, dX = dY @ W, dW^T = X^T @ dY,
every operand a contiguous row-major matrix). Inputs are uniform in [-1, 1).

On a GPU torch.matmul calls cuBLAS, so its two rows are the same "kernel 0" that bench_gemm puts
at the top of each table: FP32 (torch.backends.cuda.matmul.allow_tf32 = False) and TF32 (= True).
Timing as in bench/harness.h: CUDA events around each run, the L2 cache flushed (a buffer of twice
its size written) before every run outside the timed region, warm-up first, the median of 5-20
runs (3-5 with --quick). The FP32 result is checked against a float64 product at 256 sampled
entries and the TF32 result against the FP32 one, with bench_gemm's tolerance
|got - ref| <= rtol * (|ref| + sqrt(K)) (rtol 1e-4 for FP32, 5e-3 for TF32).

--device cpu runs the same table with torch.matmul on the CPU (wall time, no TF32 row): it is
there to prove the script on a machine without a GPU (Debian's torch 1.13 here), and its default
sizes are 512 and 1024 (256 with --quick), since 8192^3 takes minutes on a few cores.
"""
import argparse
import datetime
import json
import math
import os
import platform
import statistics
import time

import torch

RTOL_FP32 = 1e-4
RTOL_TF32 = 5e-3


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+",
                   help="square sizes (default 1024 2048 4096 8192; --quick 1024 2048; "
                        "--device cpu: 512 1024, --quick 256)")
    p.add_argument("--shapes", choices=["all", "squares", "mnist"], default="all")
    p.add_argument("--quick", action="store_true", help="fewer timed runs, smaller default sizes")
    p.add_argument("--json", help="also write the tables to this JSON file")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads for --device cpu")
    return p.parse_args()


def mnist_shapes():
    widths = [784, 512, 256, 128, 64, 10]
    shapes = []
    for layer in range(5):
        n_in, n_out = widths[layer], widths[layer + 1]
        name = "L%d" % (layer + 1)
        shapes.append((name + " forward Y = X W^T", 64, n_out, n_in))
        shapes.append((name + " grad input dX = dY W", 64, n_in, n_out))
        shapes.append((name + " grad weight dW^T = X^T dY", n_in, n_out, 64))
    return shapes  # (what, M, N, K)


# ---- timing ---------------------------------------------------------------------------------

class CudaTimer:
    """CUDA events around each run; an L2 flush before each run, outside the events."""

    def __init__(self, device):
        props = torch.cuda.get_device_properties(device)
        l2 = getattr(props, "L2_cache_size", 0) or 64 << 20  # torch 1.13 does not report it
        self.flush = torch.empty(max(2 * l2, 1 << 20) // 4, dtype=torch.float32, device=device)

    def __call__(self, fn, warmup, runs):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for r in range(runs):
            self.flush.fill_(float(r))
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        return times


def host_timer(fn, warmup, runs):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def time_kernel(timer, fn, quick):
    """One probe run sizes the measurement, as bench_gemm does: ~2 s (0.3 s quick) of runs."""
    probe = timer(fn, 0, 1)[0]
    budget = 300.0 if quick else 2000.0
    lo, hi = (3, 5) if quick else (5, 20)
    runs = min(max(int(budget / max(probe, 1e-3)), lo), hi)
    warmup = 1 if probe > 100.0 else 3
    return statistics.median(timer(fn, warmup, runs))


# ---- checking -------------------------------------------------------------------------------

def worst_ratio(got, ref, k, rtol):
    """max |got - ref| / (rtol * (|ref| + sqrt(K))); <= 1 passes, nan (never written) fails."""
    got, ref = got.double(), ref.double()
    tol = rtol * (ref.abs() + math.sqrt(max(k, 1)))
    r = ((got - ref).abs() / tol).max().item()
    return float("inf") if math.isnan(r) else r


def check_cell(r, versus):
    return "%s (%.3f) vs %s" % ("ok" if r <= 1.0 else "FAIL", r, versus)


def sampled_reference_ratio(a, b, c, k, samples=256):
    g = torch.Generator().manual_seed(12345)
    rows = torch.randint(0, a.shape[0], (samples,), generator=g)
    cols = torch.randint(0, b.shape[1], (samples,), generator=g)
    a64, b64 = a.cpu().double(), b.cpu().double()
    ref = (a64[rows] * b64[:, cols].t()).sum(dim=1)
    return worst_ratio(c.cpu()[rows, cols], ref, k, RTOL_FP32)


# ---- tables ---------------------------------------------------------------------------------

def print_table(title, columns, rows):
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c)
              for i, c in enumerate(columns)]
    numeric = [all(_looks_numeric(r[i]) for r in rows) and bool(rows) for i in range(len(columns))]
    print(title)
    for cells in [columns] + rows:
        out = ""
        for i, cell in enumerate(cells):
            out += "  " + (cell.rjust(widths[i]) if numeric[i] else cell.ljust(widths[i]))
        print(out.rstrip())


def _looks_numeric(s):
    if s in ("", "-", "n/a", "FAIL"):
        return True
    return any(ch.isdigit() for ch in s) and all(ch in "0123456789.-+%xe " for ch in s)


def fmt(v, digits):
    return "%.*f" % (digits, v)


def header_lines(device):
    lines = []
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        lines.append("  gpu 0: %s (sm_%d%d, %d SMs), %.1f GiB" % (
            p.name, p.major, p.minor, p.multi_processor_count, p.total_memory / 2**30))
        lines.append("  torch %s, CUDA %s, cuBLAS via torch.matmul" % (torch.__version__, torch.version.cuda))
    else:
        model = platform.processor() or "unknown CPU"
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        model = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        lines.append("  cpu: %s, %d logical cores; threads: %d" % (model, os.cpu_count() or 0,
                                                                     torch.get_num_threads()))
        lines.append("  torch %s" % torch.__version__)
    lines.append("  date: %s" % datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"))
    return "\n".join(lines) + "\n"


# ---- one shape ------------------------------------------------------------------------------

COLUMNS = ["kernel", "ms", "GFLOP/s", "% cuBLAS FP32", "% cuBLAS TF32", "check (err/tol)"]


def run_shape(what, m, n, k, device, timer, quick):
    flops = 2.0 * m * n * k
    title = "[%d,%d] @ [%d,%d]  %s  (%.2f GFLOP)" % (m, k, k, n, what, flops / 1e9)
    g = torch.Generator().manual_seed(2024)
    a = (torch.rand(m, k, generator=g) * 2 - 1).to(device)
    b = (torch.rand(k, n, generator=g) * 2 - 1).to(device)
    rows = []
    gflops = lambda ms: fmt(flops / (ms * 1e6), 0)  # noqa: E731

    def matmul_fp32():
        return torch.matmul(a, b)

    cuda = device == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
    c32 = matmul_fp32()
    r32 = sampled_reference_ratio(a, b, c32, k)
    if r32 > 1.0:
        rows.append(["torch.matmul FP32", "FAIL", "-", "-", "-", check_cell(r32, "float64")])
        return title, rows, True
    ms32 = time_kernel(timer, matmul_fp32, quick)
    # On the CPU there is no cuBLAS: the percentage columns stay empty.
    rows.append(["torch.matmul FP32", fmt(ms32, 4), gflops(ms32), "100.0" if cuda else "-", "-",
                 check_cell(r32, "float64")])
    if not cuda:
        rows.append(["torch.matmul TF32", "needs CUDA", "-", "-", "-", "-"])
        return title, rows, False
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        ctf = matmul_fp32()
        rtf = worst_ratio(ctf, c32, k, RTOL_TF32)
        if rtf > 1.0:
            rows.append(["torch.matmul TF32", "FAIL", "-", "-", "-", check_cell(rtf, "FP32")])
            return title, rows, True
        mstf = time_kernel(timer, matmul_fp32, quick)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
    rows.append(["torch.matmul TF32", fmt(mstf, 4), gflops(mstf), fmt(100.0 * ms32 / mstf, 1),
                 "100.0", check_cell(rtf, "FP32")])
    return title, rows, False


def main():
    args = parse_args()
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        print("bench_gemm.py: no CUDA device visible to torch %s: nothing to time on the GPU "
              "(use --device cpu to run the CPU version)" % torch.__version__)
        return 0
    if device == "cpu" and args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.sizes:
        sizes = args.sizes
    elif device == "cpu":
        sizes = [256] if args.quick else [512, 1024]
    else:
        sizes = [1024, 2048] if args.quick else [1024, 2048, 4096, 8192]

    header = header_lines(device)
    print("PyTorch bench_gemm.py: torch.matmul, row-major C[M,N] = A[M,K] @ B[K,N], float32, on "
          + device)
    print(header, end="")
    print("  method: %s, median of 5-20 runs (3-5 with --quick); tolerance rtol * (|ref| + sqrt(K)) "
          "with rtol %g (FP32, vs float64 samples) and %g (TF32, vs FP32)\n"
          % ("CUDA events, L2 flushed before every run" if device == "cuda" else "wall time",
             RTOL_FP32, RTOL_TF32))

    shapes = []
    if args.shapes != "mnist":
        shapes += [("square", s, s, s) for s in sizes]
    if args.shapes != "squares":
        shapes += mnist_shapes()
    timer = CudaTimer(torch.device("cuda")) if device == "cuda" else host_timer
    tables, failed = [], False
    for what, m, n, k in shapes:
        title, rows, bad = run_shape(what, m, n, k, device, timer, args.quick)
        failed = failed or bad
        print_table(title, COLUMNS, rows)
        print()
        tables.append({"title": title, "columns": COLUMNS, "rows": rows})

    if args.json:
        tmp = "%s.tmp.%d" % (args.json, os.getpid())
        with open(tmp, "w") as f:
            json.dump({"bench": "bench_gemm.py", "header": header, "tables": tables}, f, indent=1)
        os.replace(tmp, args.json)
        print("wrote " + args.json)
    if failed:
        print("bench_gemm.py: a result FAILED its check (see the tables)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
