#!/usr/bin/env bash
# A real-text corpus for the islands benchmark: about 21 MB of English prose, the Linux kernel's
# documentation as Debian ships it, cut into a training and a validation token file.
#
# Usage: bench/islands/corpus.sh OUTDIR [--val-fraction F] [--seq-len S] [--sailor BIN]
#   OUTDIR          created if missing; gets corpus.txt (the concatenated text), train.bin and
#                   val.bin (sailor token files, byte tokenizer: vocabulary 256, one token a byte)
#   --val-fraction  the last F of the tokens go to val.bin (default 0.01: about 210,000 tokens)
#   --seq-len       the sequence length training will use; each part must hold one window of
#                   S+1 tokens (default 1024)
#   --sailor        the sailor binary (default ./sailor of this checkout)
#
# What it does:
#  1. installs the Debian package linux-doc (the kernel's Documentation/ built by Sphinx: its
#     html/_sources/**/*.rst.txt are the reST sources as plain text) with apt-get, as
#     scripts/install-deps.sh installs packages (sudo when not root); skipped when installed;
#  2. concatenates those files in byte order of their paths (LC_ALL=C sort), leaving out
#     translations/ (Chinese, Japanese, Korean, Italian, Spanish), each file ending in a newline,
#     into OUTDIR/corpus.txt: the same package version gives the same bytes (its sha256 is
#     printed);
#  3. runs `sailor data OUTDIR/corpus.txt -o OUTDIR/train.bin --val-out OUTDIR/val.bin
#     --val-fraction F --seq-len S` (byte tokenizer): the validation file is the text's last F,
#     one contiguous tail (docs/data.md says why), so no token is in both files.
# The text is technical prose (reST markup, some code and tables), not a curated corpus; it is
# real English that a byte-level model learns visibly in a few hundred steps. Python's own
# documentation (python3.11-doc, _sources/*.rst.txt) holds only 11 MB, too little on its own.
# Nothing here is committed: OUTDIR is yours.
set -euo pipefail
usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; }
out="" fraction=0.01 seq=1024
root=$(cd "$(dirname "$0")/../.." && pwd)
sailor="$root/sailor"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --val-fraction) fraction=${2:?--val-fraction needs F}; shift 2 ;;
    --seq-len) seq=${2:?--seq-len needs S}; shift 2 ;;
    --sailor) sailor=${2:?--sailor needs BIN}; shift 2 ;;
    -*) echo "corpus.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "corpus.sh: one OUTDIR only (try --help)" >&2; exit 2; }
       out=$1; shift ;;
  esac
done
[ -n "$out" ] || { echo "corpus.sh: give OUTDIR (try --help)" >&2; exit 2; }
[ -x "$sailor" ] || { echo "corpus.sh: no sailor binary at '$sailor' (run make, or give --sailor)" >&2; exit 1; }

if ! grep -q "install ok installed" <<<"$(dpkg-query -W -f='${Status}' linux-doc 2>/dev/null)"; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "corpus.sh: installing linux-doc (about 37 MB to download, 190 MB installed)" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends linux-doc >/dev/null
fi
# linux-doc depends on the current linux-doc-<version>; the newest one installed is used
src=$(ls -d /usr/share/doc/linux-doc-*/html/_sources 2>/dev/null | sort -V | tail -n 1)
[ -n "$src" ] || { echo "corpus.sh: linux-doc is installed but has no html/_sources folder" >&2; exit 1; }
version=$(dpkg-query -W -f='${Version}' "$(basename "$(dirname "$(dirname "$src")")")")

mkdir -p "$out"
(cd "$src" && find . -type f -name '*.txt' -not -path './translations/*' -print0 |
   LC_ALL=C sort -z | xargs -0 sed -s '$a\') > "$out/corpus.txt"
files=$(cd "$src" && find . -type f -name '*.txt' -not -path './translations/*' | wc -l)
echo "corpus: $files files of $src (linux-doc $version), $(wc -c < "$out/corpus.txt") bytes," \
  "sha256 $(sha256sum "$out/corpus.txt" | cut -c1-16)..."
"$sailor" data "$out/corpus.txt" -o "$out/train.bin" --val-out "$out/val.bin" \
  --val-fraction "$fraction" --seq-len "$seq"
