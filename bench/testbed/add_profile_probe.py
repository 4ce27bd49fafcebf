#!/usr/bin/env python3
"""Adds to a layer profile what a later profile of the same device class measured and the older
one lacks: the attention core timed alone (source.entries["mbs M tp T"].median_s
.recompute_attention, what selective recomputation adds to a block's backward; `sailor profile`
measures it since 2026-11-27). The later profile's figure is carried over as its share of that
profile's block forward, times the older profile's own forward_block: the share is the
mechanism's (how much of a block's time its memory-bound core takes), the older file keeps the
machine's speed of its own bring-up. Only entries of the same (mbs, tp), model, device type and
sequence length; everything the older file measured is kept as it is; what was added is listed
in source.added (one list, however many carries the file had), with the file and date it comes
from.

usage: bench/testbed/add_profile_probe.py OLD_PROFILE.json NEWER_PROFILE.json  (OLD is rewritten)"""
import json
import sys


def insert_lines(text, profile, entries):
    """text with each entry's recompute_attention and source.added inserted as lines."""
    lines = text.split("\n")
    out, entry, in_source = [], None, False
    for line in lines:
        stripped = line.strip()
        if in_source and stripped.startswith('"added": ['):
            continue  # what an earlier carry added: written again, with this one's, below
        out.append(line)
        if stripped == '"source": {':
            in_source = True
            pad = line[:len(line) - len(line.lstrip())] + "  "
            out.append(pad + '"added": ' + json.dumps(profile["source"]["added"]) + ",")
        elif in_source and stripped.endswith(": {") and stripped[1:-4] in entries:
            entry = stripped[1:-4]
        elif entry and stripped == '"median_s": {':
            pad = line[:len(line) - len(line.lstrip())] + "  "
            value = profile["source"]["entries"][entry]["median_s"]["recompute_attention"]
            out.append(f'{pad}"recompute_attention": {value!r},')
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
    added = []
    for key, entry in so.get("entries", {}).items():
        med = entry.get("median_s", {})
        later = sn.get("entries", {}).get(key, {}).get("median_s", {})
        if "recompute_attention" in med or "recompute_attention" not in later:
            continue
        if not (later.get("forward_block", 0) > 0 and med.get("forward_block", 0) > 0):
            continue
        share = later["recompute_attention"] / later["forward_block"]
        if not 0 <= share <= 1:
            print(f"add_profile_probe: {new_path}: {key}: recompute_attention is not within "
                  "forward_block", file=sys.stderr)
            return 1
        med["recompute_attention"] = share * med["forward_block"]
        added.append(key)
    if not added:
        print(f"add_profile_probe: nothing to add to {old_path}", file=sys.stderr)
        return 0
    so.setdefault("added", []).append({
        "what": "median_s.recompute_attention (as its share of forward_block)",
        "entries": added, "from": new_path, "date": sn.get("date", "")})
    # written into the file's own text (sailor profile's layout: jansson, two spaces), so that
    # every figure it had keeps its digits and the change reads as what was added
    text = insert_lines(old_text, old, added)
    if json.loads(text) != old:
        print(f"add_profile_probe: {old_path}: not laid out as `sailor profile` writes it; "
              "nothing changed", file=sys.stderr)
        return 1
    with open(old_path, "w") as f:
        f.write(text)
    print(f"add_profile_probe: {old_path}: added to {', '.join(added)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
