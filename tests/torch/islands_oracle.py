"""PyTorch reference of sailor's islands (DiLoCo between groups of pipelines), written from
docs/design/islands.md alone; run with /usr/bin/python3 (torch 1.13, numpy).

What it computes. From sailor's initial weights (`sailor train ... --steps 0 --save-safetensors`,
same seed as the run) and the plan (its pipelines' micro-batch counts, micro_batch, global_batch
and its "islands" section), it trains every island with the model of gpt_oracle.py:
  - data: step c reads global batch c (micro-batches c*M .. c*M+M-1 of the sequential loader,
    M = global_batch / micro_batch); pipeline j takes micro-batches first[j] .. first[j]+mb[j]-1
    of it (plan/roles.h); island i trains its pipelines' micro-batches;
  - inner steps: island i makes its k-th inner step of round r (k = 0..H_i-1) at step
    c = r*H_0 + floor(k*H_0/H_i), with the learning rate of step c; loss of each micro-batch
    scaled by 1/M_i; clip by the island's gradient norm; AdamW with per-island moments whose
    bias correction counts the island's own inner steps;
  - fragments: the tensors in sl_gpt order cut into F contiguous fragments (the boundary rule of
    the spec); island i syncs fragment f after its own inner step s when
    (s + floor(f*H_i/F)) mod H_i == 0, fragments due after one step in order of f;
  - outer step of a fragment: D_i = theta_f - theta_i_f, T_i = tokens since the island's last
    sync of f; avg = sum_i (T_i / sum_j T_j) * dec(enc(D_i)) accumulated in fp32 in island
    order, encoded once more; nothing applied when sum T = 0; else torch.optim.SGD(lr=eta,
    momentum=mu, nesterov=True, dampening=0, weight_decay=0) on theta_f with gradient avg
    (nesterov=False when mu = 0, which torch requires and which is the same update);
  - landing: tau = 0: theta_i_f <- theta_f right after the sync; tau >= 1: after the island's
    inner step s+tau, theta_i_f <- alpha*theta_f + (1-alpha)*theta_i_f (D_i is the snapshot of
    step s); landings due after a step come before that step's syncs (they concern other
    fragments, as tau < H_i, so the order changes no figure);
  - the end: every island lands the fragments in flight (in the order started), then syncs every
    fragment f = 0..F-1 once more, blocking, with the tokens since its last sync. The result is
    the global weights theta.
With one island (or a plan without "islands") there is no outer step: the run is the
synchronous run (the spec's "with one island the run is the synchronous run, bit for bit").

The islands are simulated one after another, each advancing until it needs an outer step that
not every island has contributed to (a landing); the figures do not depend on that order. A
configuration whose syncs would wait on each other in a cycle, or whose islands would make
different numbers of syncs of a fragment, is refused (exit 2): the spec leaves its result
undefined.

Reports island 0's loss, learning rate and gradient norm of every step (what `sailor run`'s step
lines carry) and the final global weights. Compares, when given, with sailor's step lines
(--losses, `sailor run --json`) and its final checkpoint (--ckpt, values only) or another set of
weights (--weights, a safetensors file such as this script's --dump-weights): losses by
|a - b| / |b|, the learning rate by the same, weights by ||a - b|| / ||b|| over the whole model,
b being this reference; tolerance --tol (1e-5). With --ckpt the checkpoint's step must be
--steps and its data position the synchronous run's (steps * global_batch windows read: the
spec's "the data stream is read exactly as in a synchronous run"). --tol-grad-norm (default:
--tol) applies to the gradient norm; a negative value only prints it. Every figure is printed.

--dump-losses FILE writes the reference's step lines (the format of `sailor run --json`, so
compare_runs.py and --losses read it), --dump-weights FILE the final theta as safetensors, so
that two configurations of the reference can be compared with each other.

--self-test checks the reference against itself on the plan's islands (which must share one H
in the checks that need it): a second, lock-step implementation of DiLoCo with F = 1 (all
islands stepping together, the outer optimizer written out as m <- mu*m + avg,
theta <- theta - eta*(avg + mu*m), and with eta = 1, mu = 0 the average of the islands' weights
itself, sum_i w_i theta_i) must agree with the general one within 1e-6, and fragments that all
sync at every step (H = 1, F = 3) must equal F = 1 bit for bit. See self_test() for the cases.

Wire: fp32 and bf16 are reproduced exactly. int8 blocks of 256 values are cut here along each
fragment's whole vector, while the runtime cuts them along its lane pieces (which depend on the
parallel layout): an int8 run agrees only within the format's error bound.

Not supported: --shuffle (the reference reads windows in order), plans in the SOSP'25 format.

Usage: islands_oracle.py --plan P.json --model M.json --tokens T.bin --init I.safetensors
                         --steps N --seq-len S [--lr LR --min-lr LR --warmup-steps W
                         --lr-decay-steps D --weight-decay WD --beta1 B1 --beta2 B2 --eps E
                         --grad-clip C] [--global-batch G]
                         [--losses L.jsonl] [--ckpt C.ckpt | --weights W.safetensors]
                         [--tol 1e-5] [--tol-grad-norm X] [--dump-losses F] [--dump-weights F]
                         [--self-test] [--quiet]
Defaults of the hyper-parameters are sailor's (`sailor train -h`): lr 6e-4, min-lr lr/10,
warm-up 0, decay over --steps, weight decay 0.1, betas 0.9/0.95, eps 1e-8, clip 1.0.
Exit status: 0 every comparison within tolerance (or nothing to compare), 1 a mismatch (or a
missing step line), 2 bad usage or input, or a configuration the spec leaves undefined.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "runtime"))
from gpt_oracle import GPT, decays, lr_at  # noqa: E402
from sailor_io import read_safetensors, read_tokens  # noqa: E402
from compare_runs import read_checkpoint  # noqa: E402

ISLAND_DEFAULTS = {"inner_steps": 50, "outer_lr": 0.7, "outer_momentum": 0.9, "wire": "fp32",
                   "fragments": 1, "overlap_steps": 0, "merge": 0.5}
ISLAND_FIELDS = set(ISLAND_DEFAULTS) | {"pipelines"}
WIRES = ("fp32", "bf16", "int8")


class Refused(Exception):
    """Bad input, or a configuration whose result docs/design/islands.md leaves undefined."""


# ------------------------------------------------------------------------------------------
# The plan: micro-batches per pipeline, islands


def plan_pipelines(plan, path):
    """Micro-batches per pipeline. Only sailor.plan/1: microbatches_per_pipeline when given,
    else M / D each (M must then be a multiple of D), plan/microbatch_share.h's rule for our
    format; the SOSP'25 format's 'as evenly as possible' share is not implemented."""
    if plan.get("schema") != "sailor.plan/1":
        raise Refused(f"plan '{path}': only sailor.plan/1 plans are supported")
    stages = plan["stages"]
    counts = []
    for stage in stages:
        counts.append(sum(int(r.get("count", 1)) for r in stage["replicas"]))
    if len(set(counts)) != 1:
        raise Refused(f"plan '{path}': stages have different replica counts {counts}")
    return counts[0]


def microbatch_counts(plan, path, global_batch):
    D = plan_pipelines(plan, path)
    mbs = int(plan["micro_batch"])
    if global_batch % mbs:
        raise Refused(f"plan '{path}': global batch {global_batch} is not a multiple of "
                      f"micro_batch {mbs}")
    M = global_batch // mbs
    if "microbatches_per_pipeline" in plan:
        counts = [int(x) for x in plan["microbatches_per_pipeline"]]
        if len(counts) != D or min(counts) < 1 or sum(counts) != M:
            raise Refused(f"plan '{path}': microbatches_per_pipeline {counts} must be {D} "
                          f"counts >= 1 summing to {M}")
    else:
        if M % D:
            raise Refused(f"plan '{path}': {M} micro-batches cannot be shared evenly by {D} "
                          f"pipelines (give microbatches_per_pipeline)")
        counts = [M // D] * D
    return mbs, M, counts


def parse_islands(plan, path, D):
    """The islands section with its defaults; without it, one island of every pipeline."""
    sec = plan.get("islands")
    if sec is None:
        sec = {"pipelines": [list(range(D))]}
    unknown = set(sec) - ISLAND_FIELDS
    if unknown:
        raise Refused(f"plan '{path}': islands: unknown fields {sorted(unknown)}")
    cfg = dict(ISLAND_DEFAULTS)
    cfg.update(sec)
    pipes = [[int(j) for j in isl] for isl in cfg["pipelines"]]
    flat = sorted(j for isl in pipes for j in isl)
    if flat != list(range(D)) or any(not isl for isl in pipes):
        raise Refused(f"plan '{path}': islands.pipelines {pipes} must share the pipelines "
                      f"0..{D - 1} among non-empty islands, each pipeline once")
    if 0 not in pipes[0]:
        raise Refused(f"plan '{path}': islands.pipelines: pipeline 0 must be in the first "
                      f"island")
    n = len(pipes)
    H = cfg["inner_steps"]
    H = [int(h) for h in H] if isinstance(H, list) else [int(H)] * n
    if len(H) != n or min(H) < 1:
        raise Refused(f"plan '{path}': islands.inner_steps {H} must be one H >= 1 or {n} of them")
    if max(H) != H[0]:
        raise Refused(f"plan '{path}': islands.inner_steps {H}: island 0's must be the largest")
    tau = int(cfg["overlap_steps"])
    if tau < 0 or (n > 1 and tau >= min(H)):
        raise Refused(f"plan '{path}': islands.overlap_steps {tau} must be >= 0 and below the "
                      f"fewest inner steps {min(H)}")
    if cfg["wire"] not in WIRES:
        raise Refused(f"plan '{path}': islands.wire '{cfg['wire']}': choose {', '.join(WIRES)}")
    alpha = float(cfg["merge"])
    if not 0.0 <= alpha <= 1.0:
        raise Refused(f"plan '{path}': islands.merge {alpha} must be in [0, 1]")
    return {"pipelines": pipes, "H": H, "eta": float(cfg["outer_lr"]),
            "mu": float(cfg["outer_momentum"]), "wire": cfg["wire"],
            "F": int(cfg["fragments"]), "tau": tau, "alpha": alpha}


# ------------------------------------------------------------------------------------------
# Tensors and fragments


def gpt_order(cfg):
    """Tensor names in sl_gpt order (src/train/gpt_layers.c): layer 0's token and position
    tables, each block's tensors, the final norm. The head's copy of the tied table is not a
    tensor of its own."""
    names = ["layer0.wte.weight", "layer0.wpe.weight"]
    block = ["ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
             "attn.proj.bias", "ln2.weight", "ln2.bias", "mlp.fc.weight", "mlp.fc.bias",
             "mlp.proj.weight", "mlp.proj.bias"]
    for k in range(1, cfg["layers"] + 1):
        names += [f"layer{k}.{n}" for n in block]
    n = cfg["layers"] + 1
    return names + [f"layer{n}.ln_f.weight", f"layer{n}.ln_f.bias"]


def fragment_starts(sizes, F):
    """b_0 = 0; b_f (f = 1..F-1) = the smallest t with p_t >= f*N/F, raised to at least
    b_{f-1}+1 and lowered to at most T-(F-f). p_t = sum of the sizes before t; t runs over
    0..T (p_T = N, so a t always exists); f*N/F is compared exactly (F*p_t >= f*N)."""
    T, N = len(sizes), sum(sizes)
    if not 1 <= F <= T:
        raise Refused(f"islands.fragments {F} must be between 1 and the model's {T} tensors")
    prefix = [0]
    for n in sizes:
        prefix.append(prefix[-1] + n)
    b = [0]
    for f in range(1, F):
        t = next(t for t in range(T + 1) if F * prefix[t] >= f * N)
        t = max(t, b[-1] + 1)
        t = min(t, T - (F - f))
        b.append(t)
    b.append(T)
    assert all(b[f] < b[f + 1] for f in range(F)), b  # every fragment holds a tensor
    return b


# ------------------------------------------------------------------------------------------
# The wire


def bf16_round(x):
    """fp32 -> the upper 16 bits rounded to nearest even -> fp32."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def int8_round(x, block=256):
    """Blocks of 256 values, s = max|x|/127 (fp32), q = rint(x/s) in -127..127, decoded q*s.
    Blocks are cut along x (the runtime cuts them along its pieces: see the module doc)."""
    out = np.empty_like(x)
    for b in range(0, x.size, block):
        v = x[b:b + block]
        s = np.float32(np.max(np.abs(v)) / np.float32(127.0))
        if s == 0:
            out[b:b + block] = 0
            continue
        q = np.clip(np.rint(v / s), -127, 127)
        out[b:b + block] = (q * s).astype(np.float32)
    return out


