#!/usr/bin/env bash
# The held-out loss (--val-data, --eval-every; src/train/heldout.h, src/runtime/runner_eval.c):
#  - `sailor data --val-fraction` cuts the token stream into a training file and the last round(F N)
#    tokens as a validation file: the two hold every token once, in order, none in both;
#  - `sailor train`'s val loss after a step equals PyTorch's mean cross-entropy of the saved
#    weights over the same windows (tests/torch/heldout_loss.py, 1e-5 relative; a partial last
#    micro-batch included), and evaluating changes no training loss (bit-identical step lines);
#  - `sailor run`'s val loss equals `sailor train`'s at the same steps within 1e-5 relative on a
#    PP, a TP, a mixed-TP (PP + DP, TP 1 and 2) and a TP 1+2+4 plan with uneven micro-batches,
#    and its training losses are the same with and without evaluation, exactly;
#  - `sailor control` passes the options to its generations, logs "eval" events, serves the
#    newest val loss in /metrics and /status, and checks the file before it starts anything.
# Bad input of the options is in train_bad_input.sh and run_bad_input.sh. About 25 s here.
set -uo pipefail  # no -e: expect_error runs commands that fail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
need_python numpy
use_mpi
ctl=""
at_exit '[ -n "$ctl" ] && kill -9 "$ctl" 2>/dev/null; kill_work_processes'

# --- sailor data --val-fraction: sizes and disjointness
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/all.bin" >/dev/null || die "sailor data"
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/t.bin" --val-fraction 0.05 > "$work/data.out" ||
  die "sailor data --val-fraction"
cat "$work/data.out"
[ -f "$work/t.val.bin" ] || die "--val-out's default is not t.val.bin"
"$SAILOR" data data/text/fsf-licenses.txt -o "$work/t2.bin" --val-fraction 0.05 \
  --val-out "$work/v2.bin" --seq-len 32 >/dev/null || die "sailor data --val-out"
cmp -s "$work/t.val.bin" "$work/v2.bin" || fail "--val-out names the same validation file"
"$PY" - "$work/all.bin" "$work/t.bin" "$work/t.val.bin" <<'PY' || fail "the split"
import sys
sys.path.insert(0, "tests/torch")
from sailor_io import read_tokens
(a, va), (t, vt), (v, vv) = (read_tokens(p) for p in sys.argv[1:])
n = len(a)
assert len(v) == int(0.05 * n + 0.5), (len(v), n)
assert len(t) + len(v) == n, (len(t), len(v), n)
assert (a[:len(t)] == t).all() and (a[len(t):] == v).all(), "not the head and the tail"
assert va == vt == vv == 256
print(f"ok   split: {len(t)} + {len(v)} = {n} tokens, the validation file the last {len(v)}")
PY

# --- sailor train: against PyTorch, and unchanged by evaluating
hp=(--model gpt2-tiny --data "$work/t.bin" --seq-len 32 --micro-batch 4 --global-batch 8 --seed 5
    --lr 1e-3 --steps 4 --shuffle --threads 1 --json)
val=(--val-data "$work/t.val.bin" --eval-every 2 --val-windows 10)
"$SAILOR" train "${hp[@]}" "${val[@]}" --save-safetensors "$work/w4.safetensors" > "$work/train-eval.jsonl" ||
  die "train with evaluation"
"$SAILOR" train "${hp[@]}" > "$work/train-plain.jsonl" || die "train"
grep '"event":"eval"' "$work/train-eval.jsonl"
[ "$(grep -c '"event":"eval"' "$work/train-eval.jsonl")" = 2 ] || fail "train: not 2 evaluations in 4 steps"
steps() { grep '"event":"step"' "$1" | sed 's/,"step_time_s".*//'; }
[ "$(steps "$work/train-eval.jsonl")" = "$(steps "$work/train-plain.jsonl")" ] &&
  echo "ok   train: the step losses are bit-identical with and without evaluation" ||
  fail "train: evaluating changed the training losses"
"$PY" tests/torch/heldout_loss.py --weights "$work/w4.safetensors" --tokens "$work/t.val.bin" \
  --seq-len 32 --windows 10 --events "$work/train-eval.jsonl" --step 4 || fail "train against torch"

# --- sailor run: the val loss of train at the same steps, on several plans
val_losses() { grep '"event":"eval"' "$1" | sed 's/.*"step":\([0-9]*\),"val_loss":\([^,]*\),.*/\1 \2/'; }
rhp=(--data "$work/t.bin" --seq-len 32 --steps 4 --seed 5 --lr 1e-3 --shuffle --json)
"$SAILOR" train --model gpt2-tiny "${rhp[@]}" --micro-batch 2 --global-batch 8 --threads 1 \
  "${val[@]}" > "$work/ref.jsonl" || die "the reference train"
