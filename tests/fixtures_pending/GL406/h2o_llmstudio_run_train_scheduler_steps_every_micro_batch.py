# source: https://github.com/h2oai/h2o-llmstudio/issues/663
# h2o-llmstudio train.py `run_train(cfg, model, train_dataloader, val_dataloader, val_df)`: the
# scheduler is built for `epoch_steps = len(train_dataloader)` steps per epoch; each iteration does
# `num_updates += 1`, the forward, `loss / cfg.training.grad_accumulation`, the backward, and only
# `if num_updates % cfg.training.grad_accumulation == 0:` the (scaler or plain) optimizer step and
# `optimizer.zero_grad(set_to_none=True)`; then, outside that guard, `if scheduler is not None:
# scheduler.step()` runs on every micro-batch. The first `grad_accumulation - 1` scheduler steps
# come before any optimizer step (PyTorch's "Detected call of `lr_scheduler.step()` before
# `optimizer.step()`", which the report links) and the schedule runs `grad_accumulation` times too
# fast: "Optimization step is happening only 10 times. But here scheduler is called every time".
# Rebuilt with a tiny causal LM returning `{"loss": ...}`, a LambdaLR warmup+cosine schedule like
# get_scheduler's, a nested SimpleNamespace config, and run_eval/model.train() after each epoch.
import json
import math
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class CausalLM(nn.Module):
    def __init__(self, vocab=16, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.out = nn.Linear(2 * dim, vocab)

    def forward(self, batch):
        ids = batch["input_ids"]
        e = self.embed(ids)
        logits = self.out(torch.cat([e, torch.roll(e, 1, dims=1)], dim=-1))
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
        return {"loss": loss, "logits": logits}


def get_scheduler(cfg, optimizer, epoch_steps):
    total = cfg.training.epochs * epoch_steps
    warmup = cfg.training.warmup_epochs * epoch_steps

    def lr_lambda(step):
        if step < warmup:
            return (step + 1) / (warmup + 1)
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


def run_eval(cfg, model, val_dataloader):
    model.eval()
    losses = []
    with torch.no_grad():
        for data in val_dataloader:
            batch = {"input_ids": data[0].to(cfg.environment._device)}
            losses.append(model.forward(batch)["loss"].item())
    return sum(losses) / len(losses)


def run_train(cfg, model, train_dataloader, val_dataloader):
    epoch_steps = len(train_dataloader)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.training.learning_rate)
    scheduler = get_scheduler(cfg=cfg, optimizer=optimizer, epoch_steps=epoch_steps)
    scaler = torch.amp.GradScaler("cuda") if cfg.environment.mixed_precision else None
    optimizer.zero_grad(set_to_none=True)
    num_updates = 0
    val_losses = []
    for epoch in range(cfg.training.epochs):
        tr_it = iter(train_dataloader)
        model.train()
        for itr in range(epoch_steps):
            num_updates += 1
            data = next(tr_it)
            batch = {"input_ids": data[0].to(cfg.environment._device)}
            if cfg.environment.mixed_precision:
                with torch.autocast("cuda"):
                    output_dict = model.forward(batch)
            else:
                output_dict = model.forward(batch)
            loss = output_dict["loss"]
            if cfg.training.grad_accumulation != 1:
                loss = loss / cfg.training.grad_accumulation
            if cfg.environment.mixed_precision:
                scaler.scale(loss).backward()
                if num_updates % cfg.training.grad_accumulation == 0:
                    scaler.step(optimizer)
                    scaler.update()
                    optimizer.zero_grad(set_to_none=True)
            else:
                loss.backward()
                if num_updates % cfg.training.grad_accumulation == 0:
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
            if scheduler is not None:
                scheduler.step()  # expect: GL406
        val_losses.append(run_eval(cfg, model, val_dataloader))
        model.train()
    return val_losses


def token_stream(n, seed, length=16, vocab=16):
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, vocab, (n, 1), generator=g)
    return TensorDataset((start + 3 * torch.arange(length)) % vocab)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    cfg = SimpleNamespace(
        training=SimpleNamespace(epochs=4, warmup_epochs=1, learning_rate=2e-2, grad_accumulation=4),
        environment=SimpleNamespace(mixed_precision=False, _device=device),
    )
    model = CausalLM().to(device)
    train_dataloader = DataLoader(token_stream(256, 0), batch_size=8, shuffle=True)
    val_dataloader = DataLoader(token_stream(64, 1), batch_size=32)
    val_losses = run_train(cfg, model, train_dataloader, val_dataloader)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": val_losses[0], "last_loss": val_losses[-1], "device": torch.device(device).type}))
