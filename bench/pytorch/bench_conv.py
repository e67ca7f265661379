"""The PyTorch column for bench/bench_conv.cu: the same convolution layers and passes.

    python3 bench/pytorch/bench_conv.py [--device cuda|cpu] [--runs 20] [--json FILE]

Layers (NCHW, 5x5, stride 1, no padding, with bias), as in bench_conv.cu:
  cats_vs_dogs (seed 002, batch 100): [100,1,50,50]x[32,1,5,5], [100,32,23,23]x[64,32,5,5],
                                      [100,64,9,9]x[128,64,5,5]
  cifar10_cnn (seed 001, batch 4 and 64): [B,3,32,32]x[6,3,5,5], [B,6,14,14]x[16,6,5,5]
Passes, each the single ATen call autograd makes for it:
  forward       F.conv2d(x, w, b)
  input grad    torch.ops.aten.convolution_backward(..., output_mask=[True, False, False])
  weight grad   torch.ops.aten.convolution_backward(..., output_mask=[False, True, True]) (dw, db)

On CUDA: torch.backends.cudnn.benchmark = True (cuDNN times its algorithms on the first call of
each shape and keeps the fastest; that call is in the warm-up), and TF32 off for cuDNN and
cuBLAS — float32 at the precision ember's kernels and its cuDNN reference run at (PyTorch's own
default lets cuDNN use TF32).

Method (bench/harness.h's): validate, 3 warm-up calls, then --runs timed calls, each after
flushing the cache (a fill of a 2x-L2 buffer on CUDA, 64 MB on the CPU), timed with CUDA events
(perf_counter on the CPU); the median is printed. GFLOP/s counts 2*N*K*P*Q*C*R*S for every pass.
Validation: each output against the same call in float64 on the CPU, tolerance
|got - ref| <= 1e-4 * max|ref| + 1e-4 * |ref| (bench_conv.cu's); a wrong result prints FAIL.
The algo cell is "cuDNN" (on the CPU "PyTorch CPU") and "x cuDNN" is "-": these rows are cuDNN
through PyTorch, and bench/run_all.py puts them next to bench_conv.cu's cuDNN rows (same title,
same key columns), whose table has ember's algorithms against cuDNN. On the smallest layers
(CIFAR batch 4) a call's GPU work is a few microseconds, so PyTorch's per-call host cost can
show in the time; the cache flush queued before each timed call gives the host a head start of
its duration, as in the C++ harness.

--device cpu runs the same rows on the CPU (PyTorch's CPU convolution): it proves the script on a
machine without a GPU. Without a GPU, --device cuda says so and exits 0.
"""
import argparse
import sys

import torch
import torch.nn.functional as F

from bench_common import Timer, header_text, print_table, write_json

RTOL = 1e-4
ATOL_OF_MAX = 1e-4  # atol = this * max|ref|

# (model, layer, N, C, H, W, K, R, S)
LAYERS = [
    ("cats_vs_dogs", "conv1", 100, 1, 50, 50, 32, 5, 5),
    ("cats_vs_dogs", "conv2", 100, 32, 23, 23, 64, 5, 5),
    ("cats_vs_dogs", "conv3", 100, 64, 9, 9, 128, 5, 5),
    ("cifar b4", "conv1", 4, 3, 32, 32, 6, 5, 5),
    ("cifar b4", "conv2", 4, 6, 14, 14, 16, 5, 5),
    ("cifar b64", "conv1", 64, 3, 32, 32, 6, 5, 5),
    ("cifar b64", "conv2", 64, 6, 14, 14, 16, 5, 5),
]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--runs", type=int, default=20, help="timed runs per row (default 20)")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads on cpu")
    p.add_argument("--json", help="also write the table to this JSON file")
    return p.parse_args()



