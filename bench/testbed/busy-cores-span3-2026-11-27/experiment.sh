#!/bin/bash
# The paired experiment of this folder (bench/RESULTS.md, 2026-11-27 (7)): one span3 bring-up,
# its classes profiled twice, as usual (plain/) and with a SCHED_IDLE spin loop on every core
# (BUSY_CORES=1, busy/), then 8 of span3's plans run once, 20 steps, and predicted from each.
# usage (root): bench/testbed/busy-cores-span3-2026-11-27/experiment.sh   environment: OUT
set -u
cd "$(dirname "$0")/../../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
O=${OUT:-/tmp/busy-cores-span3}; mkdir -p $O/env/raw $O/plans
D=data/testbed/span3.json
trap 'scripts/testbed down $D >/dev/null 2>&1 || true' EXIT
scripts/testbed up $D -o $O/env/cluster.json
cp data/testbed/gpus-cpu-span3.json $O/env/gpus.json
for p in e01 e03 e04 e07 e09 e10 e11 e12; do cp bench/testbed/plans-span3/$p-*.json $O/plans/; done
echo "plain profiles $(date -u +%T)"
MODEL=gpt2-tiny-six NETWORK=0 bench/testbed/profile_testbed.sh $O/env/cluster.json $O/env/gpus.json $O/plain
echo "busy profiles $(date -u +%T)"
MODEL=gpt2-tiny-six BUSY_CORES=1 bench/testbed/profile_testbed.sh $O/env/cluster.json $O/env/gpus.json $O/busy
cp $O/busy/network.json $O/env/network.json
build/sailor data data/text/fsf-licenses.txt -o $O/env/tokens.bin >/dev/null
echo "runs $(date -u +%T)"
for p in $O/plans/*.json; do
  n=$(basename $p .json)
  nice -n -5 timeout 600 build/sailor run --model gpt2-tiny-six --data $O/env/tokens.bin --plan $p --cluster $O/env/cluster.json --gpus $O/env/gpus.json --seq-len 88 --steps 20 --lr 1e-3 --json > $O/env/raw/$n.out 2> $O/env/raw/$n.err || true
  python3 bench/testbed/run_to_validation.py $p $O/env/raw/$n.out "span3 busy-profile experiment $(date -u +%F)" $O/$n.json || echo "no $n"
done
echo "done $(date -u +%T)"
for v in plain busy; do echo "== $v"; build/sailor validate --model gpt2-tiny-six $O --profiles $O/$v/profiles --gpus $O/env/gpus.json --network $O/env/network.json --cluster $O/env/cluster.json; done
