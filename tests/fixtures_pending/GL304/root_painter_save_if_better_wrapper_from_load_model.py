# source: https://github.com/Abe404/root_painter/issues/184
# RootPainter's trainer: `load_model(path)` builds the UNet, loads its weights (trying the plain
# keys first, then the wrapped ones) and always returns it wrapped in `torch.nn.DataParallel`;
# the training loop passes that wrapper to `save_if_better(...)`, which writes
# `torch.save(cur_model.state_dict(), model_path)`. Every saved model therefore has keys prefixed
# with "module.", and loading one into a plain UNet elsewhere (the report: a published RootPainter
# model used outside the trainer) fails with "Missing key(s) ... Unexpected key(s) "module.conv_in...""
# until the prefix is stripped; the last lines do that load, so the script fails on every machine
# once a better model was saved (CPU included: no `# fails-on-cuda:` header).
import json
import os
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def get_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


device = get_device()


class UNetGNRes(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_in = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.ReLU())
        self.conv_out = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        return self.conv_out(self.conv_in(x))


def load_model(model_path):
    model = UNetGNRes()
    try:
        model.load_state_dict(torch.load(model_path, map_location=device, weights_only=True))
        model = torch.nn.DataParallel(model)
    except RuntimeError:
        model = torch.nn.DataParallel(model)
        model.load_state_dict(torch.load(model_path, map_location=device, weights_only=True))
    model.to(device)
    return model


def save_if_better(model_dir, cur_model, prev_model_path, cur_f1, prev_f1):
    if cur_f1 > prev_f1:
        model_num = int(os.path.basename(prev_model_path).split("_")[0]) + 1
        model_path = os.path.join(model_dir, f"{model_num:06d}_{int(time.time())}.pkl")
        torch.save(cur_model.state_dict(), model_path)  # expect: GL304
        return model_path
    return prev_model_path


def f1_score(model, images, masks):
    with torch.no_grad():
        pred = model(images).argmax(dim=1)
    tp = ((pred == 1) & (masks == 1)).sum().item()
    fp = ((pred == 1) & (masks == 0)).sum().item()
    fn = ((pred == 0) & (masks == 1)).sum().item()
    return 2 * tp / max(2 * tp + fp + fn, 1)


torch.manual_seed(0)
images = torch.rand(16, 3, 16, 16)
masks = (images[:, 0] > 0.5).long()
with tempfile.TemporaryDirectory() as model_dir:
    first_path = os.path.join(model_dir, f"000001_{int(time.time())}.pkl")
    torch.save(UNetGNRes().state_dict(), first_path)
    prev_path = first_path
    model = load_model(prev_path)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = images.to(device), masks.to(device)
    prev_f1 = f1_score(model, x, y)
    losses = []
    for epoch in range(20):
        model.train()
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        model.eval()
        cur_f1 = f1_score(model, x, y)
        new_path = save_if_better(model_dir, model, prev_path, cur_f1, prev_f1)
        if new_path != prev_path:
            prev_path, prev_f1 = new_path, cur_f1
    plain = UNetGNRes()
    plain.load_state_dict(torch.load(prev_path, map_location="cpu", weights_only=True))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
