# source: https://github.com/pfnet/pytorch-pfn-extras/issues/688
# pytorch-pfn-extras (ppe/handler/_logic.py): the trainer calls the Logic object's hooks; the models
# live in a dict (`models["main"]`). `train_epoch_begin` puts them in train mode,
# `train_validation_begin` puts them in eval mode before the evaluator runs, and
# `train_validation_end` does nothing. When the evaluator is triggered at a non-integer epoch (here
# every 6 iterations of an 8-iteration epoch), the rest of the epoch trains in eval mode. The fix
# restores train mode in `train_validation_end`. (A dropout MLP regression, synthetic data, the
# trainer/handler/logic/evaluator split kept small; fixed seed.)
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Logic:
    def __init__(self, model_name="main"):
        self.model_name = model_name

    def train_epoch_begin(self, models, epoch, loader):
        model = models[self.model_name]
        model.train()

    def train_step(self, models, optimizers, batch_idx, batch):
        model = models[self.model_name]
        optimizer = optimizers[self.model_name]
        optimizer.zero_grad()
        x, t = batch
        loss = nn.functional.mse_loss(model(x), t)
        loss.backward()
        optimizer.step()
        return {"loss": loss.item()}

    def train_validation_begin(self, models):
        model = models[self.model_name]
        model.eval()  # expect: GL404

    def train_validation_end(self, models):
        pass

    def eval_step(self, models, batch_idx, batch):
        model = models[self.model_name]
        x, t = batch
        return {"val/loss": nn.functional.mse_loss(model(x), t).item()}


class Evaluator:
    def __init__(self, loader, models, logic, device):
        self.loader = loader
        self.models = models
        self.logic = logic
        self.device = device
        self.history = []

    def run(self):
        losses = []
        with torch.no_grad():
            for idx, (x, t) in enumerate(self.loader):
                out = self.logic.eval_step(self.models, idx, (x.to(self.device), t.to(self.device)))
                losses.append(out["val/loss"])
        self.history.append(sum(losses) / len(losses))


class Trainer:
    def __init__(self, models, optimizers, logic, max_epochs, evaluator=None, eval_every=6, device="cpu"):
        self.models = models
        self.optimizers = optimizers
        self.logic = logic
        self.max_epochs = max_epochs
        self.evaluator = evaluator
        self.eval_every = eval_every
        self.device = device
        self.iteration = 0
        self.losses = []

    def run(self, train_loader):
        for epoch in range(self.max_epochs):
            self.logic.train_epoch_begin(self.models, epoch, train_loader)
            for idx, (x, t) in enumerate(train_loader):
                out = self.logic.train_step(self.models, self.optimizers, idx,
                                            (x.to(self.device), t.to(self.device)))
                self.losses.append(out["loss"])
                self.iteration += 1
                if self.evaluator is not None and self.iteration % self.eval_every == 0:
                    self.logic.train_validation_begin(self.models)
                    self.evaluator.run()
                    self.logic.train_validation_end(self.models)


def main():
    torch.manual_seed(0)
    x = torch.randn(320, 8)
    t = x @ torch.randn(8, 1) + 0.1 * torch.randn(320, 1)
    train_loader = DataLoader(TensorDataset(x[:256], t[:256]), batch_size=32, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[256:], t[256:]), batch_size=32)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 1)).to(device)
    models = {"main": model}
    optimizers = {"main": torch.optim.Adam(model.parameters(), lr=1e-2)}
    logic = Logic()
    evaluator = Evaluator(val_loader, models, logic, device)
    trainer = Trainer(models, optimizers, logic, max_epochs=5, evaluator=evaluator, eval_every=6, device=device)
    trainer.run(train_loader)
    print("val loss:", [round(v, 4) for v in evaluator.history])
    losses = trainer.losses
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))


if __name__ == "__main__":
    main()
