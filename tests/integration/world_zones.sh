#!/usr/bin/env bash
# Zones of the world (issue 45): a pool on three continents and two clouds is planned, the plan
# simulated, and every link it crosses says where its bandwidth and its egress price come from;
# a user's zone file (--zones, or a pool's "zones") adds a zone, a price and a link; the SOSP'25
# artifact's five zones keep their figures; bad zone files, unknown zones and pools of more zones
# than the planner searches get one message naming the file and the field, exit 1.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_tool jq

# --- three continents, two clouds: planned, simulated, the links' sources named
pool=data/examples/pool-three-continents.json
"$SAILOR" plan --model LLAMA-3-8 --pool "$pool" -o "$work/plan.json" >"$work/plan.txt" ||
	die "plan of $pool failed: $(cat "$work/plan.txt")"
check "plan spans three continents" \
	"[ \$(jq -r '[.stages[].replicas[].zone] | unique | length' '$work/plan.json') -eq 3 ]"
"$SAILOR" simulate --plan "$work/plan.json" --json >"$work/sim.json" || die "simulate failed"
check "simulation names every link's class" \
	"jq -e '[.links[].class] | index(\"across-providers-across-continents\") and index(\"across-continents\")' '$work/sim.json' >/dev/null"
# each side pays its own provider's internet egress for what it sends (GCP 0.12, AWS 0.09)
check "gcp -> aws pays gcp's internet egress" \
	"jq -e '.links[] | select(.from_zone == \"us-central1-a\" and .to_zone == \"eu-central-1a\") | .egress_usd_per_gb == 0.12 and .egress_source == \"gcp list: internet\"' '$work/sim.json' >/dev/null"
check "aws -> gcp pays aws's internet egress" \
	"jq -e '.links[] | select(.from_zone == \"eu-central-1a\" and .to_zone == \"us-central1-a\") | .egress_usd_per_gb == 0.09 and .egress_source == \"aws list: internet\"' '$work/sim.json' >/dev/null"
check "a class link has a latency" \
	"jq -e '[.links[] | select(.class == \"across-continents\") | .latency_s > 0.01] | all' '$work/sim.json' >/dev/null"
check "egress is charged" "jq -e '.egress_cost_usd_per_iter > 0' '$work/sim.json' >/dev/null"
"$SAILOR" simulate --plan "$work/plan.json" >"$work/sim.txt" || die "simulate (text) failed"
check "the text names the links' sources" \
	"grep -q 'class across-providers-across-continents' '$work/sim.txt' && grep -q 'aws list: internet' '$work/sim.txt'"
"$SAILOR" plan --model LLAMA-3-8 --pool "$pool" --json >"$work/plan-json.json" || die "plan --json failed"
check "plan --json estimates carry the links" \
	"jq -e '.steps[0].estimate.links | length > 0' '$work/plan-json.json' >/dev/null"

# --- the SOSP'25 artifact's zones: the artifact's figures
"$SAILOR" simulate --model OPT-350 --plan data/examples/plan-opt350-a100-v100.json --json >"$work/a.json" ||
	die "simulate of the shipped plan failed"
check "artifact links are the artifact's fits and prices" \
	"jq -e '[.links[] | .bandwidth_source == \"SOSP'\"'\"'25 fit\" and (.egress_source == \"SOSP'\"'\"'25 artifact\" or .egress_source == \"same zone\")] | all' '$work/a.json' >/dev/null"

# --- the user's zones: --zones and a pool's "zones"
cat >"$work/lab.json" <<'EOF'
{"schema": "sailor.zones/1", "provider": "lab",
 "egress_usd_per_gb": {"world": 0.05, "internet": 0.05},
 "regions": [{"name": "zurich-lab", "continent": "europe", "city": "Zurich", "lat": 47.37,
              "lon": 8.54, "gpu_usd_per_hour": {"A100-80": {"on_demand": 1.5}}}],
 "zones": [{"name": "zurich-lab-1", "region": "zurich-lab"}],
 "links": [{"from": "zurich-lab-1", "to": "europe-west4", "bandwidth_bps": 1.25e9,
            "latency_s": 0.004}]}
EOF
cat >"$work/lab-pool.json" <<'EOF'
{"schema": "sailor.pool/1", "zones": "lab.json",
 "gpus": [{"gpu": "A100-80", "zone": "zurich-lab-1", "count": 8},
          {"gpu": "A100-40", "zone": "europe-west4-a", "count": 16}]}
EOF
"$SAILOR" plan --model OPT-350 --pool "$work/lab-pool.json" -o "$work/lab-plan.json" >/dev/null ||
	die "plan of a pool with its own zones failed"
"$SAILOR" simulate --plan "$work/lab-plan.json" --zones "$work/lab.json" --json >"$work/lab.json.out" ||
	die "simulate --zones failed"
check "the zone file's link is used and named" \
	"jq -e '[.links[] | select(.from_zone == \"zurich-lab-1\" and .to_zone == \"europe-west4-a\") | .bandwidth_source == \"zones file\" and .latency_s == 0.004] | all and length > 0' '$work/lab.json.out' >/dev/null"
expect_error without-the-zones 1 "unknown zone 'zurich-lab-1'" -- \
	"$SAILOR" simulate --plan "$work/lab-plan.json"
