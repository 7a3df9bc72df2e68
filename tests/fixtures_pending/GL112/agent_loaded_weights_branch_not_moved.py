# source: https://github.com/jaybutera/tetrisRL/pull/3
# A DQN-style agent: a fresh network is moved to the device, but the branch that loads saved
# weights builds the network and never moves it; act()/learn() move the states to the device.
# fails-on-cuda: Expected all tensors to be on the same device
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


class Agent:
    def __init__(self, weights=None):
        if weights is None:
            self.model = DQN().to(device)
        else:
            self.model = DQN()
            self.model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.01)

    def learn(self, states, targets):
        states, targets = states.to(device), targets.to(device)
        q = self.model(states)  # expect: GL112
        loss = nn.functional.mse_loss(q, targets)
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
