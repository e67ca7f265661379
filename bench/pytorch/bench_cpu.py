"""The PyTorch column for bench/bench_cpu.cpp: the same rows, timed the same way.

Run with the system Python, which has Debian's torch 1.13:

    /usr/bin/python3 bench/pytorch/bench_cpu.py --threads 2 [--quick] [--json FILE]

Table 1 times torch.matmul on the same float32 shapes (the two backward products use
transposed views, as autograd does); Table 2 times tiny ops called from Python, with and without
a leaf that requires grad. Method as in bench_cpu.cpp: warm up, call in doubling batches until a
time budget is spent (0.3 s, 0.05 s with --quick), seconds per call = elapsed / calls, median of
5 such measurements. The Python interpreter's own cost is part of every Table 2 number here, as
it is for anyone who uses PyTorch from Python.

torch.matmul on the CPU calls whatever BLAS libblas.so.3 is on this machine (Debian's torch is
built with BLAS_INFO=generic): the reference BLAS unless OpenBLAS is installed. The script prints
the BLAS/LAPACK files it finds loaded, since they decide Table 1.
"""
import argparse
import json
import os
import platform
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    p.add_argument("--quick", action="store_true", help="0.05 s per measurement instead of 0.3 s")
    p.add_argument("--json", help="also write the results to this JSON file")
    p.add_argument("--only", choices=["all", "matmul", "dispatch"], default="all")
    return p.parse_args()


ARGS = parse_args()
# Read by libgomp and OpenBLAS when torch loads them, so they must be set before the import.
# OpenBLAS does not recognise every recent CPU; SkylakeX names its AVX-512 kernels explicitly.
os.environ.setdefault("OMP_NUM_THREADS", str(ARGS.threads))
os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")

import torch  # noqa: E402  (after the environment is set)

BUDGET_S = 0.05 if ARGS.quick else 0.3
MEASUREMENTS = 5


def seconds_per_call(fn, budget):
    calls, batch = 0, 1
    t0 = time.perf_counter()
    elapsed = 0.0
    while True:
        for _ in range(batch):
            fn()
        calls += batch
        elapsed = time.perf_counter() - t0
        if elapsed < budget / 8:
            batch *= 2
        if elapsed >= budget:
            return elapsed / calls


def median_seconds_per_call(fn):
    seconds_per_call(fn, BUDGET_S / 4)  # warm-up
    runs = sorted(seconds_per_call(fn, BUDGET_S) for _ in range(MEASUREMENTS))
    return runs[MEASUREMENTS // 2]


# (what, m, k, n, A stored transposed, B stored transposed) — the rows of bench_cpu.cpp.
MATMUL_CASES = [
    ("MLP layer 1", 64, 784, 512, False, False),
    ("MLP layer 2", 64, 512, 256, False, False),
    ("MLP layer 3", 64, 256, 128, False, False),
    ("MLP layer 4", 64, 128, 64, False, False),
    ("MLP layer 5", 64, 64, 10, False, False),
    ("layer 1 dX = dY W^T, view", 64, 512, 784, False, True),
    ("layer 1 dW = X^T dY, view", 784, 64, 512, True, False),
    ("square 512", 512, 512, 512, False, False),
    ("square 1024", 1024, 1024, 1024, False, False),
]


def matmul_table():
    print(f"Table 1: matmul, float32, GFLOP/s (median of {MEASUREMENTS} runs of {BUDGET_S:.2f} s)")
    print(f"  {'shape':<26} {'what':<26} {'PyTorch':>10}")
    rows = []
    with torch.no_grad():
        for what, m, k, n, ta, tb in MATMUL_CASES:
            a = torch.randn(k, m).t() if ta else torch.randn(m, k)
            b = torch.randn(n, k).t() if tb else torch.randn(k, n)
            shape = f"[{m},{k}] @ [{k},{n}]"
            gflops = 2.0 * m * k * n / median_seconds_per_call(lambda: torch.matmul(a, b)) * 1e-9
            print(f"  {shape:<26} {what:<26} {gflops:>10.1f}", flush=True)
            rows.append({"shape": shape, "what": what, "pytorch": gflops})
    print()
    return rows


def dispatch_table():
    cases = [
        ("add", "[1] + [1]", 1, lambda a, b: torch.add(a, b)),
        ("add", "[8] + [8]", 8, lambda a, b: torch.add(a, b)),
        ("mul by scalar", "[8] * 2.0", 8, lambda a, b: a * 2.0),
        ("relu", "[8]", 8, lambda a, b: torch.relu(a)),
        ("sum", "[8] -> []", 8, lambda a, b: torch.sum(a)),
    ]
    print(f"Table 2: dispatch overhead, float32, microseconds per call "
          f"(median of {MEASUREMENTS} runs of {BUDGET_S:.2f} s)")
    print(f"  {'op':<14} {'shape':<12} {'no grad':>12} {'leaf w/ grad':>14}")
    rows = []
    for op, shape, numel, call in cases:
        a, b = torch.randn(numel), torch.randn(numel)
        leaf = torch.randn(numel, requires_grad=True)
        assert call(a, b).grad_fn is None and call(leaf, b).grad_fn is not None
        plain = median_seconds_per_call(lambda: call(a, b)) * 1e6
        grad = median_seconds_per_call(lambda: call(leaf, b)) * 1e6
        print(f"  {op:<14} {shape:<12} {plain:>12.3f} {grad:>14.3f}", flush=True)
        rows.append({"op": op, "shape": shape, "no_grad": plain, "grad": grad})
    empty = median_seconds_per_call(lambda: torch.empty(8)) * 1e6
    print(f"  {'(empty alone)':<14} {'[8]':<12} {empty:>12.3f} {'-':>14}")
    rows.append({"op": "empty (allocation alone)", "shape": "[8]", "no_grad": empty, "grad": None})
    print()
    return rows


def blas_libraries():
    """The BLAS/LAPACK files loaded into this process (they decide torch.matmul's speed)."""
    found = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if ("blas" in path.lower() or "lapack" in path.lower()) and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found or ["none found"]


def main():
    torch.set_num_threads(ARGS.threads)
    torch.manual_seed(0)
    print("PyTorch CPU reference for ember bench_cpu")
    print(f"  torch {torch.__version__}, Python {platform.python_version()}, "
          f"threads: {torch.get_num_threads()}")
    print(f"  BLAS/LAPACK loaded: {', '.join(blas_libraries())}")
    print(f"  OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} "
          f"OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}\n")
    results = {"benchmark": "bench_cpu.py", "torch": torch.__version__, "threads": ARGS.threads,
               "quick": ARGS.quick, "blas": blas_libraries()}
    if ARGS.only != "dispatch":
        results["matmul_gflops"] = matmul_table()
    if ARGS.only != "matmul":
        results["dispatch_us"] = dispatch_table()
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump(results, f, indent=2)
        print(f"results written to {ARGS.json}")


if __name__ == "__main__":
    main()
