"""PyTorch side of bench/bench_train.sh: the same GPT-2-style model and training step as
`sailor train` (pre-LayerNorm blocks, causal attention, tanh-GELU MLP, tied head, AdamW with
weight decay on the matrices, gradient clipping at 1.0), written the way one writes it in
PyTorch 1.13 (nn.Linear/nn.LayerNorm/nn.Embedding, attention with matmul + masked softmax as in
nanoGPT without flash attention, F.cross_entropy), timed per optimizer step.

Run with /usr/bin/python3. Prints one JSON object: median and all step times, tokens/s,
peak RSS. Threads: torch.set_num_threads(T); the caller also sets OPENBLAS_NUM_THREADS=T,
since torch.set_num_threads does not reach the OpenBLAS that Debian's torch multiplies with.
"""
import argparse
import json
import math
import resource
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, nh, Fh):
        super().__init__()
        self.nh = nh
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.fc = nn.Linear(C, Fh)
        self.mproj = nn.Linear(Fh, C)

    def forward(self, x, mask):
        B, T, C = x.shape
        hs = C // self.nh
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.nh, hs).transpose(1, 2)
        k = k.view(B, T, self.nh, hs).transpose(1, 2)
        v = v.view(B, T, self.nh, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(mask[:T, :T] == 0, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.mproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, C, nh, Fh, S, V):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(S, C)
        self.blocks = nn.ModuleList([Block(C, nh, Fh) for _ in range(L)])
        self.ln_f = nn.LayerNorm(C)
        self.register_buffer("mask", torch.tril(torch.ones(S, S)))
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif "ln" in name and name.endswith("weight"):
                nn.init.ones_(p)
            else:
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for block in self.blocks:
            x = block(x, self.mask)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--max-seq", type=int, default=1024)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--foreach", type=int, default=1,
                    help="AdamW foreach implementation (1: the faster one here)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = GPT(a.layers, a.hidden, a.heads, 4 * a.hidden, a.max_seq, a.vocab)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "wte" not in n
             and "wpe" not in n]
    other = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "wte" not in n
                                                            and "wpe" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, foreach=bool(a.foreach))
    rng = np.random.default_rng(0)
    times = []
    for step in range(a.warmup + a.steps):
        tok = torch.from_numpy(rng.integers(0, 256, size=(a.micro_batch, a.seq_len + 1)))
        x, y = tok[:, :-1].contiguous(), tok[:, 1:].contiguous()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        dt = time.perf_counter() - t0
        if step >= a.warmup:
            times.append(dt)
        print(f"torch step {step + 1}: {dt * 1e3:.0f} ms, loss {loss.item():.4f}",
              file=sys.stderr)
    med = statistics.median(times)
    tokens = a.micro_batch * a.seq_len
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": a.threads,
                      "median_step_time_s": med, "step_times_s": times,
                      "tokens_per_s": tokens / med,
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


if __name__ == "__main__":
    main()
