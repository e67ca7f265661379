"""The PyTorch column for bench/bench_memory.cu: the same memory-bound ops, timed the same way.

    python3 bench/pytorch/bench_memory.py [--device cuda|cpu] [--max-mb 1024] [--runs 20]
                                          [--json FILE]

Rows, as in bench_memory.cu: the reference (dst.copy_(src), device to device), then relu, exp,
add (same shape), broadcast add ([R, 1024] + [1024]), sum over the last dim of [R, 1024], sum of
all elements, softmax over the last dim of [R, 1024], cross_entropy forward + backward on
[N, 1000] logits (mean; the gradient by torch.autograd.grad, so nothing accumulates in .grad),
and one torch.optim.Adam step on one parameter: fused=True where this PyTorch has it for the
device (row "adam step", the twin of ember's fused kernel) and the default implementation (row
"adam step (default impl)": foreach on CUDA in PyTorch 2.x, several passes). The table has
bench_memory.cu's title, columns and row keys (op, size), so bench/run_all.py joins the two. Sizes: the main tensor is 1, 4, 16, 64,
256 and 1024 MB (float32), up to --max-mb.

GB/s = bytes moved / time, with the same minimal-traffic formula per op as the C++ table
(S = bytes of the main tensor): copy, relu, exp, softmax 2S; add 3S; broadcast add 2S + 4 KB;
sums S + output; cross_entropy 3S + 28N; Adam 7S. An implementation that makes more passes than
that (PyTorch's cross_entropy is log_softmax + nll_loss and their backwards) shows a lower GB/s.
% copy = GB/s / the copy's GB/s at the same size; goal (issue 6) >= 85% from 64 MB up.

Method (bench/harness.h's): 3 warm-up calls, then --runs timed calls, each after flushing the
cache (on CUDA a fill of a buffer twice the L2 size; on the CPU a 64 MB fill), timed with CUDA
events on CUDA and time.perf_counter on the CPU; the median is printed. Before timing, each op's
result is compared with a float64 computation of the same math on the same inputs (tolerance
|got - ref| <= atol + rtol * |ref|, the C++ bench's per op); a wrong result prints FAIL.

--device cpu runs the same rows on the CPU (default --max-mb 16 there): it proves the script on
a machine without a GPU, and its numbers are CPU numbers. Without a GPU, --device cuda says so
and exits 0.
"""
import argparse
import math
import sys

import torch
import torch.nn.functional as F

from bench_common import Timer, header_text, print_table, write_json

MB = 1 << 20
ROW = 1024       # columns of broadcast add, row sums and softmax
CLASSES = 1000   # cross_entropy's C
GOAL = 85.0      # % of copy bandwidth ...
GOAL_FROM_MB = 64  # ... from this size up


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--max-mb", type=int, default=None,
                   help="largest tensor in MB (default 1024 on cuda, 16 on cpu)")
    p.add_argument("--runs", type=int, default=20, help="timed runs per row (default 20)")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads on cpu")
    p.add_argument("--json", help="also write the table to this JSON file")
    return p.parse_args()


# ---- timing ---------------------------------------------------------------------------------


# ---- validation -----------------------------------------------------------------------------

def mismatch(what, got, ref, atol, rtol):
    """None when every |got - ref| <= atol + rtol * |ref| (ref float64), else what is wrong."""
    got = got.detach().double().reshape(-1)
    ref = ref.detach().double().reshape(-1)
    ok = (got - ref).abs() <= atol + rtol * ref.abs()  # NaN compares False: it fails
    if bool(ok.all()):
        return None
    i = int((~ok).nonzero()[0])
    return "%s[%d] = %.9g, expected %.9g (tolerance %.3g + %.3g * |ref|)" % (
        what, i, float(got[i]), float(ref[i]), atol, rtol)


def rounded(t64):
    """A float64 result rounded to float32 once: the correctly rounded float result."""
    return t64.float().double()


# ---- the ops ----------------------------------------------------------------------------------
# Each prepare(nbytes, dev) returns (fn, bytes moved, None or what is wrong).

