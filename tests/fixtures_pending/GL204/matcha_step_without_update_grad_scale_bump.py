# source: https://github.com/k2-fsa/icefall/pull/1829
# The Matcha-TTS recipe's train_one_epoch() runs the loss, `scaler.scale(loss).backward()` and
# `scaler.step(optimizer)` inside `try:` + `with autocast(...)`, but never scaler.update() after
# the step: the only update is the periodic grad-scale bump (`scaler.update(cur_grad_scale * 2.0)`
# every 100 batches when the scale is small). The second batch fails: "step() has already been
# called since the last update()". The PR adds scaler.update() after the step.
# fails-on-cuda: step() has already been called since the last update()
import json

import torch
import torch.nn as nn


class Params(dict):
    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__


class TinyTTS(nn.Module):
    def __init__(self, vocab=10, n_feats=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, 16)
        self.encoder = nn.GRU(16, 16, batch_first=True)
        self.proj = nn.Linear(16, n_feats)

    def get_losses(self, inputs):
        h, _ = self.encoder(self.emb(inputs["x"]))
        pred = self.proj(h)
        return {"prior_loss": (pred - inputs["y"]).pow(2).mean(), "dur_loss": 0.1 * pred.abs().mean()}


def train_one_epoch(params, model, optimizer, scaler, train_dl, device):
    model.train()
    tot_loss = 0.0
    losses_seen = []
    for batch_idx, batch in enumerate(train_dl):
        params.batch_idx_train += 1
        tokens = batch["tokens"].to(device)
        features = batch["features"].to(device)
        try:
            with torch.autocast(device.type, dtype=torch.float16, enabled=params.use_fp16):
                losses = model.get_losses({"x": tokens, "y": features})
                loss = sum(losses.values())
                optimizer.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(optimizer)  # expect: GL204
                tot_loss += loss.detach().item()
                losses_seen.append(loss.detach().item())
        except:  # noqa
            print("saving bad model")
            raise

        if params.batch_idx_train % 100 == 0 and params.use_fp16:
            cur_grad_scale = scaler._scale.item()
            if cur_grad_scale < 8.0 or (cur_grad_scale < 32.0 and params.batch_idx_train % 400 == 0):
                scaler.update(cur_grad_scale * 2.0)
    return losses_seen


def run():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    params = Params(batch_idx_train=0, use_fp16=device.type == "cuda", num_epochs=6)
    model = TinyTTS().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    scaler = torch.amp.GradScaler(device.type, enabled=params.use_fp16, init_scale=1.0)
    tokens = torch.randint(0, 10, (32, 6))
    features = torch.nn.functional.one_hot(tokens, 10)[..., :8].float()
    train_dl = [{"tokens": tokens[i:i + 8], "features": features[i:i + 8]} for i in range(0, 32, 8)]
    history = []
    for epoch in range(params.num_epochs):
        history.extend(train_one_epoch(params, model, optimizer, scaler, train_dl, device))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))


if __name__ == "__main__":
    run()
