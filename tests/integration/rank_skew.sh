#!/usr/bin/env bash
# bench/testbed/rank_skew.py, which replica of a stage comes last to its gradient sync: on made
# timelines whose arrivals and CPU are known, it finds the last rank, the spreads and the steps
# asked for, leaves a one-replica stage out, and names what is wrong with bad input.
set -u
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
[ -x "$PY" ] || skip "python3 is missing"
need_tool jq
skew=("$PY" bench/testbed/rank_skew.py)

# make_timeline FILE SOURCE: stage 0 of two replicas (ranks 0, 1; rank 1 of TP 2 has a TP
# partner, rank 2, that must not count), stage 1 of one (rank 3); five steps. Rank 1 reaches the
# sync 4 ms after rank 0 in steps 2-5 and 1 ms before it in step 1, and spends 2.2 ms of CPU a
# pass where rank 0 spends 2.0.
"$PY" - "$work/run.json" run "$work/sim.json" simulate <<'EOF'
import json, sys
def make(path, source):
    roles = [(0, 0, 0, 1), (1, 0, 0, 2), (2, 0, 1, 2), (3, 1, 0, 1)]  # rank, stage, tp_rank, tp
    ev = [{"ph": "M", "name": "process_name", "pid": r,
           "args": {"name": "rank %d" % r, "stage": s, "pipeline": 0, "tp_rank": t, "tp": tp,
                    "gpu": "cpu-fast"}} for r, s, t, tp in roles]
    for step in range(1, 6):
        base = step * 100000.0
        for r, s, t, tp in roles:
            cpu = 2200.0 if r in (1, 2) else 2000.0
            for k, name in enumerate(("forward", "backward")):
                ev.append({"ph": "X", "name": name, "pid": r, "tid": 0, "ts": base + k * 3000,
                           "dur": cpu, "args": {"step": step, "microbatch": 0, "cpu_us": cpu}})
            late = {0: 0, 1: 4000, 2: 4000, 3: 0}[r] if step > 1 else {1: -1000, 2: -1000}.get(r, 0)
            ev.append({"ph": "X", "name": "grad-sync", "pid": r, "tid": 0,
                       "ts": base + 10000 + late, "dur": 500,
                       "args": {"step": step, "microbatch": -1, "cpu_us": 100}})
    json.dump({"schema": "sailor.timeline/1", "source": source, "world_size": 4,
               "traceEvents": ev}, open(path, "w"))
make(sys.argv[1], sys.argv[2]); make(sys.argv[3], sys.argv[4])
EOF

"${skew[@]}" --json "$work/run.json" >"$work/all.json" || die "rank_skew.py failed on a made run"
check "steps 2 to 5 by default, one stage of two replicas (the TP partner and the lone stage left out)" \
	'jq -e ".[0].steps == [2,5] and (.[0].stages | length) == 1 and .[0].stages[0].steps == 4 and ([.[0].stages[0].ranks[].rank] == [0,1])" "$work/all.json" >/dev/null'
check "rank 1 last in every step, 4 ms apart, 10 % more CPU a pass" \
	'jq -e ".[0].stages[0] | .ranks[1].last_in_steps == 4 and .ranks[0].last_in_steps == 0 and (.arrival_spread_ms - 4 | fabs) < 1e-9 and (.cpu_spread_pct - 10 | fabs) < 1e-9" "$work/all.json" >/dev/null'
check "each rank's CPU against the stage's median (-4.8 / +4.8 %)" \
	'jq -e ".[0].stages[0].ranks | (.[0].cpu_vs_stage_pct + 4.7619 | fabs) < 1e-3 and (.[1].cpu_vs_stage_pct - 4.7619 | fabs) < 1e-3" "$work/all.json" >/dev/null'
"${skew[@]}" --json --steps 1:1 "$work/run.json" >"$work/one.json" || die "rank_skew.py --steps 1:1 failed"
check "--steps 1:1: rank 0 last, 1 ms apart" \
	'jq -e ".[0].stages[0] | .steps == 1 and .ranks[0].last_in_steps == 1 and (.arrival_spread_ms - 1 | fabs) < 1e-9" "$work/one.json" >/dev/null'
"${skew[@]}" "$work/run.json" >"$work/text.txt" || die "rank_skew.py (text) failed"
check "text output names the stage and the last rank" \
	'grep -q "stage 0 (4 steps): arrivals spread 4.0 ms" "$work/text.txt" && grep -q "last in 4 of 4 steps" "$work/text.txt"'

# bad input: one message naming what to fix, nothing on stdout; exit status 2 for the usage, 1
# for the data
echo '{' >"$work/broken.json"
expect_error "no timeline given" 2 "the following arguments are required: RUN.json" -- "${skew[@]}"
expect_error "a file that is not JSON" 1 "rank_skew.py: '$work/broken.json' is not JSON" -- "${skew[@]}" "$work/broken.json"
expect_error "a missing file" 1 "cannot read" -- "${skew[@]}" "$work/none.json"
expect_error "the model's timeline" 1 "is a timeline of \`sailor simulate\`, expected one of \`sailor run\`" \
	-- "${skew[@]}" "$work/sim.json"
expect_error "--steps not FIRST:LAST" 1 "takes FIRST:LAST" -- "${skew[@]}" --steps 3 "$work/run.json"
expect_error "--steps past the run" 1 "has steps 1 to 5" -- "${skew[@]}" --steps 9:12 "$work/run.json"
expect_error "an unknown option" 2 "unrecognized arguments: --fast" -- "${skew[@]}" --fast "$work/run.json"
finish
