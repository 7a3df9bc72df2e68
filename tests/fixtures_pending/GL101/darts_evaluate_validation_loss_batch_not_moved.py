# source: https://github.com/unit8co/darts/pull/449
# darts' TorchForecastingModel keeps the network in `self.model` on `self.device`
# (`_get_best_torch_device()`, cuda:0 when available). _train() moves every training batch to
# `self.device` before `self._produce_train_output(train_batch[:-1])`, but
# _evaluate_validation_loss() hands the validation loader's batches to the same helper unmoved,
# so fit(..., val_series=...) fails on a GPU after the first epoch (issue #413). The PR moves the
# validation batch the same way.
# fails-on-cuda: Input and parameter tensors are not at the same device
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class PastCovariatesSequentialDataset(Dataset):
    def __init__(self, series, covariates, input_chunk_length, output_chunk_length):
        self.series = series
        self.covariates = covariates
        self.icl = input_chunk_length
        self.ocl = output_chunk_length

    def __len__(self):
        return len(self.series) - self.icl - self.ocl + 1

    def __getitem__(self, idx):
        past_target = self.series[idx:idx + self.icl]
        past_covariate = self.covariates[idx:idx + self.icl]
        future_target = self.series[idx + self.icl:idx + self.icl + self.ocl]
        return past_target, past_covariate, future_target


class _BlockRNNModule(nn.Module):
    def __init__(self, input_size, hidden_dim, target_size, output_chunk_length):
        super().__init__()
        self.rnn = nn.GRU(input_size, hidden_dim, batch_first=True)
        self.fc = nn.Linear(hidden_dim, target_size * output_chunk_length)
        self.target_size = target_size
        self.ocl = output_chunk_length

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1, :]).view(x.shape[0], self.ocl, self.target_size)


class TorchForecastingModel:
    def __init__(self, input_chunk_length, output_chunk_length, batch_size=16, n_epochs=5, lr=1e-2):
        self.input_chunk_length = input_chunk_length
        self.output_chunk_length = output_chunk_length
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.lr = lr
        self.device = self._get_best_torch_device()
        self.criterion = nn.MSELoss()
        self.losses = []

    def _get_best_torch_device(self):
        is_cuda = torch.cuda.is_available()
        if is_cuda:
            return torch.device("cuda:0")
        else:
            return torch.device("cpu")

    def fit(self, series, covariates, val_series, val_covariates):
        train_dataset = PastCovariatesSequentialDataset(series, covariates, self.input_chunk_length, self.output_chunk_length)
        val_dataset = PastCovariatesSequentialDataset(val_series, val_covariates, self.input_chunk_length, self.output_chunk_length)
        self.model = _BlockRNNModule(series.shape[1] + covariates.shape[1], 16, series.shape[1], self.output_chunk_length)
        self.model = self.model.to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        train_loader = DataLoader(train_dataset, batch_size=self.batch_size, shuffle=True, drop_last=True)
        val_loader = DataLoader(val_dataset, batch_size=self.batch_size, shuffle=False)
        self._train(train_loader, val_loader)

    def _train(self, train_loader, val_loader):
        best_loss = float("inf")
        for epoch in range(self.n_epochs):
            total_loss = 0
            for batch_idx, train_batch in enumerate(train_loader):
                self.model.train()
                train_batch = tuple(t.to(self.device) for t in train_batch)
                output = self._produce_train_output(train_batch[:-1])
                target = train_batch[-1]
                loss = self._compute_loss(output, target)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                total_loss += loss.item()
                self.losses.append(loss.item())
            validation_loss = self._evaluate_validation_loss(val_loader)
            if validation_loss < best_loss:
                best_loss = validation_loss

    def _compute_loss(self, output, target):
        return self.criterion(output, target)

    def _produce_train_output(self, input_batch):
        past_target, past_covariate = input_batch
        inpt = torch.cat([past_target, past_covariate], dim=2)
        return self.model(inpt)

    def _evaluate_validation_loss(self, val_loader):
        total_loss = 0
        self.model.eval()
        with torch.no_grad():
            for batch_idx, val_batch in enumerate(val_loader):
                output = self._produce_train_output(val_batch[:-1])  # expect: GL101
                target = val_batch[-1]
                loss = self._compute_loss(output, target)
                total_loss += loss.item()
        return total_loss / (batch_idx + 1)


torch.manual_seed(0)
t = torch.linspace(0, 20, 160)
series = torch.stack([torch.sin(t), torch.cos(t)], dim=1)
covariates = torch.sin(2 * t).unsqueeze(1)
model = TorchForecastingModel(input_chunk_length=12, output_chunk_length=3, n_epochs=4)
model.fit(series[:120], covariates[:120], series[100:], covariates[100:])
print("GPULINT-TRAIN " + json.dumps({"first_loss": model.losses[0], "last_loss": model.losses[-1], "device": model.device.type}))