def wire(x, kind):
    """dec(enc(x)) for a fp32 vector."""
    if kind == "fp32":
        return x
    if kind == "bf16":
        return bf16_round(x)
    return int8_round(x)


# ------------------------------------------------------------------------------------------
# The training of the islands


class Setup:
    """Everything the runs share: model, data, hyper-parameters, the plan's islands."""

    def __init__(self, a, plan, plan_path):
        self.a = a
        with open(a.model) as f:
            self.cfg = json.load(f)
        self.init, _ = read_safetensors(a.init)
        self.names = gpt_order(self.cfg)
        if sorted(self.names) != sorted(self.init):
            raise Refused(f"'{a.init}': tensors {sorted(set(self.names) ^ set(self.init))} "
                          f"differ from the model's")
        self.sizes = [self.init[n].size for n in self.names]
        self.tokens, _ = read_tokens(a.tokens)
        self.seq = a.seq_len
        self.windows = (len(self.tokens) - 1) // self.seq
        G = plan.get("global_batch")
        if G is None:
            if a.global_batch is None:
                raise Refused(f"plan '{plan_path}' gives no global_batch: pass --global-batch")
            G = a.global_batch
        elif a.global_batch is not None and a.global_batch != G:
            raise Refused(f"--global-batch {a.global_batch} differs from plan '{plan_path}''s "
                          f"global_batch {G}")
        self.global_batch = int(G)
        self.mbs, self.nmb, self.counts = microbatch_counts(plan, plan_path, self.global_batch)
        self.first = [sum(self.counts[:j]) for j in range(len(self.counts))]
        if self.windows < self.mbs:
            raise Refused(f"'{a.tokens}': fewer windows than one micro-batch")
        self.islands = parse_islands(plan, plan_path, len(self.counts))

    def microbatch(self, c, m):
        """Micro-batch m of global batch c: windows (g*mbs + b) mod windows, g = c*M + m."""
        g = c * self.nmb + m
        w = (g * self.mbs + np.arange(self.mbs)) % self.windows
        idx = w[:, None] * self.seq + np.arange(self.seq)[None, :]
        return (torch.from_numpy(self.tokens[idx]), torch.from_numpy(self.tokens[idx + 1]))

    def island_microbatches(self, pipes):
        return [m for j in sorted(pipes) for m in range(self.first[j],
                                                        self.first[j] + self.counts[j])]


