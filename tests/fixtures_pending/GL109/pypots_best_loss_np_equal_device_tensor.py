# source: https://github.com/WenjieDu/PyPOTS/issues/10
# PyPOTS' BaseImputer._train_model keeps the best validation MAE in `self.best_loss`: the MAE is
# computed with torch from the model's imputations (on the device) and the validation ground
# truth that fit() moved to `self.device`, so best_loss becomes a CUDA tensor; after the epochs,
# `if np.equal(self.best_loss, float("inf")):` asks NumPy to convert it and fails with
# "can't convert cuda:0 device type tensor to numpy" (tests/test_imputation.py on a GPU).
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch
import torch.nn as nn


def cal_mae(inputs, target, mask):
    return torch.sum(torch.abs(inputs - target) * mask) / (torch.sum(mask) + 1e-9)


class _BRITSLike(nn.Module):
    def __init__(self, n_features, hidden):
        super().__init__()
        self.rnn = nn.GRU(n_features * 2, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_features)

    def forward(self, inputs):
        X, mask = inputs["X"], inputs["missing_mask"]
        h, _ = self.rnn(torch.cat([X, mask], dim=2))
        estimation = self.out(h)
        imputed = mask * X + (1 - mask) * estimation
        loss = cal_mae(estimation, X, mask)
        return {"imputed_data": imputed, "loss": loss}


class BaseImputer:
    def __init__(self, device):
        self.device = device
        self.model = None
        self.optimizer = None
        self.best_loss = float("inf")
        self.best_model_dict = None
        self.losses = []

    def _assemble_input_data(self, data):
        X, missing_mask = data
        return {"X": X.to(self.device), "missing_mask": missing_mask.to(self.device)}

    def _train_model(self, training_loader, val_loader, val_X_intact, val_indicating_mask):
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        for epoch in range(self.epochs):
            self.model.train()
            for data in training_loader:
                inputs = self._assemble_input_data(data)
                self.optimizer.zero_grad()
                results = self.model.forward(inputs)
                results["loss"].backward()
                self.optimizer.step()
                self.losses.append(results["loss"].item())
            self.model.eval()
            imputation_collector = []
            with torch.no_grad():
                for data in val_loader:
                    inputs = self._assemble_input_data(data)
                    results = self.model.forward(inputs)
                    imputation_collector.append(results["imputed_data"])
            imputation_collector = torch.cat(imputation_collector)
            mean_val_loss = cal_mae(imputation_collector, val_X_intact, val_indicating_mask)
            if mean_val_loss < self.best_loss:
                self.best_loss = mean_val_loss
                self.best_model_dict = self.model.state_dict()
        if np.equal(self.best_loss, float("inf")):  # expect: GL109
            raise ValueError("Models all got NaN for training loss. Try another set of parameters.")
        self.model.load_state_dict(self.best_model_dict)


class BRITS(BaseImputer):
    def __init__(self, n_features, hidden, epochs, lr, device):
        super().__init__(device)
        self.epochs = epochs
        self.lr = lr
        self.model = _BRITSLike(n_features, hidden).to(self.device)

    def fit(self, train_X, train_mask, val_X, val_mask, val_X_intact, val_indicating_mask):
        training_loader = [(train_X[i:i + 16], train_mask[i:i + 16]) for i in range(0, len(train_X), 16)]
        val_loader = [(val_X[i:i + 16], val_mask[i:i + 16]) for i in range(0, len(val_X), 16)]
        val_X_intact = val_X_intact.to(self.device)
        val_indicating_mask = val_indicating_mask.to(self.device)
        self._train_model(training_loader, val_loader, val_X_intact, val_indicating_mask)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
full = torch.sin(torch.linspace(0, 12, 24)).repeat(64, 1).unsqueeze(2).repeat(1, 1, 3) + 0.1 * torch.randn(64, 24, 3)
mask = (torch.rand(64, 24, 3) > 0.2).float()
indicating = (torch.rand(64, 24, 3) > 0.8).float() * mask
observed = full * mask
val_mask = mask - indicating
brits = BRITS(n_features=3, hidden=16, epochs=4, lr=1e-2, device=device)
brits.fit(observed[:48], mask[:48], observed[48:] * val_mask[48:], val_mask[48:], full[48:], indicating[48:])
print("GPULINT-TRAIN " + json.dumps({"first_loss": brits.losses[0], "last_loss": brits.losses[-1], "device": device.type}))