# grep reads all of --help (no -q): a reader that stops early would SIGPIPE the writer
check "--help tells of --zones" "$SAILOR simulate --help | grep -- '--zones FILE' >/dev/null"

# --- control hands the zones it planned with to its generations (a pool's inline zones, which
# the ranks never read): a short run on this host in a zone of the user's own
if command -v mpirun >/dev/null; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	export OMPI_MCA_rmaps_base_oversubscribe=1
	tokens "$work/t.bin"
	cat >"$work/cpool.json" <<'EOF'
{"schema": "sailor.pool/1",
 "zones": {"schema": "sailor.zones/1", "provider": "lab2",
           "egress_usd_per_gb": {"world": 0.05, "internet": 0.05},
           "regions": [{"name": "basel-lab", "continent": "europe", "lat": 47.56, "lon": 7.59}],
           "zones": [{"name": "basel-lab-1", "region": "basel-lab"}]},
 "gpus": [{"gpu": "cpu-fast", "zone": "basel-lab-1", "count": 2}]}
EOF
	printf '{"schema": "sailor.cluster/1", "hosts": [{"name": "localhost", "gpu": "cpu-fast", "zone": "basel-lab-1", "slots": 2}]}\n' >"$work/ccl.json"
	timeout 300 "$SAILOR" control --model gpt2-tiny --data "$work/t.bin" --cluster "$work/ccl.json" \
		--pool "$work/cpool.json" --gpus data/testbed/gpus-cpu.json \
		--profiles data/validation/profile-probes/geo3 --ckpt-dir "$work/ck" --steps 3 \
		--seq-len 32 --global-batch 4 >"$work/control.out" 2>&1
	check "control trains in a zone of a pool's own" \
		"grep -q '\"outcome\":\"complete\"' '$work/ck.run/events.jsonl' && [ -s '$work/ck.run/gen-1/zones-0.json' ]"
fi

# --- bad input
bad() { printf '%s\n' "$2" >"$work/$1.json"; echo "$work/$1.json"; }
plan=data/examples/plan-opt350-a100-v100.json
f=$(bad no-region '{"schema": "sailor.zones/1", "provider": "lab", "zones": [{"name": "lab-1"}]}')
expect_error zone-without-region 1 "zones '$f': zones[0].region: missing" -- \
	"$SAILOR" simulate --plan "$plan" --zones "$f"
f=$(bad negative '{"schema": "sailor.zones/1", "regions": [{"name": "europe-west4", "gpu_usd_per_hour": {"A100-40": {"on_demand": -2}}}]}')
expect_error negative-price 1 "zones '$f': regions[0].gpu_usd_per_hour.A100-40.on_demand: -2 is negative" -- \
	"$SAILOR" plan --model OPT-350 --pool data/examples/pool-a100-v100.json --zones "$f"
f=$(bad no-bandwidth '{"schema": "sailor.zones/1", "links": [{"from": "europe-west4-a", "to": "asia-east1-a", "latency_s": 0.1}]}')
expect_error link-without-bandwidth 1 "zones '$f': links[0].bandwidth_bps: missing" -- \
	"$SAILOR" simulate --plan "$plan" --zones "$f"
f=$(bad bad-egress '{"schema": "sailor.zones/1", "regions": [{"name": "europe-west4", "egress_usd_per_gb": {"world": -1}}]}')
expect_error negative-egress 1 "regions[0].egress_usd_per_gb.world: -1 is negative" -- \
	"$SAILOR" validate --model OPT-350 data/validation/clariden-gh200-opt350 --zones "$f"
f=$(bad pool-zone '{"schema": "sailor.pool/1", "gpus": [{"gpu": "A100-40", "zone": "europe-west4-z", "count": 4}]}')
expect_error unknown-zone 1 "gpus[0].zone: unknown zone 'europe-west4-z' (nearest: europe-west4-a, europe-west4-b, europe-west4-c" -- \
	"$SAILOR" plan --model OPT-350 --pool "$f"
printf ',Timestamp,A100-40_us-centrl1-a\n0,1,4\n' >"$work/trace.csv"
expect_error trace-zone 1 "column 3: unknown zone 'us-centrl1-a' (nearest: us-central1-a" -- \
	"$SAILOR" plan --model OPT-350 --trace "$work/trace.csv"
# more zones with GPUs than the planner searches at once
jq -n '{schema: "sailor.pool/1", gpus: [range(0; 33) as $i | {gpu: "A100-40", zone: (["us-east-1a","us-east-1b","us-east-1c","us-east-1d","us-east-1e","us-east-1f","us-east-2a","us-east-2b","us-east-2c","us-west-1a","us-west-1b","us-west-1c","us-west-2a","us-west-2b","us-west-2c","us-west-2d","eu-west-1a","eu-west-1b","eu-west-1c","eu-west-2a","eu-west-2b","eu-west-2c","eu-central-1a","eu-central-1b","eu-central-1c","ap-northeast-1a","ap-northeast-1b","ap-northeast-1c","ap-northeast-1d","ap-south-1a","ap-south-1b","ap-south-1c","sa-east-1a"][$i]), count: 1}]}' >"$work/wide.json"
expect_error too-many-zones 1 "the pool has GPUs in 33 zones: the planner searches at most 32" -- \
	"$SAILOR" plan --model OPT-350 --pool "$work/wide.json"
finish
