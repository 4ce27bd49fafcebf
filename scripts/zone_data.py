#!/usr/bin/env python3
"""Builds sailor's shipped zone catalogue and link classes from public sources.

Writes data/zones/gcp.json, aws.json, azure.json (schema sailor.zones/1) and
data/network/link_classes.json (schema sailor.link_classes/1), and prints the per-class link
figures and their fits against distance (docs/design/cost-models.md, "Zones the artifact never
measured").

The sources are read from one folder (--sources DIR), extracted from the public repositories
named below with git (this script never downloads anything):

  skyplane_throughput.csv          skyplane-project/skyplane (Apache-2.0), commit fe0670a0,
                                   skyplane/data/throughput.csv: iperf3 throughput grid (NSDI'23)
  skyplane_latency.csv             same repository, commit 945dca27, profiles/latency.csv: ping
  skyplane_aws_transfer_costs.csv  same repository, skyplane/data/aws_transfer_costs.csv: AWS
                                   data-transfer prices by region pair and to the internet
  gcp_pricing.yml                  Cyclenerd/google-cloud-pricing-cost-calculator (Apache-2.0),
                                   commit fd66b26, pricing.yml (Google Cloud Billing Catalog)
  aws_<family>.js                  tsaol/aws-gpu, commit 77fcd9f, data/<family>_instances.js
                                   (AWS on-demand prices per region, from instances.vantage.sh)
  regions.cue                      agonza05/cloudregioncodes, commit fc98afb, its file
                                   regions.cue (metro areas and their coordinates)

Only figures derived from these files are shipped, each file citing its sources and dates.
Usage: scripts/zone_data.py --sources DIR [--out data] [--report-only]
"""
import argparse
import csv
import json
import math
import os
import re
import statistics
import sys

CONTINENT_OF_COUNTRY = {
    "United States": "north-america", "Canada": "north-america", "Mexico": "north-america",
    "Brazil": "south-america", "Chile": "south-america",
    "Australia": "oceania", "New Zealand": "oceania",
    "South Africa": "africa",
    "Israel": "middle-east", "United Arab Emirates": "middle-east", "Qatar": "middle-east",
    "Saudi Arabia": "middle-east", "Bahrain": "middle-east",
    "China": "asia", "India": "asia", "Japan": "asia", "South Korea": "asia",
    "Indonesia": "asia", "Singapore": "asia", "Taiwan": "asia", "Malaysia": "asia",
    "Hong Kong": "asia", "Thailand": "asia",
}

# Where a metro of regions.cue contradicts the provider's own name for the region (AWS calls
# us-west-1 "US West (N. California)" and us-west-2 "US West (Oregon)"; the file has them the
# other way round), the region takes the coordinates of another metro of the same file.
METRO_FIXES = {"aws:us-west-1": "San Francisco", "aws:us-west-2": "Hermiston"}

SOSP25_REGIONS = {"us-central1", "us-west1"}  # the SOSP'25 artifact's zones live here


def continent(country):
    return CONTINENT_OF_COUNTRY.get(country, "europe")


def load_metros(path):
    """{provider:region: {city, country, lat, lon, zones}} and {metro name: (lat, lon, country)}."""
    text = open(path).read()
    regions, metros = {}, {}
    for block in re.split(r"\n\t\}, \{\n|\n\tcloud_regions: \[\{\n", text)[1:]:
        m = re.search(r'metro_area:\s*"([^"]*)"', block)
        c = re.search(r'country:\s*"([^"]*)"', block)
        la = re.search(r'latitude:\s*"([^"]*)"', block)
        lo = re.search(r'longitude:\s*"([^"]*)"', block)
        if not (m and c and la and lo):
            continue
        metros[m.group(1)] = (float(la.group(1)), float(lo.group(1)), c.group(1))
        for p in re.finditer(r'name:\s*"([^"]*)"\s*zones:\s*"([^"]*)"\s*cloud_region:\s*"([^"]*)"',
                             block):
            prov = {"Amazon Web Services": "aws", "Google Cloud": "gcp",
                    "Microsoft Azure": "azure"}.get(p.group(1))
            if prov:
                regions[prov + ":" + p.group(3)] = {
                    "city": m.group(1), "country": c.group(1), "lat": float(la.group(1)),
                    "lon": float(lo.group(1)), "zones": int(p.group(2) or 1)}
    fixed = {}
    for key, metro in METRO_FIXES.items():
        lat, lon, country = metros[metro]
        # the zone count goes with the metro the file gave it to
        other = next(k for k, v in regions.items() if v["city"] == metro and k in METRO_FIXES)
        fixed[key] = dict(regions[key], city=metro, lat=lat, lon=lon, country=country,
                          zones=regions[other]["zones"])
    regions.update(fixed)
    return regions


