#!/usr/bin/env bash
# cpu-ninth TP 1 (mbs 1,2) profiled alternately with the cores left to idle and with SCHED_IDLE spinners
set -uo pipefail
cd /work/main
out=$1; n=${2:-6}
mkdir -p $out
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source bench/testbed/spinners.sh
trap stop_spinners EXIT
for i in $(seq 1 $n); do
  for mode in idle busy; do
    if [ $mode = busy ]; then for c in 0 1; do start_spinner 300 chrt --idle 0 taskset -c $c; done; fi
    s=$(date +%s.%N)
    nice -n -5 ./build/sailor profile --model gpt2-tiny-six --gpu cpu-ninth --gpus data/testbed/gpus-cpu-span3.json --tp 1 --mbs 1,2 --seq-len 88 --cluster /tmp/w/s11/cluster.json --host ninth-f0 --min-sample-ms 450 --repeats 1 -o $out/$i-$mode -q </dev/null 2>/dev/null
    stop_spinners
    echo "$i $mode $s $(jq -r '[.["1"]["1"]["1"][0]+.["1"]["1"]["1"][1], .["2"]["1"]["1"][0]+.["2"]["1"]["1"][1]] | map(.*1000) | @tsv' $out/$i-$mode/gpt2-tiny-six/cpu-ninth.json)" >> $out/profiles.txt
  done
done
echo done >> $out/profiles.txt
