"""PyTorch reference for sailor's GPT training (run with /usr/bin/python3, torch 1.13).

Builds the same GPT-2-style model in torch from the initial weights sailor exported
(--steps 0 --save-safetensors), feeds it the same token windows, and compares with what sailor
wrote (--dump-first-step and --json):
  1. logits of the first micro-batch, the loss and every parameter gradient of step 1
     (accumulated over the micro-batches, before clipping);
  2. the loss of each of the optimizer steps (AdamW + clip_grad_norm_ + warm-up/cosine lr).
Relative error of a tensor: ||ours - torch||_2 / ||torch||_2; of a loss: |ours - torch|/|torch|.
Exits 1 if any exceeds --tol (1e-4), printing every figure.

Usage: gpt_oracle.py --model M.json --tokens T.bin --init I.safetensors --dump D.safetensors
                     --losses L.jsonl --micro-batch B --global-batch G --seq-len S --steps N
                     --lr LR --min-lr LR --warmup-steps W --lr-decay-steps D --weight-decay WD
                     --beta1 B1 --beta2 B2 --eps E --grad-clip C
"""
import argparse
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

from sailor_io import batches, read_safetensors, read_tokens


class GPT(torch.nn.Module):
    """GPT-2: learned positions, pre-LayerNorm blocks, causal attention, tanh-GELU MLP, tied
    head. Parameters are held in a dict under sailor's names."""

    def __init__(self, cfg, weights):
        super().__init__()
        self.cfg = cfg
        self.p = torch.nn.ParameterDict()
        self.names = list(weights.keys())
        for name, value in weights.items():
            self.p[name.replace(".", "__")] = torch.nn.Parameter(torch.from_numpy(value.copy()))

    def param(self, name):
        return self.p[name.replace(".", "__")]

    def forward(self, idx):
        cfg = self.cfg
        B, T = idx.shape
        C, nh, L = cfg["hidden"], cfg["heads"], cfg["layers"]
        hs = C // nh
        wte = self.param("layer0.wte.weight")
        x = wte[idx] + self.param("layer0.wpe.weight")[:T]
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        for k in range(1, L + 1):
            P = lambda n: self.param(f"layer{k}.{n}")
            h = F.layer_norm(x, (C,), P("ln1.weight"), P("ln1.bias"), 1e-5)
            qkv = F.linear(h, P("attn.qkv.weight"), P("attn.qkv.bias"))
            q, kk, v = qkv.split(C, dim=2)
            q = q.view(B, T, nh, hs).transpose(1, 2)
            kk = kk.view(B, T, nh, hs).transpose(1, 2)
            v = v.view(B, T, nh, hs).transpose(1, 2)
            att = (q @ kk.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, C)
            x = x + F.linear(y, P("attn.proj.weight"), P("attn.proj.bias"))
            h = F.layer_norm(x, (C,), P("ln2.weight"), P("ln2.bias"), 1e-5)
            h = F.gelu(F.linear(h, P("mlp.fc.weight"), P("mlp.fc.bias")), approximate="tanh")
            x = x + F.linear(h, P("mlp.proj.weight"), P("mlp.proj.bias"))
        n = L + 1
        x = F.layer_norm(x, (C,), self.param(f"layer{n}.ln_f.weight"),
                         self.param(f"layer{n}.ln_f.bias"), 1e-5)
        return x @ wte.t()


def decays(name):
    """sailor's weight-decay rule (src/train/optimizer.h): matrices of linear layers only."""
    return name.endswith(("attn.qkv.weight", "attn.proj.weight", "mlp.fc.weight",
                          "mlp.proj.weight"))


def lr_at(a, step):
    """src/train/lr_schedule.h"""
    if step < a.warmup_steps:
        return a.lr * (step + 1) / a.warmup_steps
    if step >= a.lr_decay_steps:
        return a.min_lr
    ratio = (step - a.warmup_steps) / (a.lr_decay_steps - a.warmup_steps)
    return a.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (a.lr - a.min_lr)


def rel(ours, ref):
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(ours - ref) / max(np.linalg.norm(ref), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    for name in ("model", "tokens", "init", "dump", "losses"):
        ap.add_argument("--" + name, required=True)
    for name in ("micro-batch", "global-batch", "seq-len", "steps", "warmup-steps",
                 "lr-decay-steps"):
        ap.add_argument("--" + name, type=int, required=True)
    for name in ("lr", "min-lr", "weight-decay", "beta1", "beta2", "eps", "grad-clip"):
        ap.add_argument("--" + name, type=float, required=True)
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    with open(a.model) as f:
        cfg = json.load(f)
    init, _ = read_safetensors(a.init)
    dump, _ = read_safetensors(a.dump)
    tokens, _ = read_tokens(a.tokens)
    ours_losses = []
    with open(a.losses) as f:
        for line in f:
            obj = json.loads(line)
            if obj.get("event") == "step":
                ours_losses.append(obj["loss"])
    model = GPT(cfg, init)
    nmb = a.global_batch // a.micro_batch
    data = batches(tokens, a.micro_batch, a.seq_len)
    groups = [
        {"params": [model.param(n) for n in model.names if decays(n)],
         "weight_decay": a.weight_decay},
        {"params": [model.param(n) for n in model.names if not decays(n)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps,
                            foreach=False)
    worst = 0.0
    failures = []

    def check(what, err):
        nonlocal worst
        worst = max(worst, err)
        flag = "" if err <= a.tol else "   <-- above tolerance"
        print(f"{what:44s} rel err {err:.3e}{flag}")
        if err > a.tol:
            failures.append(what)

    for step in range(a.steps):
        opt.zero_grad(set_to_none=False)
        loss_sum = 0.0
        for m in range(nmb):
            x, y = next(data)
            logits = model(torch.from_numpy(x))
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), torch.from_numpy(y).view(-1))
            if step == 0 and m == 0:
                check("step 1 logits (first micro-batch)", rel(dump["logits"], logits.detach()))
            (loss / nmb).backward()
            loss_sum += loss.item()
        step_loss = loss_sum / nmb
        if step == 0:
            check("step 1 loss", rel(dump["loss"][0], step_loss))
            grad_worst = ("", 0.0)
            for n in model.names:
                e = rel(dump["grad." + n], model.param(n).grad)
                if e > grad_worst[1]:
                    grad_worst = (n, e)
                check(f"step 1 grad {n}", e)
            print(f"largest gradient error: {grad_worst[0]} {grad_worst[1]:.3e}")
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_([model.param(n) for n in model.names], a.grad_clip)
        for g in opt.param_groups:
            g["lr"] = lr_at(a, step)
        opt.step()
        if step < len(ours_losses):
            check(f"step {step + 1} loss ({ours_losses[step]:.6f} vs {step_loss:.6f})",
                  rel(ours_losses[step], step_loss))
        else:
            failures.append(f"sailor printed no loss for step {step + 1}")
    print(f"max relative error {worst:.3e} (tolerance {a.tol:g})")
    if failures:
        print("MISMATCH: " + ", ".join(failures))
        return 1
    print("sailor matches PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
