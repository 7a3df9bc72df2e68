# source: https://github.com/pytorch/examples/issues/165
# Adding CUDA to the REINFORCE example: with --cuda the script calls policy.cuda() and also
# optimizer.cuda() ("AttributeError: 'Adam' object has no attribute 'cuda'"); after removing that,
# select_action() still builds `state = torch.from_numpy(state).float().unsqueeze(0)` and calls
# `policy(Variable(state))` on the CPU tensor (the second traceback in the report).
# fails-on-cuda: 'Adam' object has no attribute 'cuda'
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable
from torch.distributions import Categorical

parser = argparse.ArgumentParser()
parser.add_argument("--gamma", type=float, default=0.9)
parser.add_argument("--seed", type=int, default=543)
parser.add_argument("--cuda", action="store_true", default=torch.cuda.is_available())
args = parser.parse_args([])


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 32)
        self.affine2 = nn.Linear(32, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        return F.softmax(self.affine2(x), dim=1)


torch.manual_seed(args.seed)
np.random.seed(args.seed)
policy = Policy()
optimizer = torch.optim.Adam(policy.parameters(), lr=3e-2)
if args.cuda:
    policy.cuda()
    optimizer.cuda()  # expect: GL103


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(Variable(state))  # expect: GL116
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode():
    R = 0
    returns = []
    for r in policy.rewards[::-1]:
        R = r + args.gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + 1e-6)
    policy_loss = torch.cat([-log_prob * R for log_prob, R in zip(policy.saved_log_probs, returns)]).sum()
    optimizer.zero_grad()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return policy_loss.item()


history = []
for i_episode in range(60):
    state = np.random.randn(4).astype(np.float32)
    total = 0.0
    for t in range(10):
        action = select_action(state)
        reward = 1.0 if action == int(state[0] > 0) else 0.0
        policy.rewards.append(reward)
        total += reward
        state = np.random.randn(4).astype(np.float32)
    finish_episode()
    history.append(10.0 - total)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:10]) / 10, "last_loss": sum(history[-10:]) / 10, "device": "cuda" if args.cuda else "cpu"}))
