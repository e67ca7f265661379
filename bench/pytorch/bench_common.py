"""What bench_conv.py and bench_memory.py share: the timer, the table printer, the machine
header and the JSON file, in the format of ember's bench/harness.h so bench/run_all.py can join
them with ember's tables."""
import datetime
import json
import os
import platform
import statistics
import time

import torch


class Timer:
    """Median milliseconds of fn over `runs` calls after `warmup`, cache flushed before each."""

    def __init__(self, device, runs, warmup=3):
        self.device, self.runs, self.warmup = device, runs, warmup
        if device.type == "cuda":
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or (64 << 20)
            self.flush_buf = torch.empty(2 * l2, dtype=torch.uint8, device=device)
        else:
            self.flush_buf = torch.empty(64 << 20, dtype=torch.uint8)

    def __call__(self, fn):
        for _ in range(self.warmup):
            fn()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
        ms = []
        for r in range(self.runs):
            self.flush_buf.fill_(r & 0xFF)  # before the start event: not timed
            if self.device.type == "cuda":
                start.record()
                fn()
                stop.record()
                stop.synchronize()
                ms.append(start.elapsed_time(stop))
            else:
                t0 = time.perf_counter()
                fn()
                ms.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ms)


def print_table(title, columns, rows):
    def numeric(s):
        return s in ("-", "n/a", "FAIL") or (
            any(c.isdigit() for c in s) and all(c.isdigit() or c in ".-+%xe " for c in s))
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    right = [bool(rows) and all(numeric(r[i]) for r in rows) for i in range(len(columns))]
    print(title)
    for cells in [columns] + rows:
        line = " " + "".join(
            "  " + (c.rjust(w) if rt else c.ljust(w)) for c, w, rt in zip(cells, widths, right))
        print(line.rstrip())


def header_text(dev, threads, gpu_settings=""):
    """The machine lines; `gpu_settings` is appended to the torch/CUDA/cuDNN line on a GPU."""
    now = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
    lines = []
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(dev)
        lines.append("  gpu %d: %s (sm_%d%d, %d SMs), %.1f GiB" % (
            dev.index or 0, p.name, p.major, p.minor, p.multi_processor_count,
            p.total_memory / 2**30))
        lines.append("  torch %s, CUDA %s, cuDNN %s%s" % (
            torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), gpu_settings))
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
        lines.append("  cpu: %s, %d logical cores; threads: %d" % (
            model, os.cpu_count() or 0, threads))
        lines.append("  torch %s" % torch.__version__)
    lines.append("  date: %s" % now)
    return "\n".join(lines) + "\n"


def write_json(path, name, header, title, columns, rows):
    """One table as {"bench", "header", "tables"}, written to a temp file and renamed."""
    doc = {"bench": name, "header": header,
           "tables": [{"title": title, "columns": columns, "rows": rows}]}
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    print("results written to %s" % path)