def prepare_copy(nbytes, dev):
    n = max(1, nbytes // 4)
    src = torch.randn(n, device=dev)
    dst = torch.empty(n, device=dev)
    return (lambda: dst.copy_(src)), 2 * 4 * n, None


def prepare_relu(nbytes, dev):
    x = torch.randn(max(1, nbytes // 4), device=dev)
    bad = mismatch("relu(x)", torch.relu(x), x.double().clamp_min(0), 0.0, 0.0)
    return (lambda: torch.relu(x)), 2 * x.numel() * 4, bad


def prepare_exp(nbytes, dev):
    x = torch.randn(max(1, nbytes // 4), device=dev)
    bad = mismatch("exp(x)", torch.exp(x), torch.exp(x.double()), 1e-7, 1e-6)
    return (lambda: torch.exp(x)), 2 * x.numel() * 4, bad


def prepare_add(nbytes, dev):
    n = max(1, nbytes // 4)
    a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
    bad = mismatch("a + b", a + b, rounded(a.double() + b.double()), 0.0, 0.0)
    return (lambda: a + b), 3 * n * 4, bad


def prepare_broadcast_add(nbytes, dev):
    rows = max(1, nbytes // (4 * ROW))
    a, b = torch.randn(rows, ROW, device=dev), torch.randn(ROW, device=dev)
    bad = mismatch("a + b[row]", a + b, rounded(a.double() + b.double()), 0.0, 0.0)
    return (lambda: a + b), 4 * (2 * rows * ROW + ROW), bad


def prepare_sum_rows(nbytes, dev):
    rows = max(1, nbytes // (4 * ROW))
    x = torch.randn(rows, ROW, device=dev)
    bad = mismatch("sum(x, 1)", x.sum(1), x.double().sum(1), 1e-4, 1e-5)
    return (lambda: x.sum(1)), 4 * (rows * ROW + rows), bad


def prepare_sum_all(nbytes, dev):
    x = torch.randn(max(1, nbytes // 4), device=dev)
    bad = mismatch("sum(x)", x.sum(), x.double().sum(), 1e-3, 1e-5)
    return (lambda: x.sum()), 4 * (x.numel() + 1), bad


def prepare_softmax(nbytes, dev):
    rows = max(1, nbytes // (4 * ROW))
    x = torch.randn(rows, ROW, device=dev)
    bad = mismatch("softmax(x, 1)", torch.softmax(x, 1), torch.softmax(x.double(), 1), 1e-8, 1e-5)
    return (lambda: torch.softmax(x, 1)), 2 * 4 * rows * ROW, bad


def prepare_cross_entropy(nbytes, dev):
    n = max(1, nbytes // (4 * CLASSES))
    logits = torch.randn(n, CLASSES, device=dev, requires_grad=True)
    target = torch.randint(0, CLASSES, (n,), device=dev)

    def run():
        loss = F.cross_entropy(logits, target)
        return loss, torch.autograd.grad(loss, logits)[0]

    loss, grad = run()
    ref_logits = logits.detach().double().requires_grad_()
    ref_loss = F.cross_entropy(ref_logits, target)
    ref_grad = torch.autograd.grad(ref_loss, ref_logits)[0]
    bad = (mismatch("cross_entropy", loss, ref_loss, 1e-5, 1e-5)
           or mismatch("dlogits", grad, ref_grad, 1e-8 / n, 1e-4))
    return run, 3 * 4 * n * CLASSES + 28 * n, bad


def make_prepare_adam(fused):
    lr, beta1, beta2, eps = 1e-3, 0.9, 0.999, 1e-8

    def prepare(nbytes, dev):
        n = max(1, nbytes // 4)
        p = torch.randn(n, device=dev, requires_grad=True)
        p.grad = torch.randn(n, device=dev)
        kwargs = {"fused": True} if fused else {}
        opt = torch.optim.Adam([p], lr=lr, betas=(beta1, beta2), eps=eps, **kwargs)
        # The reference for the first step (m and v start at 0), in float64.
        g64, p64 = p.grad.double(), p.detach().double()
        m = (1 - beta1) * g64
        v = (1 - beta2) * g64 * g64
        denom = v.sqrt() / math.sqrt(1 - beta2) + eps
        p_ref = p64 - (lr / (1 - beta1)) * m / denom
        opt.step()  # the first step also allocates the state: not timed
        bad = (mismatch("param", p, p_ref, 1e-7, 1e-6)
               or mismatch("exp_avg", opt.state[p]["exp_avg"], m, 1e-9, 1e-6)
               # PyTorch's fused kernel forms 1 - beta2 in float32 (0.00099998713 for 0.001):
               # a relative error of 1.3e-5 in every second moment, seen on an H200.
               or mismatch("exp_avg_sq", opt.state[p]["exp_avg_sq"], v, 1e-12, 3e-5))
        return opt.step, 7 * 4 * n, bad

    return prepare


def adam_fused_supported(dev):
    try:
        p = torch.zeros(4, device=dev, requires_grad=True)
        p.grad = torch.zeros(4, device=dev)
        torch.optim.Adam([p], fused=True).step()
        return True
    except (RuntimeError, TypeError, ValueError):
        return False


def op_list(dev):
    ops = [
        ("relu", "torch.relu", "2S", prepare_relu),
        ("exp", "torch.exp", "2S", prepare_exp),
        ("add", "a + b, same shape", "3S", prepare_add),
        ("broadcast add", "a + b [R,1024]+[1024]", "2S + 4K", prepare_broadcast_add),
        ("sum rows", "x.sum(1) [R,1024]", "S + S/1024", prepare_sum_rows),
        ("sum all", "x.sum()", "S + 4", prepare_sum_all),
        ("softmax", "torch.softmax(x, 1) [R,1024]", "2S", prepare_softmax),
        ("cross_entropy fwd+bwd", "F.cross_entropy + autograd.grad", "3S + 28N",
         prepare_cross_entropy),
        ("adam step (default impl)", "torch.optim.Adam()", "7S", make_prepare_adam(False)),
    ]
    if adam_fused_supported(dev):
        # Named as ember's row: both are one fused kernel per step (bench/run_all.py joins them).
        ops.append(("adam step", "torch.optim.Adam(fused=True)", "7S", make_prepare_adam(True)))
    return ops


# ---- tables and the header ----------------------------------------------------------------

def is_oom(e):
    return "out of memory" in str(e).lower()


def main():
    args = parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_memory.py: nothing to measure, no usable GPU (torch.cuda.is_available() is "
              "False); --device cpu runs the rows on the CPU")
        return 0
    dev = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    if args.threads:
        torch.set_num_threads(args.threads)
    max_mb = args.max_mb or (1024 if dev.type == "cuda" else 16)
    sizes = []
    mb = 1
    while mb <= max_mb:
        sizes.append(mb)
        mb *= 4
    torch.manual_seed(0)
    timer = Timer(dev, args.runs)

    header = header_text(dev, torch.get_num_threads())
    print("PyTorch bench_memory.py: memory-bound ops vs %s copy, float32" % dev.type)
    print(header, end="")
    print("  method: median of %d runs after 3 warm-ups, %s, cache flushed before each run; "
          "every result checked against float64 first" % (
              args.runs, "CUDA events" if dev.type == "cuda" else "perf_counter"))
    print("  GB/s = bytes moved / time (S = bytes of the main tensor); goal: >= %g%% of copy "
          "from %d MB up\n" % (GOAL, GOAL_FROM_MB))

    columns = ["op", "size", "ms", "GB/s", "% copy", "bytes moved", "called as", "goal"]
    rows = []
    copy_gbs = {}
    failures = 0
    goal_rows = goal_met = 0

    def size_label(mb):
        return "%d GB" % (mb // 1024) if mb >= 1024 and mb % 1024 == 0 else "%d MB" % mb

    def measure(name, via, formula, prepare, mb, is_reference):
        nonlocal failures, goal_rows, goal_met
        row = [name, size_label(mb), "", "", "", formula, via, ""]
        try:
            fn, nbytes, bad = prepare(mb * MB, dev)
            if bad:
                failures += 1
                print("FAIL %s at %s: %s" % (name, size_label(mb), bad), file=sys.stderr)
                row[2] = row[3] = row[4] = "FAIL"
                row[7] = "wrong result"
            else:
                ms = timer(fn)
                gbs = nbytes / (ms * 1e-3) / 1e9
                if is_reference:
                    copy_gbs[mb] = gbs
                ref = copy_gbs.get(mb, 0.0)
                pct = 100.0 * gbs / ref if ref > 0 else 0.0
                row[2] = "%.4f" % ms
                row[3] = ("%.0f" if gbs >= 100 else "%.1f") % gbs
                row[4] = "%.1f%%" % pct if ref > 0 else "n/a"
                if is_reference:
                    row[7] = "reference"
                elif mb >= GOAL_FROM_MB:
                    goal_rows += 1
                    goal_met += pct >= GOAL
                    row[7] = "ok" if pct >= GOAL else "<- below goal"
                else:
                    row[7] = "-"
        except RuntimeError as e:
            if not is_oom(e):
                raise
            row[2] = row[3] = row[4] = "n/a"
            row[7] = "out of memory"
            print("%s at %s: %s" % (name, size_label(mb), e), file=sys.stderr)
        rows.append(row)
        if dev.type == "cuda":
            torch.cuda.empty_cache()

    copy_via = "dst.copy_(src) D2D" if dev.type == "cuda" else "dst.copy_(src)"
    for mb in sizes:
        measure("copy (reference)", copy_via, "2S", prepare_copy, mb, True)
    for name, via, formula, prepare in op_list(dev):
        for mb in sizes:
            measure(name, via, formula, prepare, mb, False)

    # bench_memory.cu's title, columns and row keys (op, size): bench/run_all.py joins them.
    title = "memory-bound ops vs device-to-device copy (float32)"
    print_table(title, columns, rows)
    summary = "  goal (>= %g%% of copy bandwidth from %d MB up): met on %d of %d rows" % (
        GOAL, GOAL_FROM_MB, goal_met, goal_rows)
    if failures:
        summary += "; %d rows FAILED validation (see stderr)" % failures
    print(summary)

    if args.json:
        write_json(args.json, "pytorch_bench_memory", header, title, columns, rows)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
