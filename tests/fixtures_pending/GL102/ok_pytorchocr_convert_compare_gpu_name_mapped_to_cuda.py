# source: https://github.com/WenmuZhou/PytorchOCR/blob/d1584fd2f687/convert_params_compute_diff.py
# PytorchOCR's conversion check: `conver_params` copies the weights of a reference (PaddleOCR)
# model into the PyTorch port and saves them; `paddle_infer` and `torch_infer` then run both
# models on the same input and `diff_func` compares the outputs. Both take the device by its
# Paddle name: `torch_infer(config, input_np, device, params_path)` translates it for torch with
# `if device == 'gpu': device = 'cuda'`, and `main` runs everything with `device = "cpu"`. The
# "cuda" string is the torch spelling of a device the caller chose, not a hard-coded device: the
# script has a CPU path (its only one, as committed). GL102 must be silent (P42-3).
# (Paddle is replaced by a NumPy reference of the same two-layer head; after the comparison the
# converted head is fine-tuned a few steps to the reference's outputs, so that the script trains.)
import json
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn


def build_model(config):
    return nn.Sequential(nn.Linear(config["in"], config["hidden"]), nn.ReLU(), nn.Linear(config["hidden"], config["out"]))


def build_reference(config, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "w1": rng.standard_normal((config["in"], config["hidden"])).astype("float32") * 0.3,
        "b1": np.zeros(config["hidden"], dtype="float32"),
        "w2": rng.standard_normal((config["hidden"], config["out"])).astype("float32") * 0.3,
        "b2": np.zeros(config["out"], dtype="float32"),
    }


def reference_infer(ref, input_np):
    h = np.maximum(input_np @ ref["w1"] + ref["b1"], 0.0)
    return h @ ref["w2"] + ref["b2"]


def conver_params(model_config, ref, tmp_dir):
    torch_model = build_model(model_config)
    with torch.no_grad():
        torch_model[0].weight.copy_(torch.from_numpy(ref["w1"].T.copy()))
        torch_model[0].bias.copy_(torch.from_numpy(ref["b1"]))
        torch_model[2].weight.copy_(torch.from_numpy(ref["w2"].T.copy()))
        torch_model[2].bias.copy_(torch.from_numpy(ref["b2"]))
    torch_params_path = os.path.join(tmp_dir, "converted.pth")
    torch.save({"state_dict": torch_model.state_dict()}, torch_params_path)
    print(f"save convert torch params to {torch_params_path}")
    return torch_params_path


def torch_infer(config, input_np, device, params_path):
    print(f"torch version: {torch.__version__}")
    if device == 'gpu':
        device = 'cuda'
    x = torch.from_numpy(input_np)
    x = x.to(device)
    model = build_model(config)
    model.load_state_dict(torch.load(params_path, map_location="cpu")["state_dict"])
    model.eval()
    model = model.to(device)
    with torch.no_grad():
        y = model(x)
    return model, x, y


def diff_func(torch_out, ref_out):
    diff = np.abs(torch_out.detach().cpu().numpy() - ref_out)
    print(f"max diff: {diff.max():.3e}, mean diff: {diff.mean():.3e}")


def calibrate(model, x, target, steps=40):
    # fine-tune the converted model towards the reference outputs of a perturbed input
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    noisy = x + 0.5 * torch.randn_like(x)
    losses = []
    for _ in range(steps):
        loss = nn.functional.mse_loss(model(noisy), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main():
    device = "cpu"
    torch.manual_seed(0)
    model_config = {"in": 16, "hidden": 32, "out": 8}
    input_np = np.random.default_rng(1).standard_normal((64, 16)).astype("float32")
    ref = build_reference(model_config)
    with tempfile.TemporaryDirectory() as tmp_dir:
        torch_params_path = conver_params(model_config, ref, tmp_dir)
        ref_out = reference_infer(ref, input_np)
        model, x, torch_out = torch_infer(model_config, input_np, device, torch_params_path)
        diff_func(torch_out, ref_out)
    target = torch.from_numpy(ref_out).to(x.device)
    losses = calibrate(model, x, target)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": x.device.type}))


if __name__ == "__main__":
    main()
