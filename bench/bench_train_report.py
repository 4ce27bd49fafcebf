"""Summarises bench/bench_train.sh's runs: one table row per thread count.

Input: JSON lines {"kind": "peak"|"ours"|"torch", "t": threads, "r": <the run's own JSON>}.
sailor's step times come from its --json step lines (the first step is the warm-up and is
dropped); PyTorch's from bench_train_torch.py. MFU = model FLOPs per step (PaLM's count, printed
by sailor) / median step time / measured sgemm peak at that thread count.
"""
import json
import statistics
import sys


def main():
    label, path = sys.argv[1], sys.argv[2]
    rows = {}
    for line in open(path):
        rec = json.loads(line)
        row = rows.setdefault(rec["t"], {"steps": [], "end": None, "peak": None, "torch": None})
        r = rec["r"]
        if rec["kind"] == "peak":
            row["peak"] = r
        elif rec["kind"] == "torch":
            row["torch"] = r
        elif r.get("event") == "step":
            row["steps"].append(r["step_time_s"])
        elif r.get("event") == "end":
            row["end"] = r
    mib = 1024.0 * 1024.0
    print(f"\n{label}")
    print(f"{'threads':>7} | {'sailor ms/step':>14} {'tokens/s':>9} | {'PyTorch ms/step':>15} "
          f"{'tokens/s':>9} | {'speed-up':>8} | {'MFU':>5} (sgemm peak)")
    for t in sorted(rows):
        row = rows[t]
        end = row["end"]
        med = statistics.median(row["steps"][1:])
        tokens = end["tokens_per_step"]
        peak = row["peak"]["peak_gflops"] * 1e9
        mfu = end["flops_per_step"] / med / peak
        torch = row["torch"]
        if torch:
            tmed = torch["median_step_time_s"]
            tcol = f"{tmed * 1e3:15.0f} {tokens / tmed:9.1f}"
            ratio = f"{tmed / med:7.2f}x"
        else:
            tcol, ratio = f"{'-':>15} {'-':>9}", f"{'-':>8}"
        print(f"{t:>7} | {med * 1e3:14.0f} {tokens / med:9.1f} | {tcol} | {ratio} | "
              f"{100 * mfu:4.0f}% ({peak / 1e9:.0f} GFLOPS, {end['blas_core']})")
    print("memory (sailor, MiB): accounted = parameters + gradients + AdamW m,v + activations "
          "+ workspace; peak RSS of the process")
    for t in sorted(rows):
        m = rows[t]["end"]["memory"]
        torch = rows[t]["torch"]
        tr = f"; PyTorch peak RSS {torch['peak_rss_bytes'] / mib:.0f}" if torch else ""
        print(f"  {t} thread(s): {m['params_bytes'] / mib:.0f} + {m['grads_bytes'] / mib:.0f} + "
              f"{m['optimizer_bytes'] / mib:.0f} + {m['activations_bytes'] / mib:.0f} + "
              f"{m['workspace_bytes'] / mib:.0f} = {m['accounted_bytes'] / mib:.0f} accounted, "
              f"peak RSS {m['peak_rss_bytes'] / mib:.0f} "
              f"({100 * m['peak_rss_bytes'] / m['accounted_bytes']:.0f}%){tr}")


if __name__ == "__main__":
    main()
