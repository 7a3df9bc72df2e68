# source: https://github.com/jaybutera/tetrisRL/pull/3 (the fix)
# Hard negative: both branches end with the network on the device (one through a helper that
# returns the moved model), so act()/learn() feed moved states to a moved model.
import json
import os
import tempfile

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DQN(nn.Module):
    def __init__(self, n_state=6, n_actions=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_state, 32), nn.ReLU(), nn.Linear(32, n_actions))

    def forward(self, x):
        return self.net(x)


def load_dqn(path):
    model = DQN()
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.to(device)


class Agent:
    def __init__(self, weights=None):
        if weights is None:
            self.model = DQN()
            self.model.to(device)
        else:
            self.model = load_dqn(weights)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.01)

    def learn(self, states, targets):
        states, targets = states.to(device), targets.to(device)
        loss = nn.functional.mse_loss(self.model(states), targets)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


torch.manual_seed(0)
W = torch.randn(6, 3)
agent = Agent()
losses = []
for step in range(30):
    s = torch.randn(32, 6)
    losses.append(agent.learn(s, s @ W))
path = os.path.join(tempfile.mkdtemp(), "dqn.pt")
torch.save(agent.model.state_dict(), path)
resumed = Agent(weights=path)
for step in range(30):
    s = torch.randn(32, 6)
    losses.append(resumed.learn(s, s @ W))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
