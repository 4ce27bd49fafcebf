#!/usr/bin/env bash
# Installs the Debian packages sailor needs to build, test and benchmark.
# Idempotent: packages already present are skipped, so the README and .ci/run can both call it.
# Usage: scripts/install-deps.sh [--with-torch] [--with-fuzz]
#   --with-torch  also installs python3-torch (the tests' reference implementation; never a
#                 runtime dependency of sailor itself).
#   --with-fuzz   also installs clang and its libFuzzer/sanitizer runtime (`make fuzz`).
set -euo pipefail

packages=(build-essential pkg-config libjansson-dev libcmocka-dev libopenblas-dev
          openmpi-bin libopenmpi-dev libmicrohttpd-dev gnuplot-nox
          jq iproute2   # jq, iproute2: scripts/testbed (JSON descriptions; ip netns, tc)
          slurm-wlm munge)  # scripts/testbed up --slurm and the --slurm tests (a real slurmctld/slurmd;
                            # srun --mpi=pmix dlopens libpmix.so, from libpmix-dev via libopenmpi-dev)
for arg in "$@"; do
  case "$arg" in
    --with-torch) packages+=(python3 python3-torch python3-numpy) ;;
    --with-fuzz) packages+=(clang libclang-rt-14-dev libomp-dev) ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "install-deps: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  case "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" in
    *"install ok installed"*) ;;
    *) missing+=("$p") ;;
  esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
