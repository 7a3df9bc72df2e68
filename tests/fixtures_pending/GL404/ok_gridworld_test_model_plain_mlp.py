# fixture: cpu-only
# Hard negative (real shape: DeepReinforcementLearning/DeepReinforcementLearningInAction,
# "Chapter 3/Ch3_book.ipynb" and "Errata/Chapter 3.ipynb", the Gridworld DQN,
# https://github.com/DeepReinforcementLearning/DeepReinforcementLearningInAction/blob/d0e0bb62b636aa70c112de5ab8af2374d7914b74/Chapter%203/Ch3_book.ipynb):
# the Q-network is `torch.nn.Sequential(Linear, ReLU, Linear, ReLU, Linear)`, no dropout and no
# batch normalisation; after training, `test_model(model, mode)` plays one game greedily
# (`while(status == 1): qval = model(state) ...`) and a loop over 1000 games calls it. `train()` and
# `eval()` change nothing such a model computes. (The book calls the model with autograd on; the
# test loop here runs under `torch.no_grad()` so that only GL404's question is asked.)
# Pending: the analysis answers "mode-sensitive" for the function parameter `model`, because
# `TrainingFacts.mode_sensitive` takes the call sites' argument (the name `model`) as the value
# and does not follow that name to its binding (PRECISION20 A1).
import json
import random

import numpy as np
import torch

torch.manual_seed(0)
random.seed(0)
np.random.seed(0)

SIZE = 4
ACTIONS = [(-1, 0), (1, 0), (0, -1), (0, 1)]


class Gridworld:
    def __init__(self):
        self.player = [random.randrange(SIZE), random.randrange(SIZE)]
        self.goal = [SIZE - 1, SIZE - 1]

    def board(self):
        b = np.zeros((4, SIZE, SIZE), dtype=np.float32)
        b[0, self.player[0], self.player[1]] = 1.0
        b[1, self.goal[0], self.goal[1]] = 1.0
        return b.reshape(1, 64) + np.random.rand(1, 64).astype(np.float32) / 10.0

    def make_move(self, a):
        dr, dc = ACTIONS[a]
        self.player = [min(max(self.player[0] + dr, 0), SIZE - 1), min(max(self.player[1] + dc, 0), SIZE - 1)]

    def reward(self):
        return 10 if self.player == self.goal else -1


l1, l2, l3, l4 = 64, 150, 100, 4
model = torch.nn.Sequential(
    torch.nn.Linear(l1, l2),
    torch.nn.ReLU(),
    torch.nn.Linear(l2, l3),
    torch.nn.ReLU(),
    torch.nn.Linear(l3, l4),
)
loss_fn = torch.nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


def q_targets(game):
    # one-step lookahead: the reward of each move, minus the distance left to the goal
    out = []
    for a in range(4):
        g = Gridworld()
        g.player, g.goal = list(game.player), list(game.goal)
        g.make_move(a)
        dist = abs(g.player[0] - g.goal[0]) + abs(g.player[1] - g.goal[1])
        out.append(float(g.reward()) - dist)
    return torch.tensor([out])


losses = []
for i in range(300):
    game = Gridworld()
    state = torch.from_numpy(game.board()).float()
    qval = model(state)
    loss = loss_fn(qval, q_targets(game))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())


def test_model(model, display=True):
    i = 0
    test_game = Gridworld()
    state = torch.from_numpy(test_game.board()).float()
    status = 1
    with torch.no_grad():
        while status == 1:
            qval = model(state)
            action = int(np.argmax(qval.numpy()))
            test_game.make_move(action)
            state = torch.from_numpy(test_game.board()).float()
            if test_game.reward() != -1:
                status = 2
            i += 1
            if i > 15:
                break
    return status == 2


wins = 0
for i in range(50):
    if test_model(model, display=False):
        wins += 1
print(json.dumps({"win_perc": wins / 50}))
first, last = float(np.mean(losses[:20])), float(np.mean(losses[-20:]))
print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": "cpu"}))