def distance_km(a, b):
    la1, lo1, la2, lo2 = map(math.radians, (a["lat"], a["lon"], b["lat"], b["lon"]))
    h = (math.sin((la2 - la1) / 2) ** 2 +
         math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2)
    return 2 * 6371.0 * math.asin(math.sqrt(h))


def r6(x):
    return float("%.6g" % x)


# ---- link classes (Skyplane's grid) ----

def sky_region(key):
    prov, reg = key.split(":", 1)
    if prov == "gcp" and reg.count("-") == 2:
        reg = reg.rsplit("-", 1)[0]
    return prov, reg


def link_class(metros, src, dst):
    (ps, rs), (pd, rd) = sky_region(src), sky_region(dst)
    a, b = metros[ps + ":" + rs], metros[pd + ":" + rd]
    same_cont = continent(a["country"]) == continent(b["country"])
    if ps != pd:
        return ("across-providers-same-continent" if same_cont
                else "across-providers-across-continents"), distance_km(a, b)
    if rs == rd:
        return None, 0.0  # a VM to itself over its external address: the VM's cap, no link
    return ("same-continent" if same_cont else "across-continents"), distance_km(a, b)


def linear_fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    b = sxy / sxx
    return my - b * mx, b, (sxy * sxy / (sxx * syy)) if syy else 0.0


def link_classes(src_dir, metros):
    """Per class: median throughput, RTT fit against distance; and the reference pair."""
    tput, rtt, ref_tput, ref_rtt = {}, {}, [], []
    ref = ("gcp:us-central1-a", "gcp:us-west1-a")
    for row in csv.DictReader(open(os.path.join(src_dir, "skyplane_throughput.csv"))):
        if (row["success"] != "True" or not row["throughput_received"] or
                row["src_tier"] != "PREMIUM" or row["dst_tier"] != "PREMIUM"):
            continue
        k, d = link_class(metros, row["src_region"], row["dst_region"])
        bps = float(row["throughput_received"]) / 8.0  # bits/s -> bytes/s
        if k:
            tput.setdefault(k, []).append((d, bps))
        if {row["src_region"], row["dst_region"]} == set(ref):
            ref_tput.append(bps)
    for row in csv.DictReader(open(os.path.join(src_dir, "skyplane_latency.csv"))):
        # the least round trip of the ping series: the path's own delay, without the queueing
        # spikes some series' averages carry (us-central1 -> us-west1: 32.8 ms least, one
        # series averaging 129 ms)
        if not row["min_rtt"] or row["src_tier"] != "PREMIUM" or row["dst_tier"] != "PREMIUM":
            continue
        k, d = link_class(metros, row["src_region"], row["dst_region"])
        if k:
            rtt.setdefault(k, []).append((d, float(row["min_rtt"]) / 1e3))
        if {row["src_region"], row["dst_region"]} == set(ref):
            ref_rtt.append(float(row["min_rtt"]) / 1e3)
    classes = {}
    for k in sorted(tput):
        bw = [b for _, b in tput[k]]
        a_bw, b_bw, r2_bw = linear_fit([d for d, _ in tput[k]], bw)
        a_rt, b_rt, r2_rt = linear_fit([d for d, _ in rtt[k]], [t for _, t in rtt[k]])
        q = statistics.quantiles(bw, n=4)
        classes[k] = {
            "bandwidth_bps": r6(statistics.median(bw)),
            "bandwidth_quartiles_bps": [r6(q[0]), r6(q[2])],
            "bandwidth_pairs": len(bw),
            "bandwidth_fit_vs_km": {"at_0_km_bps": r6(a_bw), "per_1000_km_bps": r6(b_bw * 1e3),
                                    "r2": round(r2_bw, 3)},
            "rtt_s": {"at_0_km": r6(a_rt), "per_1000_km": r6(b_rt * 1e3)},
            "rtt_median_s": r6(statistics.median(t for _, t in rtt[k])),
            "rtt_pairs": len(rtt[k]),
            "rtt_fit_r2": round(r2_rt, 3),
        }
    reference = {"bandwidth_bps": r6(statistics.mean(ref_tput)),
                 "rtt_s": r6(statistics.median(ref_rtt)),
                 "skyplane_pairs": ["gcp:us-central1-a", "gcp:us-west1-a"],
                 # the SOSP'25 artifact's fits of the same pair of regions, between A100 nodes
                 "sosp25_fits": {"gpu": "A100-40", "regions": ["us-central1", "us-west1"]}}
    return classes, reference


