# source: https://github.com/facebookresearch/clevr-iep/pull/22
# check_accuracy() puts both models in eval mode through a set_mode() helper that loops over a
# list of models, and is called periodically from inside the training loop; nothing puts them
# back in train mode, so the rest of training runs with dropout off and frozen BatchNorm stats.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def set_mode(mode, models):
    assert mode in ["train", "eval"]
    for m in models:
        if m is None:
            continue
        if mode == "train":
            m.train()
        if mode == "eval":
            m.eval()


def check_accuracy(program_generator, execution_engine, loader):
    set_mode("eval", [program_generator, execution_engine])  # expect: GL404
    num_correct, num_samples = 0, 0
    with torch.no_grad():
        for feats, answers in loader:
            programs = program_generator(feats)
            scores = execution_engine(feats, programs)
            num_correct += (scores.argmax(dim=1) == answers).sum().item()
            num_samples += answers.size(0)
    return num_correct / num_samples


class ProgramGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 16), nn.Dropout(0.2), nn.ReLU(), nn.Linear(16, 8))

    def forward(self, x):
        return self.net(x)


class ExecutionEngine(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(20)
        self.fc = nn.Linear(20, 3)

    def forward(self, feats, programs):
        return self.fc(F.relu(self.bn(torch.cat([feats, programs], dim=1))))


def train_loop(pg, ee, train_loader, val_loader, num_iterations, checkpoint_every):
    optimizer = torch.optim.Adam(list(pg.parameters()) + list(ee.parameters()), lr=1e-2)
    set_mode("train", [pg, ee])
    t, losses = 0, []
    while t < num_iterations:
        for feats, answers in train_loader:
            t += 1
            optimizer.zero_grad()
            scores = ee(feats, pg(feats))
            loss = F.cross_entropy(scores, answers)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if t % checkpoint_every == 0:
                check_accuracy(pg, ee, train_loader)
                check_accuracy(pg, ee, val_loader)
            if t >= num_iterations:
                break
    return losses


torch.manual_seed(0)
x = torch.randn(256, 12)
y = (x[:, 0] > 0).long() + (x[:, 1] > 1).long()
train_loader = DataLoader(TensorDataset(x[:192], y[:192]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(x[192:], y[192:]), batch_size=32)
losses = train_loop(ProgramGenerator(), ExecutionEngine(), train_loader, val_loader, 60, 20)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cpu"}))
