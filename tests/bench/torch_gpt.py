"""PyTorch baseline for `deno task bench kernels`: trains the reference GPT.

The same model as kernels/gpt.ts, layer by layer: GPT-2 style, pre-LN,
learned positions, GELU (tanh), causal attention with scale 1/sqrt(hs),
final LayerNorm, output head tied to the token embedding; init normal(0.02),
residual projections 0.02/sqrt(2L), zero biases, unit norms. Trained with
AdamW as kernels/adamw.ts does it: weight decay on wte, wpe and the matrices
only, global grad-norm clip, linear warmup then cosine learning rate.

Batches are random windows of T+1 bytes of the corpus file (byte-level
tokens, as the node's tokenizer), drawn with torch's generator.

Dims legend: B batch, T time, C channels, NH heads, V vocab.

Prints one JSON object on stdout. Threads come from the environment:
OMP_NUM_THREADS (torch's intra-op pool) and OPENBLAS_NUM_THREADS.

With `--device cuda` the model trains on the GPU in fp32 (TF32 off, torch's
default for matmul), and the timed steps run back to back: losses stay on
the GPU until the last step, and the time is taken after a synchronize, as
the WebGPU trainer's batched steps do.

    python3 tests/bench/torch_gpt.py --data corpus.txt --steps 20
"""

import argparse
import ctypes
import ctypes.util
import json
import math
import os
import time

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, C: int, NH: int):
        super().__init__()
        self.NH = NH
        self.ln_1 = nn.LayerNorm(C, eps=1e-5)
        self.c_attn = nn.Linear(C, 3 * C)
        self.attn_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C, eps=1e-5)
        self.c_fc = nn.Linear(C, 4 * C)
        self.mlp_proj = nn.Linear(4 * C, C)

    def attention(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        hs = C // self.NH
        q, k, v = self.c_attn(x).split(C, dim=2)  # each [B, T, C]
        q = q.view(B, T, self.NH, hs).transpose(1, 2)  # [B, NH, T, hs]
        k = k.view(B, T, self.NH, hs).transpose(1, 2)
        v = v.view(B, T, self.NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # [B, NH, T, T]
        att = F.softmax(att.masked_fill(mask[:T, :T], float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)  # [B, T, C]
        return self.attn_proj(y)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln_1(x), mask)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, V: int, T: int, L: int, C: int, NH: int):
        super().__init__()
        self.wte = nn.Embedding(V, C)  # [V, C], also the output head
        self.wpe = nn.Embedding(T, C)  # [T, C]
        self.h = nn.ModuleList(Block(C, NH) for _ in range(L))
        self.ln_f = nn.LayerNorm(C, eps=1e-5)
        self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1))
        residual_std = 0.02 / math.sqrt(2 * L)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif "ln_" in name:
                nn.init.ones_(p)
            else:
                std = residual_std if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        B, T = ids.shape
        x = self.wte(ids) + self.wpe(torch.arange(T, device=ids.device))  # [B, T, C]
        for block in self.h:
            x = block(x, self.mask)
        logits = self.ln_f(x) @ self.wte.weight.t()  # [B, T, V]
        return F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))


def learning_rate(step: int, a: argparse.Namespace) -> float:
    """kernels/adamw.ts learningRate, for 1-based `step`."""
    if step <= a.warmup_lr:
        return a.max_lr * step / max(1, a.warmup_lr)
    if step >= a.total_steps:
        return a.min_lr
    progress = (step - a.warmup_lr) / (a.total_steps - a.warmup_lr)
    return a.min_lr + 0.5 * (a.max_lr - a.min_lr) * (1 + math.cos(math.pi * progress))


def blas_core() -> str | None:
    """OpenBLAS's kernel name, or None when torch links another BLAS."""
    for name in ("openblas", "libopenblas.so.0"):
        path = ctypes.util.find_library(name) or name
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="corpus text file (bytes = tokens)")
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--warmup", type=int, default=3, help="untimed steps")
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-lr", type=float, default=3e-3)
    p.add_argument("--min-lr", type=float, default=3e-4)
    p.add_argument("--warmup-lr", type=int, default=20, help="lr warmup steps")
    p.add_argument("--total-steps", type=int, default=500)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.95)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    a = p.parse_args()
    cuda = a.device == "cuda"

    torch.manual_seed(a.seed)
    torch.set_num_interop_threads(1)
    with open(a.data, "rb") as f:
        text = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).long()
    B, T = a.batch, a.context
    model = Gpt(a.vocab, T, a.layers, a.d_model, a.heads).to(a.device)
    decayed = [p for n, p in model.named_parameters() if p.dim() == 2]
    rest = [p for n, p in model.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW(
        [{"params": decayed, "weight_decay": a.weight_decay},
         {"params": rest, "weight_decay": 0.0}],
        lr=a.max_lr, betas=(a.beta1, a.beta2), eps=a.eps, foreach=True,
    )

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and next-byte targets, each [B, T]."""
        starts = torch.randint(len(text) - T, (B,))
        window = torch.stack([text[s:s + T + 1] for s in starts.tolist()])
        window = window.to(a.device)
        return window[:, :-1].contiguous(), window[:, 1:].contiguous()

    def step(n: int, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        for group in opt.param_groups:
            group["lr"] = learning_rate(n, a)
        opt.zero_grad(set_to_none=True)
        loss = model(ids, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        opt.step()
        return loss.detach()

    losses, seconds = [], []
    if cuda:
        for n in range(1, a.warmup + 1):
            losses.append(step(n, *batch()).item())
        batches = [batch() for _ in range(a.steps)]  # drawn before the timing
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        timed = [step(a.warmup + i + 1, *b) for i, b in enumerate(batches)]
        torch.cuda.synchronize()
        seconds.append(time.perf_counter() - t0)
        losses += torch.stack(timed).tolist()
    else:
        for n in range(1, a.warmup + a.steps + 1):
            ids, targets = batch()  # drawn outside the timing, as the node does
            t0 = time.perf_counter()
            losses.append(step(n, ids, targets).item())
            if n > a.warmup:
                seconds.append(time.perf_counter() - t0)
    total = sum(seconds)
    print(json.dumps({
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "tf32": torch.backends.cuda.matmul.allow_tf32 if cuda else None,
        "threads": torch.get_num_threads(),
        "ompThreads": os.environ.get("OMP_NUM_THREADS"),
        "openblasThreads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "blasCore": blas_core(),
        "params": sum(p.numel() for p in model.parameters()),
        "steps": a.steps,
        "tokens": a.steps * B * T,
        "seconds": total,
        "tokensPerSecond": a.steps * B * T / total if total > 0 else None,
        "stepSeconds": seconds,
        "firstLoss": losses[0],
        "lastLoss": losses[-1],
    }))


if __name__ == "__main__":
    main()