# ---- prices ----

def gcp_regions(src_dir):
    import yaml  # PyYAML: the source is YAML
    doc = yaml.safe_load(open(os.path.join(src_dir, "gcp_pricing.yml")))
    inst = doc["compute"]["instance"]
    # per GPU: the machine's price over its GPUs (the machines data/gpus.json's prices come from)
    machines = {"A100-40": ("a2-highgpu-1g", 1), "A100-80": ("a2-ultragpu-1g", 1),
                "H100-80": ("a3-highgpu-8g", 8)}
    gpu_regions = set()
    for name in ("a2-highgpu-1g", "a2-ultragpu-1g", "a3-highgpu-8g", "g2-standard-4"):
        gpu_regions |= set(inst.get(name, {}).get("cost", {}))
    prices = {}
    for gpu, (name, count) in machines.items():
        for region, cost in inst[name]["cost"].items():
            p = {"on_demand": r6(cost["hour"] / count)}
            if cost.get("hour_spot"):
                p["spot"] = r6(cost["hour_spot"] / count)
            prices.setdefault(region, {})[gpu] = p
    internet = {r: v["month"] for r, v in
                doc["compute"]["network"]["traffic"]["egress"]["internet"]["cost"]["0-1"].items()}
    return sorted(gpu_regions | SOSP25_REGIONS), prices, internet, doc["about"]["generated"]


def gcp_zone_letters(region):
    # Compute Engine's regions-and-zones page: most regions have zones a, b, c; these differ
    return {"us-central1": "abcf", "us-east1": "bcd", "europe-west1": "bcd"}.get(region, "abc")


def gcp_egress(region, cont):
    """GCP inter-region prices as Skyplane's gcp_pricing.py tabulates them (2022-11, from GCP's
    VPC pricing page), by the source's continent; Northern America as the SOSP'25 artifact
    prices us-central1 -> us-west1 (0.02). Middle East and Africa: no figure tabulated, the
    intercontinental price stands in."""
    within = {"north-america": 0.02, "europe": 0.02, "asia": 0.05, "south-america": 0.08,
              "oceania": 0.08}.get(cont, 0.08)
    world = 0.15 if cont == "oceania" or region == "asia-southeast2" else 0.08
    return within, world