class Island:
    """One island's model and AdamW (torch), trained on its pipelines' micro-batches."""

    def __init__(self, setup, index, pipes, H):
        self.setup, self.index, self.H = setup, index, H
        self.mbs_list = setup.island_microbatches(pipes)
        self.M = len(self.mbs_list)
        self.tokens_per_step = self.M * setup.mbs * setup.seq
        self.model = GPT(setup.cfg, setup.init)
        names = setup.names
        a = setup.a
        self.params = [self.model.param(n) for n in names]
        groups = [
            {"params": [self.model.param(n) for n in names if decays(n)],
             "weight_decay": a.weight_decay},
            {"params": [self.model.param(n) for n in names if not decays(n)],
             "weight_decay": 0.0},
        ]
        self.opt = torch.optim.AdamW(groups, lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps,
                                     foreach=False)

    def inner_step(self, c):
        """One AdamW step on this island's micro-batches of global batch c; returns (mean
        loss, gradient norm before clipping, lr)."""
        a = self.setup.a
        self.opt.zero_grad(set_to_none=False)
        loss_sum = 0.0
        for m in self.mbs_list:
            x, y = self.setup.microbatch(c, m)
            logits = self.model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
            (loss / self.M).backward()
            loss_sum += loss.item()
        if a.grad_clip > 0:
            norm = float(torch.nn.utils.clip_grad_norm_(self.params, a.grad_clip))
        else:
            norm = math.sqrt(sum(float(torch.sum(p.grad.double() ** 2)) for p in self.params))
        lr = lr_at(a, c)
        for g in self.opt.param_groups:
            g["lr"] = lr
        self.opt.step()
        return loss_sum / self.M, norm, lr

    def get(self, names):
        return np.concatenate([self.model.param(n).detach().numpy().ravel() for n in names])

    def put(self, names, flat):
        off = 0
        for n in names:
            p = self.model.param(n)
            k = p.numel()
            with torch.no_grad():
                p.copy_(torch.from_numpy(flat[off:off + k].reshape(p.shape)))
            off += k


