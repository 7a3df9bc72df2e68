# source: https://github.com/datawhalechina/torch-rechub/pull/26
# torch_rechub/trainers/ctr_trainer.py: CTRTrainer.__init__ builds the optimizer from
# `optimizer_fn(self.model.parameters(), **optimizer_params)` and only then moves the model with
# `self.model.to(self.device)` ("optimizer init should after model.to(device)"). With Adagrad,
# whose per-parameter state is created at construction, the state stays on the CPU while the
# parameters move: the first step fails on a GPU. Here the caller passes Adagrad, as the
# trainer's optimizer_fn argument allows.
# fails-on-cuda: Tensors of the same index must be on the same device
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class WideDeep(nn.Module):
    def __init__(self, n_feats=10, n_emb=32, dim=8):
        super().__init__()
        self.emb = nn.Embedding(n_emb, dim)
        self.wide = nn.Linear(n_feats, 1)
        self.deep = nn.Sequential(nn.Linear(dim, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, dense, sparse):
        return torch.sigmoid(self.wide(dense) + self.deep(self.emb(sparse).mean(dim=1))).squeeze(1)


class CTRTrainer:
    def __init__(self, model, optimizer_fn=torch.optim.Adam, optimizer_params=None, n_epoch=4, device="cpu"):
        self.model = model
        if optimizer_params is None:
            optimizer_params = {"lr": 1e-3, "weight_decay": 1e-5}
        self.optimizer = optimizer_fn(self.model.parameters(), **optimizer_params)  # expect: GL118
        self.criterion = torch.nn.BCELoss()
        self.n_epoch = n_epoch
        self.device = torch.device(device)
        self.model.to(self.device)
        self.losses = []

    def train_one_epoch(self, data_loader):
        self.model.train()
        for dense, sparse, y in data_loader:
            dense, sparse, y = dense.to(self.device), sparse.to(self.device), y.to(self.device)
            y_pred = self.model(dense, sparse)
            loss = self.criterion(y_pred, y.float())
            self.model.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.losses.append(loss.item())

    def fit(self, train_dataloader):
        for epoch_i in range(self.n_epoch):
            self.train_one_epoch(train_dataloader)


torch.manual_seed(0)
dense = torch.randn(256, 10)
sparse = torch.randint(0, 32, (256, 3))
y = ((dense[:, 0] + (sparse[:, 0] % 2)) > 0.5).long()
loader = DataLoader(TensorDataset(dense, sparse, y), batch_size=32, shuffle=True)
device = "cuda" if torch.cuda.is_available() else "cpu"
trainer = CTRTrainer(WideDeep(), optimizer_fn=torch.optim.Adagrad, optimizer_params={"lr": 0.1}, device=device)
trainer.fit(loader)
print("GPULINT-TRAIN " + json.dumps({"first_loss": trainer.losses[0], "last_loss": trainer.losses[-1], "device": torch.device(device).type}))