def aws_prices(src_dir):
    families = {"p3": ("p3.2xlarge", "V100-16", 1), "p4d": ("p4d.24xlarge", "A100-40", 8),
                "p4de": ("p4de.24xlarge", "A100-80", 8), "p5": ("p5.48xlarge", "H100-80", 8)}
    prices, gpu_regions = {}, set()
    for fam in ("p3", "p4d", "p4de", "p5", "g4dn", "g5", "g6", "g6e"):
        text = open(os.path.join(src_dir, "aws_%s.js" % fam)).read()
        for inst in json.loads(text[text.index("["):text.rindex("]") + 1]):
            for region, p in inst["pricing"].items():
                if re.fullmatch(r"[a-z]+-[a-z]+-\d", region):  # regions, not Local Zones
                    gpu_regions.add(region)
                    if fam in families and inst["name"] == families[fam][0] and p.get("onDemand"):
                        gpu, count = families[fam][1], families[fam][2]
                        prices.setdefault(region, {})[gpu] = {
                            "on_demand": r6(p["onDemand"] / count)}
    return sorted(gpu_regions), prices


def aws_egress(src_dir):
    rows = list(csv.DictReader(open(os.path.join(src_dir, "skyplane_aws_transfer_costs.csv"))))
    internet = {r["src"]: float(r["cost"]) for r in rows if r["dst"] == "internet"}
    pairs = {(r["src"], r["dst"]): float(r["cost"]) for r in rows if r["dst"] != "internet"}
    return internet, pairs


AZURE_CONTINENT = {  # Skyplane's azure_cloud_provider.py lookup_continent (2023-05)
    "north-america": 0, "europe": 0, "asia": 1, "oceania": 1, "middle-east": 1, "africa": 1,
    "south-america": 2}


def azure_egress(cont):
    """Skyplane's tabulation of Azure's bandwidth price page (2023-05), first 10 TB."""
    g = AZURE_CONTINENT[cont]
    return {"continent": [0.02, 0.08, 0.181][g], "world": [0.05, 0.08, 0.16][g],
            "internet": [0.0875, 0.12, 0.181][g]}


def region_entry(name, meta, egress, prices):
    e = {"name": name, "continent": continent(meta["country"]), "city": meta["city"],
         "country": meta["country"], "lat": round(meta["lat"], 4), "lon": round(meta["lon"], 4)}
    if egress:
        e["egress_usd_per_gb"] = egress
    if prices:
        e["gpu_usd_per_hour"] = dict(sorted(prices.items()))
    return e


def build_gcp(src_dir, metros):
    regions, prices, internet, generated = gcp_regions(src_dir)
    out_regions, zones, pairs = [], [], []
    far = {"australia-southeast1", "australia-southeast2", "asia-southeast2"}
    conts = {}
    for r in regions:
        meta = metros.get("gcp:" + r)
        if not meta:
            print("gcp: no location for %s, left out" % r, file=sys.stderr)
            continue
        conts[r] = continent(meta["country"])
        within, world = gcp_egress(r, conts[r])
        eg = {"continent": within, "world": world}
        if r in internet:
            eg["internet"] = internet[r]
        p = None if r in SOSP25_REGIONS else prices.get(r)
        out_regions.append(region_entry(r, meta, eg, p))
        zones += [{"name": "%s-%s" % (r, z), "region": r} for z in gcp_zone_letters(r)]
    for s in conts:
        for d in far:
            if d in conts and conts[s] != conts[d] and s not in far:
                pairs.append({"from": s, "to": d, "usd_per_gb": 0.15})
    return {
        "schema": "sailor.zones/1", "provider": "gcp",
        "note": ("Google Cloud regions where Compute Engine prices GPU machines (a2, a3, g2), "
                 "with their zones (most regions a, b, c; us-central1 a, b, c, f; us-east1 and "
                 "europe-west1 b, c, d, as Compute Engine's regions-and-zones page lists them; "
                 "which zones of a region hold a GPU model is not in the sources, so every zone "
                 "of a GPU region is listed). gpu_usd_per_hour: on-demand and spot price of one "
                 "GPU as a share of the machine that carries it (A100-40: a2-highgpu-1g; "
                 "A100-80: a2-ultragpu-1g; H100-80: a3-highgpu-8g / 8), the same machines "
                 "data/gpus.json's prices come from; us-central1 and us-west1 keep data/gpus.json's "
                 "prices (the SOSP'25 artifact's zones). V100-16 (N1 machines with attached "
                 "GPUs) is not in the price source: not priced here, the catalogue's price "
                 "stands in and sailor says so. egress_usd_per_gb: zone = between zones of a "
                 "region (the SOSP'25 artifact's 0.01); continent/world = to another region of "
                 "the same / another continent, as Skyplane's gcp_pricing.py tabulates GCP's "
                 "VPC pricing page (2022-11, by the source's continent; Northern America as the "
                 "SOSP'25 artifact's us-central1 -> us-west1 price, 0.02; Middle East and "
                 "Africa have no tabulated figure: the intercontinental 0.08 stands in); to and "
                 "from Oceania and Jakarta across continents 0.15 (egress_pairs); internet = "
                 "Premium Tier internet egress, first tier (0-1 TiB), from the Billing Catalog."),
        "sources": {
            "regions": "https://cloud.google.com/compute/docs/regions-zones (zone letters); "
                       "regions with GPU machines from the price source below",
            "locations": "metro-area coordinates from agonza05/cloudregioncodes "
                         "regions.cue (2025-01-05)",
            "gpu_usd_per_hour": "Google Cloud Billing Catalog as exported by "
                                "Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml "
                                "(generated %s)" % generated,
            "egress_usd_per_gb": "internet: the same export; between regions: "
                                 "skyplane-project/skyplane skyplane/compute/gcp/gcp_pricing.py "
                                 "(2022-11-03) and data/network/egress_usd_per_gb.json (SOSP'25)",
        },
        "egress_usd_per_gb": {"zone": 0.01},
        "regions": out_regions, "zones": zones, "egress_pairs": pairs,
    }