def inner_step_times(H0, Hi, steps):
    """The steps c at which island i makes its inner steps 1, 2, ... (the spec's
    c = r*H_0 + floor(k*H_0/H_i), those below --steps)."""
    out = []
    for r in range((steps + H0 - 1) // H0):
        for k in range(Hi):
            c = r * H0 + (k * H0) // Hi
            if c < steps:
                out.append(c)
    return out


def syncs_due(s, Hi, F):
    """Fragments island i syncs after its inner step s (1-based), in order of f."""
    return [f for f in range(F) if (s + (f * Hi) // F) % Hi == 0]


class Diloco:
    """The general algorithm: every island a coroutine over its own inner steps; outer steps
    computed once every island has contributed; an island waits only where it lands one."""

    def __init__(self, setup, isl, steps, log=print):
        self.setup, self.isl, self.steps, self.log = setup, isl, steps, log
        self.n = len(isl["pipelines"])
        self.islands = [Island(setup, i, p, isl["H"][i]) for i, p in enumerate(isl["pipelines"])]
        self.F = isl["F"] if self.n > 1 else 1
        b = fragment_starts(setup.sizes, self.F)
        self.frag_names = [setup.names[b[f]:b[f + 1]] for f in range(self.F)]
        self.bounds = b
        self.times = [inner_step_times(isl["H"][0], I.H, steps) for I in self.islands]
        assert self.times[0] == list(range(steps))  # island 0 steps at every step
        # global weights and outer optimizer per fragment
        init = self.islands[0].get  # the initial weights (all islands alike)
        self.theta = []   # theta[f][k]: fragment f's global weights after k outer steps
        self.outer = []
        for f in range(self.F):
            p = torch.nn.Parameter(torch.from_numpy(init(self.frag_names[f]).copy()))
            mu = isl["mu"]
            opt = torch.optim.SGD([p], lr=isl["eta"], momentum=mu, dampening=0,
                                  weight_decay=0, nesterov=mu > 0)
            self.outer.append((p, opt))
            self.theta.append([p.detach().numpy().copy()])
        self.contrib = {}  # (f, k) -> {island: (delta, tokens)}
        self.events = {}   # (f, k) -> [(island, 'sync'|'land', after own inner step s, step c)]
        self.outer_log = []  # (f, k, tokens, applied)
        self.steps_log = []  # island 0's (loss, grad_norm, lr) per step
        self.own_step = [0] * self.n

    def check_sync_counts(self):
        """Every island must sync every fragment equally often (else a sync has no partner)."""
        if self.n == 1:
            return
        per = []
        for I, t in zip(self.islands, self.times):
            k = [0] * self.F
            for s in range(1, len(t) + 1):
                for f in syncs_due(s, I.H, self.F):
                    k[f] += 1
            per.append(k)
            if len(t) % I.H == 0:  # full rounds: each fragment once a round
                assert k == [len(t) // I.H] * self.F, (k, len(t), I.H)
        if any(k != per[0] for k in per):
            raise Refused(f"with {self.steps} steps the islands sync the fragments "
                          f"{per} times (per island, per fragment): the k-th sync of a "
                          f"fragment has no partner in some island; the spec defines no "
                          f"result (use --steps a multiple of H_0 = {self.isl['H'][0]})")

    def exchange(self, f, k):
        """The k-th outer step of fragment f, once every island has contributed."""
        got = self.contrib.pop((f, k))
        tokens = [got[i][1] for i in range(self.n)]
        total = sum(tokens)
        p, opt = self.outer[f]
        assert len(self.theta[f]) == k + 1
        if total == 0:
            self.theta[f].append(self.theta[f][k])
            self.outer_log.append((f, k, tokens, False))
            return
        acc = np.zeros_like(self.theta[f][k])
        for i in range(self.n):
            acc += np.float32(tokens[i] / total) * wire(got[i][0], self.isl["wire"])
        avg = wire(acc, self.isl["wire"])
        p.grad = torch.from_numpy(avg)
        opt.step()
        self.theta[f].append(p.detach().numpy().copy())
        self.outer_log.append((f, k, tokens, True))

    def sync(self, i, f, k, tokens, what="sync"):
        I = self.islands[i]
        assert len(self.theta[f]) == k + 1  # the previous outer step of f has landed
        delta = self.theta[f][k] - I.get(self.frag_names[f])
        if not np.all(np.isfinite(delta)):
            raise Refused(f"island {i}: fragment {f}'s pseudo-gradient is not finite (the "
                          f"island diverged)")
        self.contrib.setdefault((f, k), {})[i] = (delta, tokens)
        self.note(i, f, k, what)
        if len(self.contrib[(f, k)]) == self.n:
            self.exchange(f, k)

    def note(self, i, f, k, what):
        s = self.own_step[i]
        c = self.times[i][s - 1] if s else -1
        self.events.setdefault((f, k), []).append((i, what, s, c))

    def island(self, i):
        """Island i's program; yields (f, k) when it must wait for that outer step."""
        I = self.islands[i]
        H, F_, tau, alpha = I.H, self.F, self.isl["tau"], self.isl["alpha"]
        last = [0] * F_          # own inner step of the last sync of f
        k_of = [0] * F_          # syncs of f made so far
        inflight = []            # (f, k, s) started, not landed (tau >= 1)

        def land(f, k, merge):
            self.note(i, f, k, "land")
            new = self.theta[f][k + 1]
            if merge:
                cur = I.get(self.frag_names[f])
                new = np.float32(alpha) * new + np.float32(1.0 - alpha) * cur
            I.put(self.frag_names[f], new)

        s = 0
        for s, c in enumerate(self.times[i], 1):
            loss, norm, lr = I.inner_step(c)
            self.own_step[i] = s
            if i == 0:
                self.steps_log.append((loss, norm, lr))
            if self.n == 1:
                continue
            for (f, k, s0) in [x for x in inflight if x[2] + tau == s]:
                while len(self.theta[f]) <= k + 1:
                    yield (f, k)
                land(f, k, merge=True)
                inflight.remove((f, k, s0))
            for f in syncs_due(s, H, F_):
                k = k_of[f]
                self.sync(i, f, k, (s - last[f]) * I.tokens_per_step)
                last[f], k_of[f] = s, k + 1
                if tau == 0:
                    while len(self.theta[f]) <= k + 1:
                        yield (f, k)
                    land(f, k, merge=False)
                else:
                    inflight.append((f, k, s))
        if self.n == 1:
            return
        for (f, k, s0) in inflight:  # the end: land what is in flight, in the order started
            while len(self.theta[f]) <= k + 1:
                yield (f, k)
            land(f, k, merge=True)
        for f in range(F_):          # then one more blocking sync of every fragment
            k = k_of[f]
            self.sync(i, f, k, (s - last[f]) * I.tokens_per_step, "final sync")
            while len(self.theta[f]) <= k + 1:
                yield (f, k)

    def run(self):
        self.check_sync_counts()
        procs = [self.island(i) for i in range(self.n)]
        waiting = [None] * self.n
        done = [False] * self.n
        while not all(done):
            progressed = False
            for i in range(self.n):
                if done[i]:
                    continue
                w = waiting[i]
                if w is not None and len(self.theta[w[0]]) <= w[1] + 1:
                    continue
                try:
                    waiting[i] = next(procs[i])
                except StopIteration:
                    done[i] = True
                progressed = True
            if not progressed:
                raise Refused("the islands' syncs wait on each other in a cycle "
                              f"(island waits {waiting}): fragments due after one step go in "
                              "order of f, which differs between islands whose H are below F; "
                              "the spec defines no result")
        assert not self.contrib, self.contrib
        if self.n == 1:
            return {n: self.islands[0].model.param(n).detach().numpy().copy()
                    for n in self.setup.names}
        out = {}
        for f in range(self.F):
            flat, off = self.theta[f][-1], 0
            for n in self.frag_names[f]:
                k = self.setup.init[n].size
                out[n] = flat[off:off + k].reshape(self.setup.init[n].shape).copy()
                off += k
        return out


def describe(setup, isl, run, log):
    H0 = isl["H"][0]
    log(f"plan: global batch {setup.global_batch} = {setup.nmb} micro-batches of "
        f"{setup.mbs}, pipelines' counts {setup.counts}")
    for i, I in enumerate(run.islands):
        log(f"island {i}: pipelines {isl['pipelines'][i]}, M {I.M}, H {I.H}, "
            f"{len(run.times[i])} inner steps, {I.tokens_per_step} tokens each")
    if run.n > 1:
        log(f"outer: lr {isl['eta']:g}, momentum {isl['mu']:g}, wire {isl['wire']}, "
            f"fragments {run.F}, overlap {isl['tau']} (merge {isl['alpha']:g}), H_0 {H0}")
        for f in range(run.F):
            log(f"fragment {f}: tensors {run.bounds[f]}..{run.bounds[f + 1] - 1} "
                f"({run.frag_names[f][0]} .. {run.frag_names[f][-1]}), "
                f"{sum(setup.sizes[run.bounds[f]:run.bounds[f + 1]])} values")
    else:
        log("one island: no outer steps (the synchronous run)")


# ------------------------------------------------------------------------------------------
# Self-test: a lock-step DiLoCo (F = 1, one H) written out without torch's SGD or coroutines


def lockstep(setup, isl, steps):
    """F = 1, every island with the same H, so all islands step together and sync after the
    same steps. Outer step written out: avg = sum_i w_i D_i (fp32, island order), m <- mu*m +
    avg, theta <- theta - eta*(avg + mu*m), w_i = T_i / sum_j T_j.

    The identity. With eta = 1 and mu = 0 the outer step is theta <- theta - sum_i w_i (theta -
    theta_i) = sum_i w_i theta_i (the w_i sum to 1): the token-weighted average of the islands'
    weights, computed here as that average itself. With H = 1, tau = 0 and F = 1 as well:
        theta_{c+1} = sum_i w_i AdamW_i(theta_c),   w_i = M_i / sum_j M_j (1/n for equal islands)
    where AdamW_i is one AdamW step of island i from theta_c with its own gradient g_i(theta_c)
    (clipped by its own norm) and its own moments. That is not the synchronous run,
    theta_{c+1} = AdamW(theta_c; sum_i w_i g_i): it would be for an optimizer linear in the
    gradient (SGD with decoupled weight decay: sum_i w_i (theta - lr g_i - lr wd theta) =
    theta - lr sum_i w_i g_i - lr wd theta), but AdamW divides by sqrt(v) and clips per island,
    so the two differ from the first step on."""
    H, tau, alpha, eta, mu = isl["H"][0], isl["tau"], isl["alpha"], isl["eta"], isl["mu"]
    assert len(set(isl["H"])) == 1 and isl["wire"] == "fp32"
    islands = [Island(setup, i, p, H) for i, p in enumerate(isl["pipelines"])]
    names = setup.names
    theta = islands[0].get(names).copy()
    m = np.zeros_like(theta)
    losses, last, inflight = [], 0, None

    def outer(thetas, tokens):
        nonlocal theta, m
        total = sum(tokens)
        if total == 0:
            return
        w = [np.float32(t / total) for t in tokens]
        if eta == 1.0 and mu == 0.0:
            new = np.zeros_like(theta)
            for wi, th in zip(w, thetas):
                new += wi * th
            theta = new
            return
        avg = np.zeros_like(theta)
        for wi, th in zip(w, thetas):
            avg += wi * (theta - th)
        m = np.float32(mu) * m + avg
        theta = theta - np.float32(eta) * (avg + np.float32(mu) * m)

    for s in range(1, steps + 1):
        for i, I in enumerate(islands):
            loss, _, _ = I.inner_step(s - 1)
            if i == 0:
                losses.append(loss)
        if inflight is not None and inflight[0] + tau == s:
            for I in islands:
                I.put(names, np.float32(alpha) * inflight[1] +
                      np.float32(1 - alpha) * I.get(names))
            inflight = None
        if s % H == 0:
            outer([I.get(names) for I in islands], [(s - last) * I.tokens_per_step
                                                     for I in islands])
            last = s
            if tau == 0:
                for I in islands:
                    I.put(names, theta)
            else:
                inflight = (s, theta.copy())
    if inflight is not None:
        for I in islands:
            I.put(names, np.float32(alpha) * inflight[1] + np.float32(1 - alpha) * I.get(names))
    outer([I.get(names) for I in islands], [(steps - last) * I.tokens_per_step
                                            for I in islands])
    return losses, theta


def flat(setup, weights):
    return np.concatenate([weights[n].ravel() for n in setup.names])


def self_test(setup, steps, log):
    """The reference against itself on the plan's islands (their pipelines and micro-batch
    counts; one H for all):
      1. H = 1, eta = 1, mu = 0, F = 1, tau = 0: DiLoCo = the token-weighted average of the
         islands' weights after every step (each island one AdamW step from theta with its own
         moments);
      2. H = 3, eta = 0.7, mu = 0.9, F = 1, tau = 0, steps not a multiple of H (the final flush
         carries the last partial round's tokens): = the lock-step Nesterov written out;
      3. the same with tau = 2, merge 0.5 (and steps ending with a sync in flight);
      4. H = 1, F = 3: all fragments sync after every step, so the result equals case 1's
         general run bit for bit (the outer step is elementwise);
      5. tau = 0 with merge 1 and tau = 0 with merge 0.3 are the same run (merge unused).
    Returns the number of failures."""
    base = dict(setup.islands)
    if len(setup.islands["pipelines"]) < 2:
        raise Refused("--self-test needs a plan with at least two islands")
    fails = 0

    def cfg(**kw):
        c = dict(base, wire="fp32")
        c.update(kw)
        n = len(c["pipelines"])
        c["H"] = [c["H"]] * n if isinstance(c["H"], int) else c["H"]
        return c

    def general(c, n_steps):
        r = Diloco(setup, c, n_steps, log)
        w = r.run()
        return [x[0] for x in r.steps_log], flat(setup, w)

    def compare(what, A, B, tol):
        nonlocal fails
        la, wa = A
        lb, wb = B
        el = max(abs(x - y) / abs(y) for x, y in zip(la, lb))
        ew = float(np.linalg.norm(wa.astype(np.float64) - wb) / np.linalg.norm(wb))
        ok = el <= tol and ew <= tol and len(la) == len(lb)
        log(f"self-test {what:58s} losses {el:.3e} weights {ew:.3e} "
            f"{'ok' if ok else '<-- above ' + format(tol, 'g')}")
        if not ok:
            fails += 1

    n1 = min(steps, 6)
    c1 = cfg(H=1, eta=1.0, mu=0.0, F=1, tau=0)
    g1 = general(c1, n1)
    compare("1 H=1 eta=1 mu=0: DiLoCo = weight averaging", g1, lockstep(setup, c1, n1), 1e-6)
    n2 = 3 * 2 + 2
    c2 = cfg(H=3, eta=0.7, mu=0.9, F=1, tau=0)
    compare("2 H=3 Nesterov, partial last round", general(c2, n2), lockstep(setup, c2, n2), 1e-6)
    c3 = cfg(H=3, eta=0.7, mu=0.9, F=1, tau=2, alpha=0.5)
    compare("3 H=3 Nesterov tau=2 merge 0.5, 8 steps", general(c3, n2),
            lockstep(setup, c3, n2), 1e-6)
    compare("3b the same, 9 steps (a sync in flight at the end)", general(c3, 9),
            lockstep(setup, c3, 9), 1e-6)
    c4 = cfg(H=1, eta=1.0, mu=0.0, F=3, tau=0)
    compare("4 H=1 F=3 = F=1 (bit for bit)", general(c4, n1), g1, 0.0)
    c5a = cfg(H=3, eta=0.7, mu=0.9, F=1, tau=0, alpha=1.0)
    c5b = cfg(H=3, eta=0.7, mu=0.9, F=1, tau=0, alpha=0.3)
    compare("5 tau=0: merge unused (bit for bit)", general(c5a, 6), general(c5b, 6), 0.0)
    # 6. the wire formats: bf16 = torch's round-to-nearest-even conversion; int8 within
    # max|x|/254 of each block of 256, a block of zeros decoding to zeros
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(1000) * 10.0 ** rng.integers(-8, 3, 1000)).astype(np.float32)
    x[:4] = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 0], dtype=np.float32)  # ties
    want = torch.from_numpy(x).to(torch.bfloat16).to(torch.float32).numpy()
    ok6 = np.array_equal(bf16_round(x), want)
    y = np.concatenate([x, np.zeros(300, np.float32)])
    q = int8_round(y)
    for b in range(0, y.size, 256):
        v = y[b:b + 256]
        ok6 &= bool(np.all(np.abs(q[b:b + 256] - v) <= np.max(np.abs(v)) / 254 * (1 + 1e-6)))
    ok6 &= bool(np.all(q[-256:] == 0))
    log(f"self-test {'6 wire: bf16 = torch bfloat16 (ties to even), int8 bound':58s} "
        f"{'ok' if ok6 else '<-- wrong'}")
    fails += not ok6
    return fails


# ------------------------------------------------------------------------------------------
# Output and comparison


def write_safetensors(path, names, weights):
    header, offset, blobs = {}, 0, []
    for n in names:
        b = np.ascontiguousarray(weights[n], dtype="<f4").tobytes()
        header[n] = {"dtype": "F32", "shape": list(weights[n].shape),
                     "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_step_lines(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                ev = json.loads(line)
                if ev.get("event") == "step":
                    out[ev["step"]] = ev
    return out


def main():
    ap = argparse.ArgumentParser(description="PyTorch reference of sailor's islands "
                                 "(docs/design/islands.md)")
    for name in ("plan", "model", "tokens", "init"):
        ap.add_argument("--" + name, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--seq-len", type=int, required=True)
    ap.add_argument("--global-batch", type=int)
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--min-lr", type=float, default=None, help="default: lr/10")
    ap.add_argument("--warmup-steps", type=int, default=0)
    ap.add_argument("--lr-decay-steps", type=int, default=None, help="default: --steps")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--losses", help="sailor's --json step lines to compare with")
    ap.add_argument("--ckpt", help="sailor's final checkpoint to compare with (values)")
    ap.add_argument("--weights", help="a safetensors file of weights to compare with")
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--tol-grad-norm", type=float, default=None,
                    help="default: --tol; negative: print only")
    ap.add_argument("--dump-losses")
    ap.add_argument("--dump-weights")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--quiet", action="store_true", help="print only failures and the summary")
    a = ap.parse_args()
    if a.ckpt and a.weights:
        ap.error("give --ckpt or --weights, not both")
    if a.steps < 0 or a.seq_len < 1:
        ap.error("--steps must be >= 0 and --seq-len >= 1")
    if a.min_lr is None:
        a.min_lr = a.lr / 10.0
    if a.lr_decay_steps is None:
        a.lr_decay_steps = a.steps
    a.lr_decay_steps = max(a.lr_decay_steps, a.warmup_steps)
    if a.tol_grad_norm is None:
        a.tol_grad_norm = a.tol
    torch.manual_seed(0)
    torch.set_num_threads(1)
    log = (lambda *x: None) if a.quiet else print

    try:
        with open(a.plan) as f:
            plan = json.load(f)
        setup = Setup(a, plan, a.plan)
        if a.self_test:
            fails = self_test(setup, a.steps, print)
            print(f"self-test: {fails} failed")
            return 1 if fails else 0
        isl = setup.islands
        run = Diloco(setup, isl, a.steps, log)
        describe(setup, isl, run, log)
        theta = run.run()
    except Refused as e:
        print(f"islands_oracle: {e}", file=sys.stderr)
        return 2
    except KeyError as e:
        print(f"islands_oracle: bad input: no field {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError, TypeError) as e:
        print(f"islands_oracle: bad input: {e}", file=sys.stderr)
        return 2
    if run.n > 1:
        applied = sum(1 for x in run.outer_log if x[3])
        log(f"outer steps: {len(run.outer_log)} ({applied} applied, "
            f"{len(run.outer_log) - applied} with no tokens), in the order they completed "
            f"(step = the step line's number, 1-based):")
        for f, k, tokens, done in run.outer_log:
            ev = run.events[(f, k)]
            what = "; ".join(f"island {i} {w} after step {c + 1}" for i, w, _, c in ev)
            log(f"  fragment {f} outer step {k + 1}: tokens {tokens}"
                f"{'' if done else ' (nothing applied)'}: {what}")

    if a.dump_losses:
        with open(a.dump_losses, "w") as f:
            for s, (loss, norm, lr) in enumerate(run.steps_log, 1):
                f.write(json.dumps({"event": "step", "step": s, "loss": loss, "lr": lr,
                                    "grad_norm": norm}) + "\n")
    if a.dump_weights:
        write_safetensors(a.dump_weights, setup.names, theta)

    failures, worst = [], 0.0

    def check(what, err, tol, counts=True):
        nonlocal worst
        bad = tol >= 0 and not err <= tol
        if counts:
            worst = max(worst, err)
        if bad:
            failures.append(what)
        if bad or not a.quiet:
            flag = "   <-- above tolerance" if bad else ""
            print(f"{what:58s} rel err {err:.3e}{flag}")

    if a.losses:
        theirs = read_step_lines(a.losses)
        for s, (loss, norm, lr) in enumerate(run.steps_log, 1):
            ev = theirs.get(s)
            if ev is None:
                failures.append(f"no step line for step {s}")
                print(f"step {s}: no step line in '{a.losses}'")
                continue
            check(f"step {s} loss ({ev['loss']:.6f} vs {loss:.6f})",
                  abs(ev["loss"] - loss) / abs(loss), a.tol)
            if "lr" in ev:
                check(f"step {s} lr ({ev['lr']:.6g} vs {lr:.6g})",
                      abs(ev["lr"] - lr) / max(abs(lr), 1e-30), a.tol)
            if "grad_norm" in ev:
                check(f"step {s} grad norm ({ev['grad_norm']:.6f} vs {norm:.6f})",
                      abs(ev["grad_norm"] - norm) / max(abs(norm), 1e-30), a.tol_grad_norm,
                      counts=a.tol_grad_norm >= 0)
        extra = sorted(s for s in theirs if s > len(run.steps_log))
        if extra:
            failures.append(f"step lines beyond step {len(run.steps_log)}: {extra}")
            print(f"'{a.losses}' has step lines beyond step {len(run.steps_log)}: {extra}")
    if a.ckpt or a.weights:
        if a.ckpt:
            meta, tensors = read_checkpoint(a.ckpt)
            other = {n: t[0] for n, t in tensors.items()}
            pos = meta["data"]["epoch"] * setup.windows + meta["data"]["next_window"]
            want = a.steps * setup.global_batch
            log(f"checkpoint: step {meta['step']}, data epoch {meta['data']['epoch']} window "
                f"{meta['data']['next_window']} (expected window {want} from the start)")
            if meta["step"] != a.steps:
                failures.append(f"checkpoint step {meta['step']} (expected {a.steps})")
            if pos != want:
                failures.append(f"checkpoint data position {pos} (expected {want}, the "
                                f"synchronous run's)")
        else:
            other, _ = read_safetensors(a.weights)
        if sorted(other) != sorted(setup.names):
            failures.append(f"tensor names differ: {sorted(set(other) ^ set(setup.names))}")
        else:
            diff = norm = 0.0
            worst_t = ("", 0.0)
            for n in setup.names:
                x = np.asarray(other[n], dtype=np.float64).reshape(theta[n].shape)
                y = theta[n].astype(np.float64)
                d = float(np.sum((x - y) ** 2))
                diff += d
                norm += float(np.sum(y ** 2))
                e = math.sqrt(d) / max(float(np.linalg.norm(y)), 1e-30)
                if e > worst_t[1]:
                    worst_t = (n, e)
            check("final weights (whole model)", math.sqrt(diff) / max(math.sqrt(norm), 1e-30),
                  a.tol)
            log(f"largest per-tensor weight difference: {worst_t[0]} {worst_t[1]:.3e}")
    if not a.losses and not a.ckpt and not a.weights:
        for s, (loss, norm, lr) in enumerate(run.steps_log, 1):
            log(f"step {s} loss {loss:.6f} lr {lr:.6g} grad norm {norm:.6f}")
        return 0
    print(f"max relative error {worst:.3e} (tolerance {a.tol:g})")
    if failures:
        more = f" and {len(failures) - 8} more" if len(failures) > 8 else ""
        print(f"MISMATCH ({len(failures)}): " + ", ".join(failures[:8]) + more)
        return 1
    print("sailor matches the islands reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
