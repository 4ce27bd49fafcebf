#!/usr/bin/env bash
# profiles of both span3 classes (TP 1, mbs 1,2), each bracketed by a 3 s reference of machine_speed alone
set -uo pipefail
cd /work/main
out=$1; n=${2:-12}
mkdir -p $out
cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -o $out/.ms bench/testbed/machine_speed.c build/libsailor.a -ljansson -lopenblas -fopenmp -lpthread -lm
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ref() { SAILOR_DATA=data timeout 30 $out/.ms gpt2-tiny-six 1 4 100 3 | grep -v '^#' | awk -v t=$(date +%s.%N) -v tag=$1 '{print tag, t, $0}' >> $out/refs.txt; }
for i in $(seq 1 $n); do
  for c in "cpu-ninth ninth-f0 450" "cpu-threeeighths threeeighths-b0 200"; do
    set -- $c
    ref "$i-$1-before"
    s=$(date +%s.%N)
    nice -n -5 ./build/sailor profile --model gpt2-tiny-six --gpu $1 --gpus data/testbed/gpus-cpu-span3.json --tp 1 --mbs 1,2 --seq-len 88 --cluster /tmp/w/s11/cluster.json --host $2 --min-sample-ms $3 --repeats 1 -o $out/$i -q </dev/null
    e=$(date +%s.%N)
    echo "$i $1 $s $e $(jq -r '[.["1"]["1"]["1"][0]+.["1"]["1"]["1"][1], .["2"]["1"]["1"][0]+.["2"]["1"]["1"][1]] | map(.*1000) | @tsv' $out/$i/gpt2-tiny-six/$1.json)" >> $out/profiles.txt
    ref "$i-$1-after"
  done
done
echo done >> $out/profiles.txt
