"""Readers for sailor's file formats, for the PyTorch reference scripts (numpy only).

Token files: 32-byte header '<8sIIIIQ' (magic b'SLTOKENS', version 1, token width 2|4,
vocabulary, tokenizer id, count) then the tokens (src/train/data.h).
safetensors: u64 header length, JSON header, F32 data (src/train/safetensors.h).
"""
import json
import struct

import numpy as np


def read_tokens(path):
    with open(path, "rb") as f:
        raw = f.read()
    magic, version, width, vocab, _tok, count = struct.unpack_from("<8sIIIIQ", raw, 0)
    assert magic == b"SLTOKENS" and version == 1, f"{path}: not a sailor token file"
    dtype = {2: np.uint16, 4: np.uint32}[width]
    tokens = np.frombuffer(raw, dtype=dtype, count=count, offset=32).astype(np.int64)
    return tokens, vocab


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=np.float32).reshape(t["shape"]).copy()
    return out, header.get("__metadata__", {})


def batches(tokens, micro_batch, seq):
    """Sailor's sequential loader: window w = tokens[w*seq : w*seq+seq+1], in order, wrapping
    to the first window after the last one (src/train/data.h)."""
    windows = (len(tokens) - 1) // seq
    w = 0
    while True:
        x = np.empty((micro_batch, seq), dtype=np.int64)
        y = np.empty((micro_batch, seq), dtype=np.int64)
        for b in range(micro_batch):
            if w >= windows:
                w = 0
            x[b] = tokens[w * seq:w * seq + seq]
            y[b] = tokens[w * seq + 1:w * seq + seq + 1]
            w += 1
        yield x, y
