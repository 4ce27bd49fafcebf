#!/usr/bin/env bash
# GPT-2 BPE against a reference: tests/torch/bpe_reference.py trains a 300-merge byte-level BPE
# on English text plus a Unicode sample (accents, CJK, emoji, Arabic-Indic digits, tabs, runs of
# spaces, contractions), writes it as GPT-2's encoder.json + vocab.bpe, and encodes the text with
# OpenAI's encoder.py algorithm; `sailor data --tokenizer gpt2` must produce the same token ids.
# Needs a Python with the `regex` module (for \p{L}); skips (77) when none has it.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/lib/common.sh
py=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import regex' 2>/dev/null; then
    py=$candidate; break
  fi
done
[ -n "$py" ] || skip "no python3 with the 'regex' module for the reference BPE"
{ head -c 60000 data/text/fsf-licenses.txt
  printf '\nCafé crème, naïve résumé — Ünïcödé! 東京は晴れ。 Emoji 🚀🚀 and numbers 12345 ٣٤٥ x²  \n\n'
  printf "\tTabs\there   and  spaces  \nI'm sure they'll say it's 'quoted' O'Neil's.\n\n\n  end  "
} > "$work/text.txt"
"$py" tests/torch/bpe_reference.py "$work/text.txt" "$work" 300
"$SAILOR" data "$work/text.txt" -o "$work/ours.bin" --tokenizer gpt2 \
  --encoder "$work/encoder.json" --merges "$work/vocab.bpe"
"$py" - "$work/ours.bin" "$work/expected.txt" <<'PY'
import struct, sys
raw = open(sys.argv[1], "rb").read()
magic, version, width, vocab, tok, count = struct.unpack_from("<8sIIIIQ", raw, 0)
ours = [int.from_bytes(raw[32 + i * width:32 + (i + 1) * width], "little") for i in range(count)]
expected = [int(x) for x in open(sys.argv[2])]
if ours != expected:
    first = next((i for i, (a, b) in enumerate(zip(ours, expected)) if a != b), min(len(ours), len(expected)))
    print(f"MISMATCH: {len(ours)} tokens vs {len(expected)} expected; first difference at {first}")
    sys.exit(1)
print(f"{len(ours)} tokens identical to the reference GPT-2 encoder")
PY
