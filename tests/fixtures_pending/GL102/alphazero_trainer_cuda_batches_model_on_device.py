# source: https://github.com/JoshVarty/AlphaZeroSimple/issues/7
# AlphaZeroSimple: the model places itself on `device` (cuda if available, else cpu) in its
# __init__, but Trainer.train sends every batch to the GPU with bare `.contiguous().cuda()`; on a
# machine without CUDA the first batch raises "Torch not compiled with CUDA enabled". The issue
# asks for `.to(self.model.device)`. (CPU-only crash: no fails-on-cuda header; the run trains on a GPU.)
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Connect2Model(nn.Module):
    def __init__(self, board_size, action_size, device):
        super(Connect2Model, self).__init__()
        self.device = device
        self.fc1 = nn.Linear(board_size, 16)
        self.action_head = nn.Linear(16, action_size)
        self.value_head = nn.Linear(16, 1)
        self.to(device)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        return F.softmax(self.action_head(x), dim=1), torch.tanh(self.value_head(x))


class Trainer:
    def __init__(self, model, args):
        self.model = model
        self.args = args

    def train(self, examples):
        optimizer = optim.Adam(self.model.parameters(), lr=5e-3)
        losses = []
        for epoch in range(self.args["epochs"]):
            self.model.train()
            batch_idx = 0
            while batch_idx < int(len(examples) / self.args["batch_size"]):
                sample_ids = np.random.randint(len(examples), size=self.args["batch_size"])
                boards, pis, vs = list(zip(*[examples[i] for i in sample_ids]))
                boards = torch.FloatTensor(np.array(boards).astype(np.float64))
                target_pis = torch.FloatTensor(np.array(pis))
                target_vs = torch.FloatTensor(np.array(vs).astype(np.float64))

                boards = boards.contiguous().cuda()  # expect: GL102
                target_pis = target_pis.contiguous().cuda()  # expect: GL102
                target_vs = target_vs.contiguous().cuda()  # expect: GL102

                out_pi, out_v = self.model(boards)
                l_pi = self.loss_pi(target_pis, out_pi)
                l_v = self.loss_v(target_vs, out_v)
                total_loss = l_pi + l_v
                optimizer.zero_grad()
                total_loss.backward()
                optimizer.step()
                losses.append(float(total_loss))
                batch_idx += 1
        return losses

    def loss_pi(self, targets, outputs):
        return -(targets * torch.log(outputs + 1e-8)).sum(dim=1).mean()

    def loss_v(self, targets, outputs):
        return torch.sum((targets - outputs.view(-1)) ** 2) / targets.size()[0]


np.random.seed(0)
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
args = {"batch_size": 16, "epochs": 15}
examples = []
for _ in range(64):
    board = np.random.randint(-1, 2, size=4)
    pi = np.zeros(4)
    pi[int(np.argmax(board == 0)) if (board == 0).any() else 0] = 1.0
    examples.append((board, pi, float(board.sum() > 0)))
model = Connect2Model(board_size=4, action_size=4, device=device)
losses = Trainer(model, args).train(examples)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
