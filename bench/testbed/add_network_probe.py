#!/usr/bin/env python3
"""Adds what a later network profile of the same testbed measured and an older one lacks: the
burst, eager and message probes of each pair between hosts (source.pairs[].burst_bytes,
.burst_probe; .whole_message_bytes, .eager_probe; .message_cpu), where the later profile
measured that pair's point-to-point bandwidth within 5% of the older one at every size (the same
link then: a probe says nothing of a link that ran at another rate), the message probe of each
pair within a host (no shaped link there: the host's own copies), and the
within-host pairs and intra_node fits of device types that were not measured (the network
profiler measured one within-host pair only, on the first host with two slots, until
2026-11-25). An eager probe of a larger message replaces an older one of a smaller message
(48 KiB until 2026-11-27, 60 KiB since): a link that passed the whole 48 KiB message at once says
nothing of the 48-60 KiB messages a run sends (a micro-batch of gpt2-tiny-mid's activations is
50 KiB), and the larger probe measures them; the older figures are kept in source.added's
"replaced". Everything else the older file measured is kept as it is; the additions are listed
in source.added, with the file and date they come from.

usage: bench/testbed/add_network_probe.py OLD_NETWORK.json NEWER_NETWORK.json  (OLD is rewritten)"""
import json
import sys


# what a pair between hosts gains from each probe: (the figure, the probe's record)
PROBES = [("burst_bytes", "burst_probe"), ("whole_message_bytes", "eager_probe"),
          ("message_cpu", None)]


def key(pair):
    return tuple(sorted([(pair["sender_zone"], pair["sender_gpu"]),
                         (pair["receiver_zone"], pair["receiver_gpu"])])) + (pair["kind"],)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    old_path, new_path = argv
    old, new = json.load(open(old_path)), json.load(open(new_path))
    # rewritten with the old file's own indentation (sailor's files: 2, this script's: 1)
    lines = open(old_path).read().split("\n")
    indent = len(lines[1]) - len(lines[1].lstrip(" ")) if len(lines) > 1 else 1
    old_pairs = old["source"]["pairs"]
    by_key = {key(p): p for p in old_pairs}
    added, skipped, replaced = [], [], []
    for p in new["source"]["pairs"]:
        k = key(p)
        if k in by_key:
            same_rate = all(abs(b / a - 1) <= 0.05 for a, b in zip(by_key[k]["p2p_bps"], p["p2p_bps"]))
            for field, probe in PROBES:
                if field not in p:
                    continue
                supersedes = field in by_key[k] and probe == "eager_probe" and \
                    by_key[k].get(probe, {}).get("bytes", 0) < p.get(probe, {}).get("bytes", 0)
                if field in by_key[k] and not supersedes:
                    continue
                if not same_rate and p["kind"] == "between hosts":
                    skipped.append(f"{field} of {p['sender']} -> {p['receiver']}: its bandwidth "
                                   f"differs by more than 5% ({', '.join(f'{a / 1e6:.1f}' for a in by_key[k]['p2p_bps'])} "
                                   f"against {', '.join(f'{b / 1e6:.1f}' for b in p['p2p_bps'])} MB/s)")
                    continue
                if supersedes:
                    replaced.append({"pair": f"{by_key[k]['sender']} -> {by_key[k]['receiver']}",
                                     field: by_key[k][field], probe: by_key[k].get(probe)})
                by_key[k][field] = p[field]
                if probe:
                    by_key[k][probe] = p[probe]
                added.append(f"{field} of {p['sender']} -> {p['receiver']}" +
                             (f" (a probe of {p[probe]['bytes']} bytes for one of "
                              f"{(replaced[-1][probe] or {}).get('bytes', 'an unrecorded size')})" if supersedes else ""))
        elif p["kind"] == "within a host":
            old_pairs.append(p)
            old.setdefault("intra_node", {})[p["sender_gpu"]] = new["intra_node"][p["sender_gpu"]]
            added.append(f"within-host pair and intra_node fit of {p['sender_gpu']} ({p['sender']})")
    if added:
        old["source"].setdefault("added", []).append({
            "from": new_path, "date": new["source"].get("date"), "what": added, "not": skipped,
            "why": "measured by a later bring-up of the same testbed: the burst, eager and "
                   "message probes and the within-host pair of every device type did not exist "
                   "when this file was made" +
                   (", and its eager probe sent a smaller message" if replaced else "")})
        if replaced:
            old["source"]["added"][-1]["replaced"] = replaced
        with open(old_path, "w") as f:
            json.dump(old, f, indent=indent or 1)
            f.write("\n")
    print(f"{old_path}: added {len(added)}: " + "; ".join(added))
    for line in skipped:
        print(f"  not added: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
