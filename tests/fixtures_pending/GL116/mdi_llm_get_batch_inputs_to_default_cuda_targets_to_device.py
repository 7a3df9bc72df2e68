# fixture: static (written for a machine with two GPUs: training runs on --device cuda:1)
# source: https://github.com/davmacario/MDI-LLM/issues/21
# MDI-LLM's GPT-2 training (train.py + sub/data_loader.py + sub/utils.py collapsed into one
# script): get_batch() pins the sampled contexts and targets and moves them with
# `x.pin_memory().to("cuda", ...)` but `y.pin_memory().to(device, ...)`. Trained with
# `--device cuda:1`, the model and the targets are on GPU 1 while the contexts land on the current
# device, GPU 0: "Expected all tensors to be on the same device, but found at least two devices,
# cuda:1 and cuda:0" in the token embedding (the fix, commit 0b8b204: `.to(device, ...)` for both).
# fails-on-cuda: Expected all tensors to be on the same device
import argparse
import json
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 32
    n_embd: int = 32


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.mlp = nn.Sequential(nn.LayerNorm(config.n_embd), nn.Linear(config.n_embd, config.n_embd), nn.GELU())
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx, targets=None):
        pos = torch.arange(0, idx.shape[1], dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.mlp(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def get_batch(dataset, batch_size: int, device: str, model_conf: GPTConfig):
    ix = torch.randint(len(dataset) - model_conf.block_size, (batch_size,))
    if type(dataset) == torch.Tensor:
        x = torch.stack([dataset[i:i + model_conf.block_size] for i in ix])
        y = torch.stack([dataset[i + 1:i + model_conf.block_size + 1] for i in ix])
    elif type(dataset) in {np.memmap, np.ndarray}:
        x = torch.stack([torch.from_numpy(dataset[i:i + model_conf.block_size].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(dataset[i + 1:i + 1 + model_conf.block_size].astype(np.int64)) for i in ix])
    else:
        raise TypeError(f"Unsupported data type {type(dataset)}")
    if "cuda" in device:
        x, y = x.pin_memory().to("cuda", non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    else:
        x, y = x.to(device), y.to(device)
    return x, y


@torch.no_grad()
def estimate_loss(model, train_data, val_data, batch_size, device, model_conf, eval_iters=4):
    out = {}
    model.eval()
    for split, data in (("train", train_data), ("val", val_data)):
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(data, batch_size, device, model_conf)
            _, loss = model(X, Y)  # expect: GL116
            losses[k] = loss.item()
        out[split] = losses.mean().item()
    model.train()
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=str, default="cuda:1" if torch.cuda.device_count() > 1 else "cpu")
    parser.add_argument("--max-iters", type=int, default=60)
    args = parser.parse_args([])
    DEVICE = args.device
    torch.manual_seed(1337)
    gptconf = GPTConfig()
    tokens = (torch.arange(4000) * 7 % gptconf.vocab_size).numpy().astype(np.uint16)
    n = int(0.9 * len(tokens))
    train_data, val_data = tokens[:n], tokens[n:]
    model = GPT(gptconf)
    model.to(DEVICE)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = estimate_loss(model, train_data, val_data, 8, DEVICE, gptconf)
    first = losses["train"]
    X, Y = get_batch(train_data, 8, DEVICE, gptconf)
    for it in range(args.max_iters):
        logits, loss = model(X, Y)  # expect: GL116
        X, Y = get_batch(train_data, 8, DEVICE, gptconf)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    last = estimate_loss(model, train_data, val_data, 8, DEVICE, gptconf)["train"]
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": torch.device(DEVICE).type}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