def pass_fns(x, w, b, dy):
    """The three passes as callables returning their outputs (a tuple)."""
    def forward():
        return (F.conv2d(x, w, b),)

    def input_grad():
        return (torch.ops.aten.convolution_backward(
            dy, x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, False, False])[0],)

    def weight_grad():
        r = torch.ops.aten.convolution_backward(
            dy, x, w, [w.shape[0]], [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
            [False, True, True])
        return (r[1], r[2])

    return [("forward", forward), ("input grad", input_grad), ("weight grad", weight_grad)]


def mismatch(got, ref):
    """None when every output is within tolerance of its float64 reference, else what is wrong."""
    for name, g, r in zip(("output", "db"), got, ref):
        g = g.detach().double().cpu().reshape(-1)
        r = r.detach().double().reshape(-1)
        atol = ATOL_OF_MAX * float(r.abs().max())
        ok = (g - r).abs() <= atol + RTOL * r.abs()  # NaN compares False: it fails
        if not bool(ok.all()):
            i = int((~ok).nonzero()[0])
            return "%s[%d] = %.7g, expected %.7g (tolerance %.3g + %.0e*|ref|)" % (
                name, i, float(g[i]), float(r[i]), atol, RTOL)
    return None


def main():
    args = parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_conv.py: nothing to measure, no usable GPU (torch.cuda.is_available() is "
              "False); --device cpu runs the rows on the CPU")
        return 0
    dev = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    if args.threads:
        torch.set_num_threads(args.threads)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    timer = Timer(dev, args.runs)
    # "cuDNN" as in bench_conv.cu's reference rows, which these join (PyTorch's algorithm
    # search and dispatch vs ember's, both in cuDNN); on the CPU PyTorch's own kernels.
    algo = "cuDNN" if dev.type == "cuda" else "PyTorch CPU"

    header = header_text(dev, torch.get_num_threads(), "; cudnn.benchmark = True, TF32 off")
    print("PyTorch bench_conv.py: convolution layers of the example CNNs, float32")
    print(header, end="")
    print("  method: median of %d runs after 3 warm-ups, %s, cache flushed before each run; "
          "every result checked against float64 first\n" % (
              args.runs, "CUDA events" if dev.type == "cuda" else "perf_counter"))

    columns = ["layer", "pass", "algo", "ms", "GFLOP/s", "x cuDNN"]
    rows = []
    failures = 0
    with torch.no_grad():
        for model, name, n, c, h, w_, k, r, s in LAYERS:
            p, q = h - r + 1, w_ - s + 1
            label = "%s %s [%d,%d,%d,%d]x[%d,%d,%d,%d]" % (model, name, n, c, h, w_, k, c, r, s)
            x = torch.randn(n, c, h, w_, device=dev)
            w = torch.randn(k, c, r, s, device=dev)
            b = torch.randn(k, device=dev)
            dy = torch.randn(n, k, p, q, device=dev)
            refs = pass_fns(*(t.double().cpu() for t in (x, w, b, dy)))
            gflop = 2.0 * n * k * p * q * c * r * s * 1e-9
            for (pass_name, fn), (_, ref_fn) in zip(pass_fns(x, w, b, dy), refs):
                row = [label, pass_name, algo, "", "", "-"]
                bad = mismatch(fn(), ref_fn())
                if bad:
                    failures += 1
                    print("FAIL %s %s: %s" % (label, pass_name, bad), file=sys.stderr)
                    row[3] = row[4] = "FAIL"
                else:
                    ms = timer(fn)
                    row[3] = "%.4f" % ms
                    gflops = gflop / (ms * 1e-3)
                    row[4] = ("%.0f" if gflops >= 100 else "%.1f") % gflops
                rows.append(row)

    # bench_conv.cu's title and columns: bench/run_all.py joins the rows on (layer, pass, algo).
    title = "conv2d layers of the example CNNs (float32, TF32 off)"
    print_table(title, columns, rows)
    if failures:
        print("  %d rows FAILED (see stderr)" % failures)
    if args.json:
        write_json(args.json, "pytorch_bench_conv", header, title, columns, rows)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
