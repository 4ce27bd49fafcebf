#!/usr/bin/env python3
"""Adds to a layer profile what a later profile of the same device class measured and the older
one lacks, each as its ratio to a phase both measured, times the older profile's own figure of
that phase: the ratio is the mechanism's, the older file keeps the machine's speed of its own
bring-up. The probes (source.entries["mbs M tp T"].median_s; `sailor profile` measures them):
  recompute_attention      the attention core timed alone (what selective recomputation adds to a
                           block's backward), over forward_block; since 2026-11-27 (sixth session)
Only entries of the same (mbs, tp), model, device type and sequence length; everything the older
file measured is kept as it is; what was added is listed in source.added, with the file and date
it comes from.

usage: bench/testbed/add_profile_probe.py OLD_PROFILE.json NEWER_PROFILE.json  (OLD is rewritten)"""
import json
import sys


# probe -> (the phase it is carried over relative to, the largest ratio that makes sense)
PROBES = {
    "recompute_attention": ("forward_block", 1.0),  # the core is part of the block's forward
}


def insert_lines(text, profile, added):
    """text with each entry's added probes and source.added inserted as lines."""
    lines = text.split("\n")
    out, entry, in_source = [], None, False
    for line in lines:
        stripped = line.strip()
        if in_source and stripped.startswith('"added": ['):
            continue  # what an earlier run added: written again, with this run's, below
        out.append(line)
        if stripped == '"source": {':
            in_source = True
            pad = line[:len(line) - len(line.lstrip())] + "  "
            out.append(pad + '"added": ' + json.dumps(profile["source"]["added"]) + ",")
        elif in_source and stripped.endswith(": {") and stripped[1:-4] in added:
            entry = stripped[1:-4]
        elif entry and stripped == '"median_s": {':
            pad = line[:len(line) - len(line.lstrip())] + "  "
            for probe in added[entry]:
                value = profile["source"]["entries"][entry]["median_s"][probe]
                out.append(f'{pad}"{probe}": {value!r},')
            entry = None
    return "\n".join(out)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    old_path, new_path = argv
    try:
        with open(old_path) as f:
            old_text = f.read()
        old = json.loads(old_text)
        with open(new_path) as f:
            new = json.load(f)
    except (OSError, ValueError) as e:
        print(f"add_profile_probe: {e}", file=sys.stderr)
        return 1
    so, sn = old.get("source", {}), new.get("source", {})
    for k in ("model", "device_type", "seq_len"):
        if so.get(k) != sn.get(k):
            print(f"add_profile_probe: {k} differs ({so.get(k)!r} in {old_path}, "
                  f"{sn.get(k)!r} in {new_path}): not the same device class and model",
                  file=sys.stderr)
            return 1
    added = {}  # entry -> probes added to it
    for key, entry in so.get("entries", {}).items():
        med = entry.get("median_s", {})
        later = sn.get("entries", {}).get(key, {}).get("median_s", {})
        for probe, (base, most) in PROBES.items():
            if probe in med or probe not in later:
                continue
            if not (later.get(base, 0) > 0 and med.get(base, 0) > 0):
                continue
            ratio = later[probe] / later[base]
            if not 0 <= ratio <= most:
                print(f"add_profile_probe: {new_path}: {key}: {probe} over {base} is {ratio:g}, "
                      f"not from 0 to {most:g}", file=sys.stderr)
                return 1
            med[probe] = ratio * med[base]
            added.setdefault(key, []).append(probe)
    if not added:
        print(f"add_profile_probe: nothing to add to {old_path}", file=sys.stderr)
        return 0
    probes = sorted({p for ps in added.values() for p in ps}, key=list(PROBES).index)
    so.setdefault("added", []).append({
        "what": "median_s." + ", median_s.".join(probes) + " (each as its ratio to " +
                ", ".join(f"{PROBES[p][0]}" for p in probes) + ")",
        "entries": list(added), "from": new_path, "date": sn.get("date", "")})
    # written into the file's own text (sailor profile's layout: jansson, two spaces), so that
    # every figure it had keeps its digits and the change reads as what was added
    text = insert_lines(old_text, old, added)
    if json.loads(text) != old:
        print(f"add_profile_probe: {old_path}: not laid out as `sailor profile` writes it; "
              "nothing changed", file=sys.stderr)
        return 1
    with open(old_path, "w") as f:
        f.write(text)
    print(f"add_profile_probe: {old_path}: added {', '.join(probes)} to {', '.join(added)}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
