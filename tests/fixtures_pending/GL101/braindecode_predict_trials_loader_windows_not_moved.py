# source: https://github.com/braindecode/braindecode/pull/381 (commit e9423f46)
# braindecode's `predict_trials(module, dataset, return_targets=True)` (training/scoring.py) builds its
# own `DataLoader(dataset, batch_size=1, shuffle=False)` over a cropped windows dataset and calls
# `preds = module(X)` for every `X, y, ind` it yields, then regroups the window predictions per trial.
# The module is the one the classifier trained, on the GPU when one is used; the windows come off the
# loader on the host ("When the module is on GPU and data is on CPU, `predict_trials` will fail. In
# the tests, everything is always on CPU"). Here a small shallow conv net is trained on windows of
# synthetic two-class EEG trials on the available device, then the trials are predicted.
# fails-on-cuda: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor)
import json

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class WindowsDataset(Dataset):
    """Cropped windows of trials: each item is (X, y, [i_window_in_trial, i_start, i_stop])."""

    def __init__(self, n_trials, n_chans=4, trial_len=64, win_len=32, stride=16, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.items = []
        t = torch.arange(trial_len, dtype=torch.float32)
        for trial in range(n_trials):
            label = trial % 2
            freq = 0.1 if label == 0 else 0.3
            signal = torch.sin(freq * t).expand(n_chans, -1) + 0.3 * torch.randn(n_chans, trial_len, generator=g)
            for i_win, start in enumerate(range(0, trial_len - win_len + 1, stride)):
                self.items.append((signal[:, start:start + win_len].clone(), label, [i_win, start, start + win_len]))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return self.items[idx]


class ShallowNet(nn.Module):
    def __init__(self, n_chans=4, n_classes=2):
        super().__init__()
        self.temporal = nn.Conv1d(n_chans, 8, kernel_size=5, padding=2)
        self.classifier = nn.Linear(8, n_classes)

    def forward(self, x):
        x = torch.relu(self.temporal(x)) ** 2
        return self.classifier(x.mean(dim=2))


def trial_preds_from_window_preds(preds, i_window_in_trials):
    """Average the window predictions of each trial (a new trial starts at window index 0)."""
    trials, current = [], []
    for pred, i_win in zip(preds, i_window_in_trials.tolist()):
        if i_win == 0 and current:
            trials.append(np.mean(current, axis=0))
            current = []
        current.append(pred)
    trials.append(np.mean(current, axis=0))
    return trials


def predict_trials(module, dataset, return_targets=True):
    loader = DataLoader(dataset=dataset, batch_size=1, shuffle=False)
    all_preds, all_ys, all_inds = [], [], []
    with torch.no_grad():
        for X, y, ind in loader:
            preds = module(X)  # expect: GL101
            all_preds.extend(preds.cpu().numpy().astype(np.float32))
            all_ys.extend(y.cpu().numpy().astype(np.float32))
            all_inds.extend(ind)
    i_window_in_trials = torch.cat(all_inds[0::3])
    preds_per_trial = np.array(trial_preds_from_window_preds(all_preds, i_window_in_trials))
    if return_targets:
        all_ys = np.array(all_ys)
        ys_per_trial = all_ys[np.diff(i_window_in_trials.numpy(), prepend=[np.inf]) != 1]
        return preds_per_trial, ys_per_trial
    return preds_per_trial


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    train_set, valid_set = WindowsDataset(24, seed=0), WindowsDataset(8, seed=1)
    model = ShallowNet().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    criterion = nn.CrossEntropyLoss()
    train_loader = DataLoader(train_set, batch_size=8, shuffle=True)
    first_loss = last_loss = None
    for epoch in range(8):
        model.train()
        for X, y, _ in train_loader:
            X, y = X.to(device), y.to(device)
            loss = criterion(model(X), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if first_loss is None:
                first_loss = loss.item()
            last_loss = loss.item()

    model.eval()
    trial_preds, trial_ys = predict_trials(model, valid_set)
    accuracy = float((trial_preds.argmax(axis=1) == trial_ys).mean())
    print(f"trial accuracy {accuracy:.2f}")
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first_loss, "last_loss": last_loss, "device": torch.device(device).type}))


if __name__ == "__main__":
    main()
