# source: https://github.com/huggingface/deep-rl-class/issues/56
# The course's REINFORCE Policy.act() turns the numpy state into a tensor and moves it to the
# device before calling self.forward; the "find the mistake" policy is built with
# `Policy(s_size, a_size, 64)` and never moved, so the first act() fails in the first Linear.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class Policy(nn.Module):
    def __init__(self, s_size, a_size, h_size):
        super().__init__()
        self.fc1 = nn.Linear(s_size, h_size)
        self.fc2 = nn.Linear(h_size, a_size)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        return F.softmax(self.fc2(x), dim=1)

    def act(self, state):
        state = torch.from_numpy(state).float().unsqueeze(0).to(device)
        probs = self.forward(state).cpu()  # expect: GL112
        m = Categorical(probs)
        action = m.sample()
        return action.item(), m.log_prob(action)


class BanditEnv:
    """One-step task: the rewarded action is the index of the largest state entry."""

    def __init__(self, rng):
        self.rng = rng

    def reset(self):
        self.state = self.rng.standard_normal(4).astype(np.float32)
        return self.state

    def step(self, action):
        return float(action == int(self.state.argmax()))


torch.manual_seed(0)
env = BanditEnv(np.random.default_rng(0))
debug_policy = Policy(4, 4, 64)
optimizer = torch.optim.Adam(debug_policy.parameters(), lr=1e-2)
losses = []
for episode in range(300):
    action, log_prob = debug_policy.act(env.reset())
    reward = env.step(action)
    loss = -log_prob * (reward - 0.5)
    optimizer.zero_grad()
    loss.sum().backward()
    optimizer.step()
    losses.append(1.0 - reward)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:50]) / 50, "last_loss": sum(losses[-50:]) / 50, "device": device.type}))
