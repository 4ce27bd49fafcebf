#!/usr/bin/env bash
# `sailor plan --sync islands|auto` end to end: the emitted island plan is one `sailor simulate`
# takes as it is, its estimate is simulate's, its effective figures are
# the trained ones times the token value, auto ranks it against the synchronous plans, and bad
# input (--max-inner-steps < 1, islands on one zone, sosp25, a token value out of (0, 1] or a
# malformed file) gets one message and exit 1 or 2, nothing on stdout. A region too small to hold
# the model leaves the others' depth alone.
set -u
source tests/lib/common.sh
tmp=$work
py=$PY
pool=data/examples/pool-geo-3-regions.json

# --- auto on a pool over 3 regions: the island plan, as simulate predicts it ---
"$SAILOR" plan --model OPT-350 --pool "$pool" --sync auto --json -o "$tmp/plan.json" \
  >"$tmp/planned.json" || die "plan --sync auto failed"
"$SAILOR" simulate --model OPT-350 --plan "$tmp/plan.json" --json >"$tmp/simulated.json" ||
  die "simulate of the emitted island plan failed"
"$SAILOR" plan --model OPT-350 --pool "$pool" --json >"$tmp/sync.json" || die "plan failed"
"$py" - "$tmp/planned.json" "$tmp/simulated.json" "$tmp/sync.json" data/islands/token_value.json <<'PY' || die "plan --sync auto: wrong figures"
import json, sys
step = json.load(open(sys.argv[1]))["steps"][0]
simulated = json.load(open(sys.argv[2]))
sync = json.load(open(sys.argv[3]))["steps"][0]
assert step["estimate"] == simulated, "estimate differs from simulate --json"
s = step["sync"]
assert s["mode"] == "islands", s
isl = step["plan"]["islands"]
assert len(isl["pipelines"]) == s["islands"] >= 2
assert 0 < s["token_value"] <= 1
assert abs(s["effective_tokens_per_s"] - s["trained_tokens_per_s"] * s["token_value"]) <= 1e-6 * s["effective_tokens_per_s"]
assert abs(s["trained_tokens_per_s"] - simulated["tokens_per_s"]) <= 1e-6 * simulated["tokens_per_s"]
h = isl["inner_steps"] if isinstance(isl["inner_steps"], list) else [isl["inner_steps"]]
assert max(h) <= 50 and h[0] == max(h)
assert s["inter_zone_links"] and all(l["bytes_per_1k_tokens"] > 0 for l in s["inter_zone_links"])
# auto chose it over the best synchronous plan: its effective throughput is higher
assert s["effective_tokens_per_s"] > sync["estimate"]["tokens_per_s"], (s, sync["estimate"]["tokens_per_s"])
assert sync["sync"]["mode"] == "every-step"
PY

# --- the user's token value decides: at 0.05 an island token is not worth it ---
"$SAILOR" plan --model OPT-350 --pool "$pool" --sync auto --island-token-value 0.05 --json \
  >"$tmp/low.json" || die "plan --island-token-value 0.05 failed"
"$py" - "$tmp/low.json" <<'PY' || die "a low token value still chose islands"
import json, sys
s = json.load(open(sys.argv[1]))["steps"][0]["sync"]
assert s["mode"] == "every-step", s
# the synchronous plan's own bytes between zones (it spans two regions), per 1,000 tokens
assert s["inter_zone_links"] and all(l["bytes_per_1k_tokens"] > 0 for l in s["inter_zone_links"]), s
PY
# --max-inner-steps bounds H
"$SAILOR" plan --model OPT-350 --pool "$pool" --sync islands --max-inner-steps 3 -o "$tmp/h3.json" \
  >/dev/null || die "plan --max-inner-steps 3 failed"
"$py" -c "import json,sys; h=json.load(open(sys.argv[1]))['islands']['inner_steps']; h=[h] if isinstance(h, int) else h; assert max(h) <= 3, h" \
  "$tmp/h3.json" || die "--max-inner-steps 3 not honoured"

