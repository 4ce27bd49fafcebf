#!/usr/bin/env python3
"""Hostile testbed descriptions for tests/integration/testbed_check_mutations.sh.

Usage: testbed_mutate.py OUT_DIR COUNT SEED_FILE...

Writes COUNT mutants of the seed descriptions (data/testbed/*.json) into OUT_DIR as m-NNNN.json
and one line per mutant to OUT_DIR/verdicts: "<file>\t<valid|invalid|unknown>\t<what was done>".
The verdict comes from this file's own reading of the rules scripts/testbed documents (a second
implementation, in Python, of the checks that scripts/testbed writes in jq), so a description the
script accepts against the rules, or refuses although it keeps them, is caught. "unknown" is for
bytes the two JSON parsers may read differently (jq 1.6 takes NaN for null and replaces invalid
UTF-8, Python does neither); only the form of the answer is checked for those.

Two kinds of mutation, chosen by a fixed random seed so every run tests the same inputs:
structural (replace, delete or add one node of the parsed description with a hostile value: wrong
types, empty and huge containers, out-of-range and non-finite numbers, names that are substrings
or extensions of valid ones, names with a newline, unknown keys, duplicates, too many hosts) and
byte-level (truncate, flip, insert or repeat bytes of the JSON text; a second document)."""
import json
import math
import os
import random
import re
import sys

ZONES = None  # sailor's zone names, from data/network/egress_usd_per_gb.json


def fullmatch(pattern, s):
    return isinstance(s, str) and re.fullmatch(pattern, s) is not None


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def valid(d):
    """True when d keeps every rule of scripts/testbed (usage text and its validation)."""
    if not isinstance(d, dict):
        return False
    if set(d) - {"schema", "name", "subnet", "classes", "links", "zones", "note"}:
        return False
    if d.get("schema") != "sailor.testbed/1":
        return False
    if not fullmatch(r"[a-z0-9]{1,8}", d.get("name")):
        return False
    if d.get("subnet") is not None and not fullmatch(
            r"10\.([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\.0\.0/16", d["subnet"]):
        return False
    classes = d.get("classes")
    if not isinstance(classes, dict) or not classes:
        return False
    for name, c in classes.items():
        if not fullmatch(r"[A-Za-z0-9_.-]{1,31}", name) or not isinstance(c, dict):
            return False
        if set(c) - {"cpu_cores"}:
            return False
        v = c.get("cpu_cores")
        if not is_num(v) or not 0.01 <= v <= 256:
            return False
    links = d.get("links")
    if not isinstance(links, dict) or set(links) - {"zone", "region", "world"}:
        return False
    for k in ("zone", "region", "world"):
        link = links.get(k)
        if not isinstance(link, dict) or set(link) - {"bandwidth_mbit", "latency_ms"}:
            return False
        b = link.get("bandwidth_mbit")
        if not is_num(b) or not 0.01 <= b <= 100000:
            return False
        lat = link.get("latency_ms")
        if lat is None or lat is False:  # jq's "// 0"
            lat = 0
        if not is_num(lat) or not 0 <= lat <= 10000:
            return False
    zones = d.get("zones")
    if not isinstance(zones, list) or not 1 <= len(zones) <= 250:
        return False
    seen_zones, seen_hosts, total = set(), set(), 0
    for z in zones:
        if not isinstance(z, dict) or set(z) - {"name", "region", "hosts"}:
            return False
        name = z.get("name")
        if not isinstance(name, str) or name not in ZONES or name in seen_zones:
            return False
        seen_zones.add(name)
        region = name.rsplit("-", 1)[0]
        if z.get("region") is not None and z.get("region") != region:
            return False
        hosts = z.get("hosts")
        if not isinstance(hosts, list) or not 1 <= len(hosts) <= 250:
            return False
        total += len(hosts)
        for h in hosts:
            if not isinstance(h, dict) or set(h) - {"name", "class", "slots"}:
                return False
            if not fullmatch(r"[a-z0-9][a-z0-9-]{0,19}", h.get("name")) or h["name"] in seen_hosts:
                return False
            seen_hosts.add(h["name"])
            if not isinstance(h.get("class"), str) or h["class"] not in classes:
                return False
            s = h.get("slots")
            if not is_num(s) or not 1 <= s <= 64 or s != math.floor(s):
                return False
    return total <= 1000


def hostile_values(rng, old):
    """Values a hostile or careless user might put where old was."""
    vals = [None, True, False, 0, -1, 0.0, 1e-300, 5e-324, 1e308, 1e400, -1e400, 2**63, 0.5,
            65, 64, 1, 0.01, 0.009, 100000, 100000.5, 256.01, 10000.1, "", " ", "x" * 300,
            "a\nb", "tab\there", "cpu", "us", "us-central1", "us-central1-a\n", "ü", "..",
            "$(reboot)", "a;b", [], {}, [[]], {"": {}}, [None] * 3, {"name": 1}]
    if isinstance(old, str):
        vals += [old + "\n", old[:-1], old + "x", old.upper(), old[1:], old + " ", "-" + old]
    if is_num(old):
        vals += [old * 10, -old, old + 0.5, str(old), [old]]
    if isinstance(old, list):
        vals += [old * 2, old[:0], old + [old[0]] if old else [1], old * 300]
    if isinstance(old, dict):
        vals += [dict(old, extra=1), {k: v for k, v in list(old.items())[1:]}, [old]]
    return rng.choice(vals)


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