def build_aws(src_dir, metros):
    regions, prices = aws_prices(src_dir)
    internet, pair_costs = aws_egress(src_dir)
    out_regions, zones, pairs, left_out, no_within = [], [], [], [], []
    conts = {r: continent(metros["aws:" + r]["country"]) for r in regions if "aws:" + r in metros}
    for r in regions:
        meta = metros.get("aws:" + r)
        if not meta or r not in internet:
            left_out.append(r)
            continue
        same = [c for (s, d), c in pair_costs.items() if s == r and d in conts and conts[d] == conts[r]]
        other = [c for (s, d), c in pair_costs.items() if s == r and d in conts and conts[d] != conts[r]]
        within = statistics.mode(same) if same else None
        world = statistics.mode(other) if other else None
        eg = {"internet": internet[r]}
        if within is not None:
            eg["continent"] = within
        if world is not None:
            eg["world"] = world
        if within is None:
            no_within.append(r)
        out_regions.append(region_entry(r, meta, eg, prices.get(r)))
        zones += [{"name": r + "abcdefgh"[i], "region": r} for i in range(meta["zones"])]
        for (s, d), c in sorted(pair_costs.items()):
            if s == r and d in conts and c != (within if conts[d] == conts[r] else world):
                pairs.append({"from": s, "to": d, "usd_per_gb": c})
    return {
        "schema": "sailor.zones/1", "provider": "aws",
        "note": ("AWS regions where EC2 prices GPU instances (p3, p4d, p4de, p5, g4dn, g5, g6, "
                 "g6e), with their Availability Zones named <region>a, b, ... by the zone count "
                 "of the location source (AWS maps these names to zones per account). "
                 "gpu_usd_per_hour: on-demand price of one GPU as a share of the instance "
                 "(V100-16: p3.2xlarge; A100-40: p4d.24xlarge / 8; A100-80: p4de.24xlarge / 8; "
                 "H100-80: p5.48xlarge / 8); the source has no spot prices. egress_usd_per_gb: "
                 "zone = 0.02, AWS's $0.01/GB out of one Availability Zone plus $0.01/GB into the "
                 "other, per GB sent; continent/world = the most common price from the region to "
                 "another region of the same / another continent, the pairs that differ listed "
                 "in egress_pairs; internet = the region's first-tier internet price. Left out, "
                 "newer than the egress source (no price to cite): %s. No price to another "
                 "region of the same continent in the source (sailor charges the "
                 "intercontinental one and says so): %s." % (", ".join(left_out) or "none",
                                                            ", ".join(no_within) or "none")),
        "sources": {
            "regions": "regions with GPU instance prices in the price source below",
            "locations": "metro-area coordinates from agonza05/cloudregioncodes "
                         "regions.cue (2025-01-05); us-west-1 and us-west-2 take "
                         "San Francisco's and Hermiston's (the file swaps them)",
            "gpu_usd_per_hour": "AWS Price List via instances.vantage.sh, as compiled in "
                                "tsaol/aws-gpu data/*_instances.js (2026-01-21)",
            "egress_usd_per_gb": "between regions and to the internet: AWS Price List "
                                 "(AWSDataTransfer) as compiled in skyplane-project/skyplane "
                                 "skyplane/data/aws_transfer_costs.csv (2022-11-01); between "
                                 "zones: https://aws.amazon.com/ec2/pricing/on-demand/ (Data "
                                 "Transfer within the same AWS Region: $0.01/GB in each "
                                 "direction), billed on both sides as measured in "
                                 "https://www.duckbillgroup.com/blog/aws-cross-az-data-transfer-costs-more-than-aws-says/",
        },
        "egress_usd_per_gb": {"zone": 0.02},
        "regions": out_regions, "zones": zones, "egress_pairs": pairs,
    }