for plan in 03-pp2 04-tp2 06-pp2-dp2-mixed-tp-two-zones 09-pp2-dp3-tp124-uneven-mb; do
  timeout 120 "$SAILOR" run --plan "tests/runtime/plans/$plan.json" "${rhp[@]}" "${val[@]}" \
    > "$work/run-$plan.jsonl" 2> "$work/run-$plan.err" || { cat "$work/run-$plan.err"; die "run $plan failed"; }
  "$PY" - "$plan" <(val_losses "$work/ref.jsonl") <(val_losses "$work/run-$plan.jsonl") <<'PY' || fail "run $plan"
import sys
ref = [l.split() for l in open(sys.argv[2])]
run = [l.split() for l in open(sys.argv[3])]
assert len(ref) == 2 and [r[0] for r in ref] == [r[0] for r in run], (ref, run)
worst = max(abs(float(a[1]) - float(b[1])) / abs(float(a[1])) for a, b in zip(ref, run))
print(f"{'ok' if worst <= 1e-5 else 'FAIL'}   run {sys.argv[1]}: val loss after steps "
      f"{', '.join(r[0] for r in run)} within {worst:.1e} of train's")
sys.exit(worst > 1e-5)
PY
done
timeout 120 "$SAILOR" run --plan tests/runtime/plans/06-pp2-dp2-mixed-tp-two-zones.json "${rhp[@]}" \
  > "$work/run-plain.jsonl" 2>/dev/null || die "run without evaluation failed"
[ "$(steps "$work/run-06-pp2-dp2-mixed-tp-two-zones.jsonl")" = "$(steps "$work/run-plain.jsonl")" ] &&
  echo "ok   run: the step losses are bit-identical with and without evaluation" ||
  fail "run: evaluating changed the training losses"

# --- sailor control: the options go to every generation; eval events, /metrics, /status
cat > "$work/cluster.json" <<'JSON'
{"schema": "sailor.cluster/1", "hosts": [{"name": "a", "address": "localhost", "gpu": "A100-40",
 "zone": "us-central1-a", "slots": 2}], "launch": {"mpirun_args": ["--mca", "mpi_yield_when_idle", "1"]}}
JSON
echo '{"schema": "sailor.pool/1", "gpus": [{"gpu": "A100-40", "zone": "us-central1-a", "count": 1}]}' > "$work/pool.json"
ctl_args=(control --model gpt2-tiny --data "$work/t.bin" --seq-len 32 --global-batch 8
          --cluster "$work/cluster.json" --pool "$work/pool.json" --ckpt-dir "$work/ckpt")
expect_error "control: --eval-every without --val-data" 2 "--eval-every needs --val-data" \
  "$SAILOR" "${ctl_args[@]}" --steps 4 --eval-every 2
"$PY" -c 'import struct, sys; open(sys.argv[1], "wb").write(struct.pack("<8sIIIIQ", b"SLTOKENS", 1, 2, 256, 0, 200) + bytes(400))' "$work/other-tok.bin"
expect_error "control: a validation file of another tokenizer" 1 "was written with the other tokenizer" \
  "$SAILOR" "${ctl_args[@]}" --steps 4 --eval-every 2 --val-data "$work/other-tok.bin"
[ ! -e "$work/ckpt.run" ] || fail "control made its run directory for a bad --val-data"
if command -v curl >/dev/null; then
  "$SAILOR" "${ctl_args[@]}" --steps 100000 --run-dir "$work/run" --http 127.0.0.1:0 \
    --val-data "$work/t.val.bin" --eval-every 3 --val-windows 8 > "$work/ctl.out" 2> "$work/ctl.err" &
  ctl=$!
  for _ in $(seq 300); do grep -q '"event":"eval"' "$work/run/events.jsonl" 2>/dev/null && break; sleep 0.1; done
  grep -m 1 '"event":"eval"' "$work/run/events.jsonl" || { cat "$work/ctl.err"; die "control: no eval event in 30 s"; }
  port=$(grep -o '"event":"http".*"port":[0-9]*' "$work/run/events.jsonl" | grep -o '[0-9]*$')
  sleep 0.5  # /metrics is republished every 0.25 s
  curl -sf "http://127.0.0.1:$port/metrics" > "$work/metrics.txt"
  curl -sf "http://127.0.0.1:$port/status" > "$work/status.json"
  kill -TERM "$ctl"; wait "$ctl" || true; ctl=""
  grep -E '^sailor_val_loss [0-9.]+$' "$work/metrics.txt" && grep -E '^sailor_val_step [0-9]+$' "$work/metrics.txt" ||
    fail "control: /metrics has no sailor_val_loss"
  grep -q '"val_loss": [0-9]' "$work/status.json" || fail "control: /status has no val_loss"
  grep -q -- '"event":"eval","step":3,' "$work/run/gen-1/stdout.jsonl" || fail "control: the generation did not evaluate"
else
  echo "curl is missing: control's /metrics not checked"
fi
finish