def get(node, path):
    for p in path:
        node = node[p]
    return node


def structural(rng, doc):
    d = json.loads(json.dumps(doc))
    all_paths = list(paths(d))
    path = rng.choice(all_paths)
    what = "/".join(map(str, path)) or "(top)"
    op = rng.random()
    if not path:
        return hostile_values(rng, d), "replace top level"
    parent, key = get(d, path[:-1]), path[-1]
    if op < 0.55:
        parent[key] = hostile_values(rng, parent[key])
        return d, f"replace {what}"
    if op < 0.7:
        del parent[key]
        return d, f"delete {what}"
    if op < 0.8 and isinstance(parent, dict):
        parent[rng.choice(["nam", "slot", "Name", "extra", "latency", "hosts ", ""])] = 1
        return d, f"add a key beside {what}"
    if op < 0.9 and isinstance(parent, list):
        parent.append(json.loads(json.dumps(parent[key])))
        return d, f"duplicate {what}"
    # many hosts: a zone with 250 hosts, copied over zones
    zones = d.get("zones") if isinstance(d, dict) else None
    if isinstance(zones, list) and zones and isinstance(zones[0], dict):
        n = rng.choice([250, 251])
        zones[0]["hosts"] = [{"name": f"h{i}", "class": next(iter(d["classes"]), "x")
                              if isinstance(d.get("classes"), dict) else "x", "slots": 1}
                             for i in range(n)]
        for i in range(1, min(len(zones), 5)):
            if isinstance(zones[i], dict):
                zones[i]["hosts"] = [dict(h, name=f"z{i}h{k}") for k, h in
                                     enumerate(zones[0]["hosts"])]
        return d, f"{n} hosts per zone"
    parent[key] = hostile_values(rng, parent[key])
    return d, f"replace {what}"


def byte_level(rng, text):
    b = bytearray(text.encode())
    op = rng.randrange(6)
    if op == 0:
        cut = rng.randrange(len(b))
        return bytes(b[:cut]), f"truncate at {cut}"
    if op == 1:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256)
        return bytes(b), "overwrite bytes"
    if op == 2:
        i = rng.randrange(len(b))
        junk = rng.choice([b"\x00", b"\n", b"\"", b"\\", b",", b"}", b"]", b"\xff\xfe",
                           b"NaN", b"1e999", b"\\u0000", b"\\n"])
        return bytes(b[:i] + junk + b[i:]), f"insert {junk!r} at {i}"
    if op == 3:
        return bytes(b) + b" " + bytes(b), "two documents"
    if op == 4:
        return b"[" * 20000 + b"]" * 20000, "nested 20000 deep"
    i = rng.randrange(len(b))
    j = min(len(b), i + rng.randint(1, 40))
    return bytes(b[:i] + b[i:j] * rng.randint(2, 50) + b[j:]), "repeat a slice"


def verdict(raw):
    """valid / invalid / unknown for the bytes of a mutant."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "unknown"
    bad_constant = []

    def refuse(name):
        bad_constant.append(name)
        return None
    try:
        d = json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return "invalid"
    if bad_constant:
        return "unknown"
    return "valid" if valid(d) else "invalid"


def main():
    global ZONES
    out, count, seeds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "../../data/network/egress_usd_per_gb.json")) as f:
        ZONES = set(json.load(f))
    docs = []
    for s in seeds:
        with open(s) as f:
            docs.append(json.load(f))
    for d in docs:
        assert valid(d), f"seed {d.get('name')} breaks the rules as this file reads them"
    rng = random.Random(13)
    with open(os.path.join(out, "verdicts"), "w") as v:
        for n in range(count):
            doc = rng.choice(docs)
            if rng.random() < 0.7:
                d, what = structural(rng, doc)
                if rng.random() < 0.3:  # a second change on top of the first
                    d, what2 = structural(rng, d) if isinstance(d, dict) else (d, "")
                    what += "; " + what2
                raw = json.dumps(d, indent=1, allow_nan=False).encode() if not any(
                    isinstance(x, float) and not math.isfinite(x) for x in flatten(d)) \
                    else json.dumps(d).replace("Infinity", "1e999").encode()
            else:
                raw, what = byte_level(rng, json.dumps(doc, indent=1))
            name = f"m-{n:04d}.json"
            with open(os.path.join(out, name), "wb") as f:
                f.write(raw)
            v.write(f"{name}\t{verdict(raw)}\t{what}\n")


def flatten(node):
    yield node
    if isinstance(node, dict):
        for x in node.values():
            yield from flatten(x)
    elif isinstance(node, list):
        for x in node:
            yield from flatten(x)


if __name__ == "__main__":
    main()