def build_azure(metros):
    names = {  # Skyplane's Azure regions (azure_cloud_provider.py, 2023-05)
        "australiaeast", "australiacentral", "australiasoutheast", "australiacentral2",
        "qatarcentral", "eastasia", "japaneast", "japanwest", "koreacentral", "koreasouth",
        "southeastasia", "southindia", "centralindia", "westindia", "canadacentral",
        "canadaeast", "centralus", "eastus", "eastus2", "northcentralus", "westus", "westus2",
        "westus3", "southcentralus", "westcentralus", "brazilsouth", "brazilsoutheast",
        "francecentral", "germanywestcentral", "northeurope", "norwayeast", "swedencentral",
        "switzerlandnorth", "switzerlandwest", "westeurope", "uksouth", "ukwest",
        "uaenorth", "southafricanorth", "polandcentral", "italynorth", "israelcentral"}
    out_regions, zones = [], []
    for r in sorted(names):
        meta = metros.get("azure:" + r)
        if not meta:
            print("azure: no location for %s, left out" % r, file=sys.stderr)
            continue
        out_regions.append(region_entry(r, meta, azure_egress(continent(meta["country"])), None))
        zones.append({"name": r, "region": r})
    return {
        "schema": "sailor.zones/1", "provider": "azure",
        "note": ("Azure public regions, each its own zone, named as Azure names them "
                 "(westeurope): Azure numbers a region's availability zones per subscription, "
                 "so a pool names the region. Which regions offer N-series (GPU) VMs, and their "
                 "per-region prices, are not in a source this catalogue could cite: every region "
                 "is listed and none is priced (the catalogue's price per GPU type stands in, "
                 "and sailor says so). egress_usd_per_gb: Skyplane's tabulation of Azure's "
                 "bandwidth page, first 10 TB: between regions of a continent 0.02 (North "
                 "America, Europe), 0.08 (Asia, Oceania, Middle East, Africa), 0.181 (South "
                 "America); to other continents 0.05, 0.08, 0.16; to the internet 0.0875, 0.12, "
                 "0.181."),
        "sources": {
            "regions": "Azure regions of skyplane-project/skyplane "
                       "skyplane/compute/azure/azure_cloud_provider.py (2023-05-22)",
            "locations": "metro-area coordinates from agonza05/cloudregioncodes "
                         "regions.cue (2025-01-05)",
            "egress_usd_per_gb": "skyplane-project/skyplane "
                                 "skyplane/compute/azure/azure_cloud_provider.py "
                                 "get_transfer_cost (2023-05-22), from "
                                 "https://azure.microsoft.com/pricing/details/bandwidth/",
        },
        "regions": out_regions, "zones": zones,
    }


