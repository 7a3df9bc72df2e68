# source: https://github.com/speechbrain/speechbrain/pull/615
# SpeechBrain's core `Brain` class (spring 2021): `fit_batch()` runs the forward and the objective
# under autocast when `auto_mix_prec` is set, backpropagates `self.scaler.scale(loss)`, then asks
# `self.check_gradients(loss)` whether to step; `check_gradients()` skips non-finite losses and
# clips with `torch.nn.utils.clip_grad_norm_(self.modules.parameters(), self.max_grad_norm)`.
# With AMP on, the clip therefore sees gradients multiplied by the loss scale (65536 at first),
# so the norm is always far above `max_grad_norm` and every update is clipped hard. Issue #612,
# fixed by PR #615 with `self.scaler.unscale_(self.optimizer)` before `check_gradients`.
# The recipe-side subclass (compute_forward / compute_objectives), the ModuleDict of modules,
# `fit()` over an epoch counter and the no_grad validation stage are kept; the encoder is a tiny
# stand-in and the utterances are synthetic feature frames.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class Brain:
    def __init__(self, modules, opt_class, hparams, run_opts):
        self.device = run_opts.get("device", "cpu")
        self.auto_mix_prec = run_opts.get("auto_mix_prec", False)
        self.max_grad_norm = hparams.get("max_grad_norm", 5.0)
        self.hparams = hparams
        self.modules = nn.ModuleDict(modules).to(self.device)
        self.optimizer = opt_class(self.modules.parameters())
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.auto_mix_prec)
        self.train_losses = []

    def compute_forward(self, batch, stage):
        raise NotImplementedError

    def compute_objectives(self, predictions, batch, stage):
        raise NotImplementedError

    def fit_batch(self, batch):
        self.optimizer.zero_grad()
        with torch.autocast(device_type="cuda", enabled=self.auto_mix_prec):
            outputs = self.compute_forward(batch, "train")
            loss = self.compute_objectives(outputs, batch, "train")
        self.scaler.scale(loss).backward()
        if self.check_gradients(loss):
            self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()

    def check_gradients(self, loss):
        if not torch.isfinite(loss):
            return False
        torch.nn.utils.clip_grad_norm_(self.modules.parameters(), self.max_grad_norm)  # expect: GL202
        return True

    def evaluate_batch(self, batch, stage):
        outputs = self.compute_forward(batch, stage)
        loss = self.compute_objectives(outputs, batch, stage)
        return loss.detach()

    def fit(self, epoch_counter, train_set, valid_set=None):
        for epoch in epoch_counter:
            self.modules.train()
            for batch in train_set:
                loss = self.fit_batch(batch)
                self.train_losses.append(loss.item())
            if valid_set is not None:
                self.modules.eval()
                with torch.no_grad():
                    valid_loss = sum(self.evaluate_batch(b, "valid").item() for b in valid_set) / len(valid_set)
                print(f"epoch {epoch}: valid loss {valid_loss:.4f}")


class SpeakerBrain(Brain):
    def compute_forward(self, batch, stage):
        feats, _ = batch
        feats = feats.to(self.device)
        emb = self.modules.encoder(feats).mean(dim=1)
        return self.modules.classifier(emb)

    def compute_objectives(self, predictions, batch, stage):
        _, spk = batch
        return nn.functional.cross_entropy(predictions, spk.to(self.device))


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    feats = torch.randn(256, 20, 16)
    spk = (feats.mean(dim=1) @ torch.randn(16, 4)).argmax(dim=1)
    train_set = DataLoader(TensorDataset(feats[:192], spk[:192]), batch_size=16, shuffle=True)
    valid_set = DataLoader(TensorDataset(feats[192:], spk[192:]), batch_size=32)
    modules = {
        "encoder": nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU()),
        "classifier": nn.Linear(64, 4),
    }
    brain = SpeakerBrain(
        modules=modules,
        opt_class=lambda params: torch.optim.Adam(params, lr=3e-3),
        hparams={"max_grad_norm": 5.0},
        run_opts={"device": device, "auto_mix_prec": device == "cuda"},
    )
    brain.fit(range(6), train_set, valid_set)
    losses = brain.train_losses
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:12]) / 12, "last_loss": sum(losses[-12:]) / 12, "device": device}))


if __name__ == "__main__":
    main()