# --- a region too small to hold the model does not keep the others shallow: 16 + 16 V100-16 in
# two regions hold GPT-Neo-2.7 only 4 stages deep; one more V100 in a third region holds nothing,
# and the islands of the two large regions are the plan, as without it ---
cat >"$tmp/pool-small-region.json" <<'JSON'
{"schema": "sailor.pool/1", "gpus": [
 {"gpu": "V100-16", "zone": "us-central1-a", "count": 16},
 {"gpu": "V100-16", "zone": "us-west1-b", "count": 16},
 {"gpu": "V100-16", "zone": "europe-west4-a", "count": 1}]}
JSON
"$SAILOR" plan --model GPT-Neo-2.7 --pool "$tmp/pool-small-region.json" --sync islands --json \
  >"$tmp/small-region.json" || die "plan --sync islands with a region too small for the model failed"
"$py" - "$tmp/small-region.json" <<'PY' || die "a region too small for the model changed the island plan"
import json, sys
step = json.load(open(sys.argv[1]))["steps"][0]
assert step["sync"]["mode"] == "islands" and step["sync"]["islands"] == 2, step["sync"]
plan = step["plan"]
assert len(plan["stages"]) > 1, "the islands were kept one stage deep"
zones = {r["zone"] for st in plan["stages"] for r in st["replicas"]}
assert zones == {"us-central1-a", "us-west1-b"}, zones
PY

# --- bad input: one message, exit 1 or 2, nothing on stdout ---
expect_fail() { # status pattern args...
  local want=$1 pattern=$2 rc=0
  shift 2
  "$SAILOR" plan --model OPT-350 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = "$want" ] || die "plan $*: exit $rc, want $want ($(cat "$tmp/err"))"
  [ ! -s "$tmp/out" ] || die "plan $*: wrote to stdout on failure"
  grep -q -- "$pattern" "$tmp/err" || die "plan $*: no '$pattern' in: $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -le 2 ] || die "plan $*: more than one message: $(cat "$tmp/err")"
}
expect_fail 2 "max-inner-steps" --pool "$pool" --sync islands --max-inner-steps 0
expect_fail 2 "is not every-step, islands or auto" --pool "$pool" --sync sometimes
expect_fail 2 "sosp25 cost model has no islands" --pool "$pool" --sync islands --cost-model sosp25
expect_fail 2 "add --sync islands or --sync auto" --pool "$pool" --max-inner-steps 10
expect_fail 2 "out of (0, 1]" --pool "$pool" --sync auto --island-token-value 1.5
expect_fail 2 "out of (0, 1]" --pool "$pool" --sync auto --island-token-value 0
printf '{"schema": "sailor.token_value/1", "measurements": [{"islands": 2, "inner_steps": 10, "wire": "fp32", "value": 1.2}]}' >"$tmp/tv-range.json"
expect_fail 1 "measurements\[0\].value: 1.2 is out of (0, 1\]" --pool "$pool" --sync auto --island-token-value "$tmp/tv-range.json"
printf '{"schema": "sailor.token_value/1", "measurements": [' >"$tmp/tv-broken.json"
expect_fail 1 "token values '$tmp/tv-broken.json'" --pool "$pool" --sync auto --island-token-value "$tmp/tv-broken.json"
printf '{"schema": "sailor.pool/1", "gpus": [{"gpu": "A100-40", "zone": "us-central1-a", "count": 8}]}' >"$tmp/one-zone.json"
expect_fail 1 "no slow link to cut" --pool "$tmp/one-zone.json" --sync islands
printf '{"schema": "sailor.pool/1", "gpus": [{"gpu": "A100-40", "zone": "us-central1-a", "count": 8}, {"gpu": "V100-16", "zone": "us-west1-b", "count": 1}]}' >"$tmp/small-island.json"
expect_fail 1 "fewer than two of its regions (or zones) can hold the model" --model LLAMA-3-8 --pool "$tmp/small-island.json" --sync islands
# auto on one zone: the synchronous plan, no complaint
"$SAILOR" plan --model OPT-350 --pool "$tmp/one-zone.json" --sync auto >/dev/null 2>"$tmp/err" ||
  die "plan --sync auto on one zone failed: $(cat "$tmp/err")"
echo "plan_islands: ok"
