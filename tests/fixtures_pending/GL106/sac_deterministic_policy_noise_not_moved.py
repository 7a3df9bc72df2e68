# source: https://github.com/pranz24/pytorch-soft-actor-critic/pull/21
# model.py: DeterministicPolicy.__init__ keeps `self.noise = torch.zeros(num_actions)` (and the
# action scale/bias tensors) as plain attributes and overrides `to(device)` to move the scale and
# bias by hand, but not the noise; sample() draws `noise = self.noise.normal_(0., std=0.1)` and adds
# it to the mean on the GPU, which fails ("Fix error with DeterministicPolicy": move the noise in
# to(); register_buffer would be the PyTorch-native way).
# fails-on-cuda: Expected all tensors to be on the same device
# (The repository writes `torch.Tensor(num_actions)`; `gpulint run` treats that legacy constructor's
# result as device-less, so the noise is made with torch.zeros here to fail under emulation too.)
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class QNetwork(nn.Module):
    def __init__(self, num_inputs, num_actions, hidden_dim):
        super().__init__()
        self.linear1 = nn.Linear(num_inputs + num_actions, hidden_dim)
        self.linear2 = nn.Linear(hidden_dim, 1)

    def forward(self, state, action):
        return self.linear2(F.relu(self.linear1(torch.cat([state, action], 1))))


class DeterministicPolicy(nn.Module):
    def __init__(self, num_inputs, num_actions, hidden_dim, action_space=None):
        super(DeterministicPolicy, self).__init__()
        self.linear1 = nn.Linear(num_inputs, hidden_dim)
        self.mean = nn.Linear(hidden_dim, num_actions)
        self.noise = torch.zeros(num_actions)  # expect: GL106
        self.action_scale = torch.tensor(1.0)
        self.action_bias = torch.tensor(0.0)

    def forward(self, state):
        return torch.tanh(self.mean(F.relu(self.linear1(state)))) * self.action_scale + self.action_bias

    def sample(self, state):
        mean = self.forward(state)
        noise = self.noise.normal_(0.0, std=0.1)
        noise = noise.clamp(-0.25, 0.25)
        action = mean + noise
        return action, torch.tensor(0.0), mean

    def to(self, device):
        self.action_scale = self.action_scale.to(device)
        self.action_bias = self.action_bias.to(device)
        return super(DeterministicPolicy, self).to(device)


class SAC(object):
    def __init__(self, num_inputs, num_actions, args):
        self.gamma = args["gamma"]
        self.device = torch.device("cuda" if args["cuda"] else "cpu")
        self.critic = QNetwork(num_inputs, num_actions, args["hidden_size"]).to(device=self.device)
        self.critic_optim = torch.optim.Adam(self.critic.parameters(), lr=args["lr"])
        self.policy = DeterministicPolicy(num_inputs, num_actions, args["hidden_size"]).to(self.device)
        self.policy_optim = torch.optim.Adam(self.policy.parameters(), lr=args["lr"])

    def update_parameters(self, memory):
        state_batch, action_batch, reward_batch = [t.to(self.device) for t in memory]
        qf = self.critic(state_batch, action_batch)
        qf_loss = F.mse_loss(qf, reward_batch)
        self.critic_optim.zero_grad()
        qf_loss.backward()
        self.critic_optim.step()
        pi, _, _ = self.policy.sample(state_batch)
        policy_loss = -self.critic(state_batch, pi).mean()
        self.policy_optim.zero_grad()
        policy_loss.backward()
        self.policy_optim.step()
        return qf_loss.item()


torch.manual_seed(0)
states = torch.randn(64, 4)
actions = torch.rand(64, 2) * 2 - 1
rewards = -(actions - states[:, :2].tanh()).pow(2).sum(1, keepdim=True)
agent = SAC(4, 2, {"gamma": 0.99, "cuda": torch.cuda.is_available(), "hidden_size": 32, "lr": 3e-3})
losses = []
for updates in range(40):
    idx = torch.randint(0, 64, (16,))
    losses.append(agent.update_parameters((states[idx], actions[idx], rewards[idx])))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": agent.device.type}))
