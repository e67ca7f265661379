#!/usr/bin/env python3
"""Run ember's benchmarks and their PyTorch twins one after the other; write one combined table.

    python3 bench/run_all.py [--build build/bench] [--out build/bench/results] [--threads N]
                             [--only bench_train,bench_gemm] [--args 'bench_train=--steps 50']

Builds nothing. For each bench below whose binary exists in --build, runs it with --json into
--out, then runs the matching bench/pytorch/*.py with --json (skipped, with the reason, when the
Python has no torch, or the script needs a GPU that torch cannot see), and finally writes
OUT/combined.md and prints it: per bench, each ember table joined with the PyTorch table of the
same title on their key columns, with an "ember / PyTorch" ratio column for the time column.

  bench          PyTorch twin                    needs a GPU for PyTorch
  bench_gemm     bench/pytorch/bench_gemm.py     yes
  bench_conv     bench/pytorch/bench_conv.py     yes
  bench_memory   bench/pytorch/bench_memory.py   yes
  bench_train    bench/pytorch/bench_train.py    no (CPU rows without one)
  bench_cpu      bench/pytorch/bench_cpu.py      no

The JSON is the harness's (bench/harness.h):
  {"bench": name, "header": "...", "tables": [{"title", "columns", "rows": [[cell, ...]]}]}
(bench_cpu's own older format, lists of records, is read too.) Every cell is a string as printed.

How tables are joined. The key columns are the leading columns before the first measurement
column: one whose name carries a unit (/s, %, ms, us, s, GB, FLOP, ratio, time) or that holds a
number with a fraction; so "model", "device" and an integer "batch" or "M" are keys, "steps/s" is
not. Rows match when all key cells are equal (if none match, the key is shortened from the right).
Every value column appears twice, "ember X" next to "PyTorch X". The ratio column is
ember / PyTorch of the first shared time column (lower is better for ember), or failing that of
the first shared rate column such as GFLOP/s or steps/s (higher is better for ember); the line
under each table says which. Rows present on one side only keep "-" on the other.
"""
import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (ember binary, PyTorch script, PyTorch needs a GPU, takes --threads)
BENCHES = [
    ("bench_gemm", "bench_gemm.py", True, False),
    ("bench_conv", "bench_conv.py", True, False),
    ("bench_memory", "bench_memory.py", True, False),
    ("bench_train", "bench_train.py", False, True),
    ("bench_cpu", "bench_cpu.py", False, True),
]

UNIT = re.compile(r"(/s\b|%|\bms\b|\bus\b|µs|\bs\b|\bsec|seconds|\bGB|GiB|FLOP|ratio|\btime\b)",
                  re.IGNORECASE)
TIME = re.compile(r"(\bms\b|\bus\b|µs|\bs\b|\bsec|seconds|\btime\b)", re.IGNORECASE)
RATE = re.compile(r"(/s\b|FLOP|GB/s)", re.IGNORECASE)
# A title that says its numbers are times ("dispatch_us", "microseconds per call").
TIME_TITLE = re.compile(r"(_us\b|_ms\b|\bus\b|\bms\b|microsecond|millisecond|seconds)",
                        re.IGNORECASE)


def log(*args):
    print(*args, file=sys.stderr, flush=True)


# ---- running the programs ---------------------------------------------------------------------

def run(cmd, log_path, timeout):
    """Runs cmd, echoing its output to stderr and saving it to log_path. Returns (rc, last line)."""
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    last = ""
    with open(log_path, "w") as out:
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, cwd=REPO)
        except OSError as e:
            out.write(f"{e}\n")
            return 127, str(e)
        try:
            for line in proc.stdout:
                sys.stderr.write(line)
                out.write(line)
                if line.strip():
                    last = line.strip()
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return 124, f"timed out after {timeout} s"
    return rc, last


def probe_torch(python):
    """(info dict, None) for a Python with torch, else (None, why not)."""
    code = ("import json, torch; ok = torch.cuda.is_available(); print(json.dumps({"
            "'version': torch.__version__, 'cuda': ok, "
            "'gpu': torch.cuda.get_device_name(0) if ok else ''}))")
    try:
        p = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{python} cannot be run ({e})"
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        return None, f"{python} cannot import torch ({lines[-1] if lines else p.returncode})"
    return json.loads(p.stdout.strip().splitlines()[-1]), None


