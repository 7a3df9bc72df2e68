# Hard negative, pending (engine-rooted; PRECISION20 A3). Real shape:
# DeepReinforcementLearning/DeepReinforcementLearningInAction, old_but_more_detailed/Ch3_DQN.ipynb
# (cells 6, 7, 22-27),
# https://github.com/DeepReinforcementLearning/DeepReinforcementLearningInAction/blob/d0e0bb62b636aa70c112de5ab8af2374d7914b74/old_but_more_detailed/Ch3_DQN.ipynb
# The target-network DQN `model3` is moved to the GPU when there is one (`model3.to(device)`) and
# trained there; the notebook then plays on the CPU: `testModel(model3.to('cpu'), 'random')`,
# then `test_win_perc(model3)`, whose games build their states with `torch.from_numpy(...)` on the
# host. `Module.to` moves in place: after the first call `model3` is on the CPU. The analysis does
# not apply a module's `.to('cpu')` written inside a call's argument list to the module itself
# (as a statement, `model3.to('cpu')`, it does) and reports the host states meeting `model` on the
# accelerator.
import copy
import json
import random

import numpy as np
import torch

torch.manual_seed(0)
random.seed(0)
np.random.seed(0)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
SIZE = 4
ACTIONS = [(-1, 0), (1, 0), (0, -1), (0, 1)]


class Gridworld:
    def __init__(self):
        self.player = [random.randrange(SIZE), random.randrange(SIZE)]
        self.goal = [SIZE - 1, SIZE - 1]

    def render_np(self):
        b = np.zeros((4, SIZE, SIZE), dtype=np.float32)
        b[0, self.player[0], self.player[1]] = 1.0
        b[1, self.goal[0], self.goal[1]] = 1.0
        return b

    def makeMove(self, a):
        dr, dc = ACTIONS[a]
        self.player = [min(max(self.player[0] + dr, 0), SIZE - 1), min(max(self.player[1] + dc, 0), SIZE - 1)]

    def reward(self):
        return 10 if self.player == self.goal else -1


def testModel(model, display=True):
    max_moves = 15
    win = False
    i = 0
    test_game = Gridworld()
    state = torch.from_numpy(test_game.render_np().reshape(1, 64)).float()
    status = 1
    while status == 1:
        with torch.no_grad():
            qval = model(state)
        action_ = int(np.argmax(qval.numpy()))
        test_game.makeMove(action_)
        state = torch.from_numpy(test_game.render_np().reshape(1, 64)).float()
        if test_game.reward() == 10:
            status = 0
            win = True
        i += 1
        if i > max_moves:
            break
    return win


def test_win_perc(model, max_games=50):
    wins = 0
    for i in range(max_games):
        win = testModel(model, display=False)
        if win:
            wins += 1
    return float(wins) / float(max_games)


model3 = torch.nn.Sequential(
    torch.nn.Linear(64, 150),
    torch.nn.ReLU(),
    torch.nn.Linear(150, 100),
    torch.nn.ReLU(),
    torch.nn.Linear(100, 4),
)
model3_ = copy.deepcopy(model3)  # target network
loss_fn3 = torch.nn.MSELoss()
optimizer3 = torch.optim.Adam(model3.parameters(), lr=1e-3)
model3.to(device)
model3_.to(device)


def q_targets(game):
    out = []
    for a in range(4):
        g = Gridworld()
        g.player, g.goal = list(game.player), list(game.goal)
        g.makeMove(a)
        dist = abs(g.player[0] - g.goal[0]) + abs(g.player[1] - g.goal[1])
        out.append(float(g.reward()) - dist)
    return torch.tensor([out])


losses = []
for i in range(300):
    game = Gridworld()
    state = torch.from_numpy(game.render_np().reshape(1, 64)).float().to(device)
    qval = model3(state)
    loss = loss_fn3(qval, q_targets(game).to(device))
    optimizer3.zero_grad()
    loss.backward()
    optimizer3.step()
    losses.append(loss.item())
    if i % 50 == 0:
        model3_.load_state_dict(model3.state_dict())

testModel(model3.to('cpu'))
win_perc = test_win_perc(model3)
print(json.dumps({"win_perc": win_perc}))
first, last = float(np.mean(losses[:20])), float(np.mean(losses[-20:]))
print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))
