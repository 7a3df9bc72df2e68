# source: https://github.com/daikichiba9511/my-kaggle-template/pull/12
# daikichiba9511/my-kaggle-template (issue #9, fixed by PR #12 "Fix the way using engine step"):
# exp000/train.py's train_one_epoch() runs the forward under
# `autocast_mode.autocast(device_type=device.type, enabled=use_amp, dtype=torch.float16)` and hands
# the loss to engine.step(..., scaler=scaler), whose scaler branch scales, unscales, clips and steps;
# but main() never built a GradScaler nor passed one, so `scaler` kept its default None and every
# step took the plain `loss.backward()` / `optimizer.step()` branch: float16 training with no loss
# scaling, small gradients flushed to zero. PR #12 adds
# `scaler = grad_scaler.GradScaler(enabled=cfg.train_use_amp)` and `scaler=scaler`.
# engine.step() and train.py are merged into one file. As before PR #12, nothing calls
# optimizer.zero_grad() (the PR's refactor of step() added it).
import json

import torch
import torch.nn as nn
from torch.amp import autocast_mode, grad_scaler


def step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    max_norm: float,
    scaler: grad_scaler.GradScaler | None = None,
    scheduler=None,
    skip_nan: bool = False,
    raise_nan: bool = False,
) -> torch.Tensor:
    has_nan = torch.isnan(loss).any()
    if has_nan and skip_nan:
        return torch.tensor(0.0)
    if has_nan and raise_nan:
        raise ValueError("Loss has nan value")

    if scaler is not None:
        scaled_loss = scaler.scale(loss)
        scaled_loss.backward()
        scaler.unscale_(optimizer)
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
        optimizer.step()

    if scheduler is not None:
        scheduler.step()
    return grad_norm


def train_one_epoch(epoch, model, optimizer, scheduler, criterion, loader, device, use_amp=True, scaler=None, max_norm=1.0):
    model = model.train()
    total = 0.0
    for _batch_idx, batch in enumerate(loader):
        _sample_id, x, y = batch
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with autocast_mode.autocast(device_type=device.type, enabled=use_amp, dtype=torch.float16):  # expect: GL201
            output = model(x)
            y_pred = output
            loss = criterion(y_pred, y)
        step(model=model, optimizer=optimizer, loss=loss, max_norm=max_norm, scaler=scaler, scheduler=scheduler)
        total += loss.detach().cpu().item()
    return total / len(loader)


def main() -> None:
    torch.manual_seed(42)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    x = torch.randn(256, 16)
    y = x @ torch.randn(16, 1)
    ids = torch.arange(256)
    dataset = torch.utils.data.TensorDataset(ids, x, y)
    train_loader = torch.utils.data.DataLoader(dataset, batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    criterion = nn.MSELoss()
    losses = []
    for epoch in range(6):
        losses.append(
            train_one_epoch(
                epoch=epoch,
                model=model,
                optimizer=optimizer,
                scheduler=scheduler,
                criterion=criterion,
                loader=train_loader,
                device=device,
                use_amp=use_amp,
            )
        )
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