# ---- reading results ----------------------------------------------------------------------------

def cell(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 100 else f"{v:.1f}"
    return str(v)


def load(path):
    """The harness's document, or bench_cpu's record lists turned into tables."""
    with open(path) as f:
        doc = json.load(f)
    if "tables" in doc:
        return doc
    tables = []
    for key, value in doc.items():
        if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
            columns = []
            for r in value:
                columns += [c for c in r if c not in columns]
            tables.append({"title": key, "columns": columns,
                           "rows": [[cell(r.get(c)) for c in columns] for r in value]})
    header = ", ".join(f"{k}: {v}" for k, v in doc.items() if not isinstance(v, (list, dict)))
    return {"bench": doc.get("benchmark", os.path.basename(path)), "header": header,
            "tables": tables}


def number(s):
    try:
        return float(str(s).strip().rstrip("%x"))
    except ValueError:
        return None


def is_measurement(name, cells):
    if UNIT.search(name):
        return True
    for c in cells:
        v = number(c)
        if v is not None and not re.fullmatch(r"[+-]?\d+", str(c).strip()):
            return True
    return False


def key_count(table):
    cols, rows = table["columns"], table["rows"]
    for i, name in enumerate(cols):
        if is_measurement(name, [r[i] for r in rows if i < len(r)]):
            return i
    return len(cols)


def md_escape(s):
    return str(s).replace("|", "\\|")


def md_table(columns, rows, left=None):
    """A markdown table; the first `left` columns (default: the key columns) align left."""
    if left is None:
        left = key_count({"columns": columns, "rows": rows})
    out = ["| " + " | ".join(md_escape(c) for c in columns) + " |",
           "|" + "|".join("---" if i < max(left, 1) else "---:" for i in range(len(columns))) + "|"]
    out += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def pick_ratio_column(ember_cols, torch_cols, title):
    """(ember column, PyTorch column, lower_is_better) or None."""
    shared = [c for c in ember_cols if c in torch_cols]
    for c in shared:
        if TIME.search(c) and not RATE.search(c):
            return c, c, True
    for c in shared:
        if RATE.search(c):
            return c, c, False
    if ember_cols and torch_cols:  # no shared name (bench_cpu's "ember" vs "pytorch")
        e, t = ember_cols[0], torch_cols[0]
        timed = TIME.search(e) or TIME_TITLE.search(title)
        return e, t, bool(timed) and not RATE.search(e) and not RATE.search(title)
    return None


def join(ember, torch_t):
    """Markdown for one ember table joined with its PyTorch table."""
    k = min(key_count(ember), key_count(torch_t))
    while k > 0 and ember["columns"][:k] != torch_t["columns"][:k]:
        k -= 1

    def keyed(t, n):
        return {tuple(c.strip() for c in r[:n]): r for r in t["rows"]}

    while k > 1 and not set(keyed(ember, k)) & set(keyed(torch_t, k)):
        k -= 1
    e_vals, t_vals = ember["columns"][k:], torch_t["columns"][k:]
    ratio = pick_ratio_column(e_vals, t_vals, ember["title"])
    columns = list(ember["columns"][:k])
    layout = []  # (side, column index)

    def label(side, c):  # bench_cpu's columns are already called "ember" and "pytorch"
        return c if c.lower() in ("ember", "pytorch") else f"{side} {c}"

    for i, c in enumerate(e_vals):
        columns.append(label("ember", c))
        layout.append(("e", k + i))
        if c in t_vals:
            columns.append(label("PyTorch", c))
            layout.append(("t", k + t_vals.index(c)))
    for i, c in enumerate(t_vals):
        if c not in e_vals:
            columns.append(label("PyTorch", c))
            layout.append(("t", k + i))
    if ratio:
        columns.append(f"ember / PyTorch ({ratio[0]})")
    e_rows, t_rows = keyed(ember, k), keyed(torch_t, k)
    order = list(e_rows) + [key for key in t_rows if key not in e_rows]
    rows = []
    for key in order:
        er, tr = e_rows.get(key), t_rows.get(key)
        row = list(key)
        for side, i in layout:
            src = er if side == "e" else tr
            row.append(src[i] if src is not None and i < len(src) else "-")
        if ratio:
            ev = number(er[ember["columns"].index(ratio[0])]) if er else None
            tv = number(tr[torch_t["columns"].index(ratio[1])]) if tr else None
            row.append(f"{ev / tv:.2f}" if ev is not None and tv else "-")
        rows.append(row)
    text = md_table(columns, rows, left=k)
    if ratio:
        better = "below 1: ember is faster" if ratio[2] else "above 1: ember is faster"
        if ratio[0] == ratio[1]:
            text += f"\n\nember / PyTorch of `{ratio[0]}` ({better})."
        else:
            text += f"\n\nRatio: `{ratio[0]}` / `{ratio[1]}` ({better})."
    keys = ", ".join(ember["columns"][:k]) or "(none)"
    return text + f" Joined on: {keys}."


def combine(name, ember_doc, torch_doc, notes):
    out = [f"## {name}", ""]
    out += [f"- {n}" for n in notes] + ([""] if notes else [])
    for label, doc in (("ember", ember_doc), ("PyTorch", torch_doc)):
        if doc and doc.get("header"):
            out += [f"{label}:", "", "```", doc["header"].rstrip("\n"), "```", ""]
    e_tables = ember_doc["tables"] if ember_doc else []
    t_tables = list(torch_doc["tables"]) if torch_doc else []
    for idx, et in enumerate(e_tables):
        tt = next((t for t in t_tables if t is not None and t["title"] == et["title"]), None)
        if tt is None and idx < len(t_tables) and t_tables[idx] is not None:
            cand = t_tables[idx]
            n = key_count(et)
            if n and cand["columns"][:n] == et["columns"][:n]:
                tt = cand
        out += [f"### {et['title']}", ""]
        if tt is not None:
            t_tables[t_tables.index(tt)] = None
            out += [join(et, tt), ""]
        else:
            out += [md_table(et["columns"], et["rows"]), "", "(ember only)", ""]
    for tt in t_tables:
        if tt is not None:
            out += [f"### PyTorch: {tt['title']}", "", md_table(tt["columns"], tt["rows"]), ""]
    return "\n".join(out)


# ---- main -------------------------------------------------------------------------------------

def parse_per_bench(values, flag):
    per = {}
    for v in values or []:
        if "=" not in v:
            sys.exit(f"run_all.py: {flag} wants NAME=ARGS, got {v!r}")
        name, rest = v.split("=", 1)
        per.setdefault(name.strip(), []).extend(shlex.split(rest))
    return per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/bench", help="folder with the bench binaries")
    ap.add_argument("--out", default=None,
                    help="folder for the JSON, logs and combined.md (default: results/ next to "
                         "--build, e.g. build/bench/results)")
    ap.add_argument("--python", default=None,
                    help="the Python that has torch (default: this one, else python3 on PATH, "
                         "else /usr/bin/python3, whichever imports torch first)")
    ap.add_argument("--only", default="", help="comma-separated bench names (default: all)")
    ap.add_argument("--threads", type=int, default=0,
                    help="--threads for the CPU benches on both sides (default: their own)")
    ap.add_argument("--args", action="append", metavar="NAME=ARGS",
                    help="extra arguments for both sides of one bench, e.g. "
                         "'bench_train=--device cpu --steps 20' (repeatable)")
    ap.add_argument("--ember-args", action="append", metavar="NAME=ARGS",
                    help="extra arguments for ember's side only")
    ap.add_argument("--pytorch-args", action="append", metavar="NAME=ARGS",
                    help="extra arguments for PyTorch's side only, e.g. "
                         "'bench_train=--compile --cuda-graphs'")
    ap.add_argument("--no-pytorch", action="store_true", help="run ember's benches only")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per program")
    args = ap.parse_args()

    build = args.build
    if not os.path.isdir(build) and os.path.isdir(os.path.join(REPO, build)):
        build = os.path.join(REPO, build)
    build = os.path.abspath(build)
    if not os.path.isdir(build):
        sys.exit(f"run_all.py: {build} is not a folder. Build the benches first (cmake --build "
                 "build --target bench_train ...) or point --build at the folder that has them.")
    out_dir = os.path.abspath(args.out or os.path.join(build, "results"))
    os.makedirs(out_dir, exist_ok=True)
    both = parse_per_bench(args.args, "--args")
    ember_extra = parse_per_bench(args.ember_args, "--ember-args")
    torch_extra = parse_per_bench(args.pytorch_args, "--pytorch-args")
    wanted = [n for n in args.only.split(",") if n]
    unknown = [n for n in wanted if n not in [b[0] for b in BENCHES]]
    if unknown:
        sys.exit(f"run_all.py: unknown bench {unknown}; known: {[b[0] for b in BENCHES]}")

    torch_info, torch_why = None, "--no-pytorch"
    if not args.no_pytorch:
        # The given Python; by default this one, else the first python3 on PATH or the system's
        # /usr/bin/python3 that can import torch.
        candidates = [args.python] if args.python else \
            [sys.executable] + [p for p in (shutil.which("python3"), "/usr/bin/python3") if p]
        whys = []
        for python in dict.fromkeys(candidates):
            info, why = probe_torch(python)
            if info:
                torch_info, args.python = info, python
                break
            whys.append(why)
        torch_why = "; ".join(whys)
    if torch_info:
        log(f"PyTorch: {args.python}, torch {torch_info['version']}, "
            f"GPU: {torch_info['gpu'] or 'none visible'}")
    else:
        log(f"PyTorch: not run ({torch_why})")

    sections, failed = [], False
    started = datetime.datetime.now(datetime.timezone.utc)
    for name, script, torch_needs_gpu, takes_threads in BENCHES:
        if wanted and name not in wanted:
            continue
        notes = []
        threads = ["--threads", str(args.threads)] if args.threads > 0 and takes_threads else []
        ember_doc = torch_doc = None
        binary = os.path.join(build, name)
        if not os.access(binary, os.X_OK):
            why = "not built" + (" (CUDA targets are built only with CUDA)"
                                 if torch_needs_gpu else "")
            log(f"{name}: {binary}: {why}")
            notes.append(f"ember: `{name}` not found in {build}: {why}")
        else:
            json_path = os.path.join(out_dir, f"{name}.ember.json")
            if os.path.exists(json_path):
                os.remove(json_path)
            cmd = [binary] + threads + both.get(name, []) + ember_extra.get(name, []) + \
                ["--json", json_path]
            rc, last = run(cmd, os.path.join(out_dir, f"{name}.ember.log"), args.timeout)
            notes.append("ember: `" + " ".join(shlex.quote(c) for c in cmd) + "`")
            # A bench that found a wrong result still writes its tables (FAIL in the cells):
            # show them, and say that it failed.
            if os.path.exists(json_path):
                ember_doc = load(json_path)
            if rc != 0 or not ember_doc:
                failed = True
                notes.append(f"ember: failed (exit {rc}): {last}")

        script_path = os.path.join(REPO, "bench", "pytorch", script)
        if not os.path.exists(script_path):
            notes.append(f"PyTorch: {os.path.relpath(script_path, REPO)} does not exist")
        elif not torch_info:
            notes.append(f"PyTorch: not run ({torch_why})")
        elif torch_needs_gpu and not torch_info["cuda"]:
            notes.append(f"PyTorch: not run (torch {torch_info['version']} at {args.python} "
                         "sees no GPU, and this script needs one)")
        else:
            json_path = os.path.join(out_dir, f"{name}.pytorch.json")
            if os.path.exists(json_path):
                os.remove(json_path)
            cmd = [args.python, script_path] + threads + both.get(name, []) + \
                torch_extra.get(name, []) + ["--json", json_path]
            rc, last = run(cmd, os.path.join(out_dir, f"{name}.pytorch.log"), args.timeout)
            shown = [os.path.relpath(c, REPO) if c == script_path else c for c in cmd]
            notes.append("PyTorch: `" + " ".join(shlex.quote(c) for c in shown) + "`")
            if os.path.exists(json_path):
                torch_doc = load(json_path)
            if rc != 0 or not torch_doc:
                failed = True
                notes.append(f"PyTorch: failed (exit {rc}): {last}")
        if ember_doc or torch_doc or notes:
            sections.append(combine(name, ember_doc, torch_doc, notes))

    md = "\n".join(["# ember vs PyTorch: combined benchmark tables",
                    "",
                    f"Written by bench/run_all.py, {started.strftime('%Y-%m-%d %H:%M UTC')}; "
                    f"binaries from {build}; JSON and logs in {out_dir}.",
                    ""] + sections)
    md_path = os.path.join(out_dir, "combined.md")
    with open(md_path, "w") as f:
        f.write(md + "\n")
    print(md)
    log(f"wrote {md_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
