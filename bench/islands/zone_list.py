#!/usr/bin/env python3
"""A zone list for scripts/testbed --data (it reads the zone names of network/egress_usd_per_gb.json)
holding every zone of a testbed description: scripts/testbed's own list knows two regions only.
The prices are GCP's between regions (0.02 $/GB, the SOSP'25 us pair; 0.01 within a region);
the testbed reads only the names.

usage: zone_list.py DESC.json DIR    writes DIR/network/egress_usd_per_gb.json"""
import json
import os
import sys

if len(sys.argv) != 3:
    sys.exit(__doc__)
names = [z["name"] for z in json.load(open(sys.argv[1]))["zones"]]
region = lambda n: n.rsplit("-", 1)[0]  # noqa: E731
os.makedirs(os.path.join(sys.argv[2], "network"), exist_ok=True)
with open(os.path.join(sys.argv[2], "network", "egress_usd_per_gb.json"), "w") as f:
    json.dump({a: {b: 0.0 if a == b else (0.01 if region(a) == region(b) else 0.02) for b in names}
               for a in names}, f, indent=1)
