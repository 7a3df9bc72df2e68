# source: https://github.com/michuanhaohao/reid-strong-baseline/issues/114
# The ReID baseline's train() builds the model and its optimizer, and when resuming loads
# `optimizer.load_state_dict(torch.load(path_to_optimizer))` right away; the model only reaches the
# GPU later, inside do_train -> create_supervised_trainer (`model.to(device)`). Loading casts the
# Adam state to the parameters' device at that moment (the CPU), so the first resumed step mixes
# CUDA parameters with CPU state. The thread's workaround moves the optimizer state to the GPU after
# model.to(device).
# fails-on-cuda: Tensors of the same index must be on the same device
import json
import os
import tempfile

import torch
import torch.nn as nn


def build_model(num_classes=4):
    return nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, num_classes))


def make_optimizer(model, lr=0.01):
    return torch.optim.Adam(model.parameters(), lr=lr)


def create_supervised_trainer(model, optimizer, loss_fn, device=None):
    if device:
        model.to(device)

    def _update(batch):
        model.train()
        optimizer.zero_grad()
        img, target = batch
        img = img.to(device) if torch.cuda.device_count() >= 1 else img
        target = target.to(device) if torch.cuda.device_count() >= 1 else target
        score = model(img)
        loss = loss_fn(score, target)
        loss.backward()
        optimizer.step()
        return loss.item()

    return _update


def do_train(model, train_loader, optimizer, loss_fn, start_epoch, epochs, device):
    update = create_supervised_trainer(model, optimizer, loss_fn, device=device)
    losses = []
    for epoch in range(start_epoch, epochs):
        for batch in train_loader:
            losses.append(update(batch))
    return losses


def train(output_dir, resume_from=None, start_epoch=0, epochs=3):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(start_epoch)
    x = torch.randn(96, 10)
    y = x[:, :4].argmax(dim=1)
    train_loader = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 96, 16)]
    model = build_model()
    optimizer = make_optimizer(model)
    if resume_from is not None:
        path_to_optimizer = resume_from.replace("model", "optimizer")
        model.load_state_dict(torch.load(resume_from))
        optimizer.load_state_dict(torch.load(path_to_optimizer))  # expect: GL111
    losses = do_train(model, train_loader, optimizer, nn.CrossEntropyLoss(), start_epoch, epochs, device)
    torch.save(model.state_dict(), os.path.join(output_dir, f"resnet50_model_{epochs}.pth"))
    torch.save(optimizer.state_dict(), os.path.join(output_dir, f"resnet50_optimizer_{epochs}.pth"))
    return losses, device


if __name__ == "__main__":
    out = tempfile.mkdtemp()
    first, device = train(out, epochs=2)
    resumed, _ = train(out, resume_from=os.path.join(out, "resnet50_model_2.pth"), start_epoch=2, epochs=5)
    losses = first + resumed
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device}))