def build_links(classes, reference):
    r2_rtt = [c["rtt_fit_r2"] for c in classes.values()]
    r2_bw = [c["bandwidth_fit_vs_km"]["r2"] for c in classes.values()]
    return {
        "schema": "sailor.link_classes/1",
        "note": ("Links between zones the SOSP'25 artifact never measured, by class: "
                 "bandwidth_bps is the class's median iperf3 throughput (64 TCP connections "
                 "between general-purpose VMs, Premium network tier both ends) and rtt_s the "
                 "least-squares line of the class's least ping round trips against great-circle "
                 "distance (km). The simulator scales the artifact's measured GPU-node fits "
                 "between us-central1 and us-west1-b by bandwidth_bps / reference.bandwidth_bps "
                 "and adds half the round trip beyond the reference's to every message "
                 "(src/cluster/link_model.c). Within a class, distance explains much of the round "
                 "trip (r2 %.2f to %.2f) but not the bandwidth (r2 at most %.2f; the VMs' network "
                 "caps, 7 to 16 Gbit/s, bind first): the bandwidth is the class median whatever "
                 "the distance." % (min(r2_rtt), max(r2_rtt), max(r2_bw))),
        "sources": {
            "throughput": "skyplane-project/skyplane (Apache-2.0) skyplane/data/throughput.csv, "
                          "commit fe0670a0 (2022-11-01; measured 2022-01), Jain et al., "
                          "Skyplane, NSDI'23",
            "rtt": "skyplane-project/skyplane profiles/latency.csv, commit 945dca27 (2022-04-16)",
            "distance": "great-circle distance between the regions' coordinates of "
                        "data/zones/*.json",
        },
        "reference": reference,
        "classes": classes,
    }


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", required=True, help="folder of the extracted source files")
    ap.add_argument("--out", default="data", help="sailor's data folder (default: data)")
    ap.add_argument("--report-only", action="store_true", help="print the figures, write nothing")
    a = ap.parse_args()
    metros = load_metros(os.path.join(a.sources, "regions.cue"))
    classes, reference = link_classes(a.sources, metros)
    print("reference gcp us-central1-a <-> us-west1-a: %.3f GB/s, RTT %.1f ms" %
          (reference["bandwidth_bps"] / 1e9, reference["rtt_s"] * 1e3))
    for k, c in classes.items():
        f = c["bandwidth_fit_vs_km"]
        print("%-36s bandwidth median %.3f GB/s (IQR %.3f-%.3f, %d pairs; vs km r2 %.2f)  "
              "RTT %.1f ms + %.2f ms/1000 km (r2 %.2f, %d pairs; median %.1f ms)" %
              (k, c["bandwidth_bps"] / 1e9, c["bandwidth_quartiles_bps"][0] / 1e9,
               c["bandwidth_quartiles_bps"][1] / 1e9, c["bandwidth_pairs"], f["r2"],
               c["rtt_s"]["at_0_km"] * 1e3, c["rtt_s"]["per_1000_km"] * 1e3, c["rtt_fit_r2"],
               c["rtt_pairs"], c["rtt_median_s"] * 1e3))
    if a.report_only:
        return
    os.makedirs(os.path.join(a.out, "zones"), exist_ok=True)
    write_json(os.path.join(a.out, "network", "link_classes.json"), build_links(classes, reference))
    write_json(os.path.join(a.out, "zones", "gcp.json"), build_gcp(a.sources, metros))
    write_json(os.path.join(a.out, "zones", "aws.json"), build_aws(a.sources, metros))
    write_json(os.path.join(a.out, "zones", "azure.json"), build_azure(metros))


if __name__ == "__main__":
    main()
