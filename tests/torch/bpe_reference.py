"""Reference GPT-2 BPE for tests/integration/train_bpe_reference.sh.

Trains a small byte-level BPE on a text (pair counts over GPT-2's pre-tokenised words), writes
it as GPT-2's encoder.json + vocab.bpe, and encodes the text with OpenAI's algorithm
(gpt-2/src/encoder.py: the same regex, bytes_to_unicode, lowest-rank-first merging), printing
the token ids one per line. Needs the `regex` module (for \\p{L} and \\p{N}).

Usage: bpe_reference.py TEXT OUTDIR MERGES  -> OUTDIR/encoder.json, OUTDIR/vocab.bpe,
                                               OUTDIR/expected.txt
"""
import collections
import json
import os
import sys

import regex as re

PAT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def words(text, enc):
    for tok in re.findall(PAT, text):
        yield tuple(enc[b] for b in tok.encode("utf-8"))


def train(text, merges_wanted, enc):
    counts = collections.Counter(words(text, enc))
    merges = []
    vocab = {w: c for w, c in counts.items()}
    for _ in range(merges_wanted):
        pairs = collections.Counter()
        for w, c in vocab.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        new = {}
        for w, c in vocab.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] = new.get(tuple(out), 0) + c
        vocab = new
    return merges


def bpe(token, ranks):
    """encoder.py's Encoder.bpe, verbatim in substance."""
    word = tuple(token)
    while len(word) > 1:
        pairs = set(zip(word, word[1:]))
        bigram = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if bigram not in ranks:
            break
        first, second = bigram
        new, i = [], 0
        while i < len(word):
            try:
                j = word.index(first, i)
            except ValueError:
                new.extend(word[i:])
                break
            new.extend(word[i:j])
            i = j
            if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                new.append(first + second)
                i += 2
            else:
                new.append(word[i])
                i += 1
        word = tuple(new)
    return word


def main():
    text_path, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(text_path, "rb") as f:
        text = f.read().decode("utf-8")
    enc = bytes_to_unicode()
    merges = train(text, n, enc)
    encoder = {c: i for i, c in enumerate(enc[b] for b in range(256))}
    for a, b in merges:
        if a + b not in encoder:
            encoder[a + b] = len(encoder)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "encoder.json"), "w", encoding="utf-8") as f:
        json.dump(encoder, f, ensure_ascii=False)
    with open(os.path.join(out, "vocab.bpe"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")
    ranks = {m: i for i, m in enumerate(merges)}
    ids = []
    for tok in re.findall(PAT, text):
        ids.extend(encoder[s] for s in bpe("".join(enc[b] for b in tok.encode("utf-8")), ranks))
    with open(os.path.join(out, "expected.txt"), "w") as f:
        f.write("\n".join(map(str, ids)) + "\n")
    print(f"{len(merges)} merges, vocabulary {len(encoder)}, {len(ids)} tokens")


if __name__ == "__main__":
    main()
