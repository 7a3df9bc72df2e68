# source: https://github.com/DLR-RM/stable-baselines3/issues/111
# The policy class receives `device=` and puts its feature extractor there, but the action and
# value heads it builds next stay on the CPU; predict() moves the observation to self.device, so
# the heads get GPU features ("BasePolicy does not place all sub-modules on the requested device").
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class ActorCriticPolicy(nn.Module):
    def __init__(self, obs_dim, n_actions, device):
        super().__init__()
        self.device = device
        self.mlp_extractor = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh()).to(self.device)
        self.action_net = nn.Linear(64, n_actions)
        self.value_net = nn.Linear(64, 1)

    def forward(self, obs):
        latent = self.mlp_extractor(obs)
        return self.action_net(latent), self.value_net(latent)  # expect: GL116

    def predict(self, observation):
        observation = torch.as_tensor(observation).to(self.device)
        return self.forward(observation)


torch.manual_seed(0)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
policy = ActorCriticPolicy(6, 3, device)
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
obs = torch.randn(512, 6)
best = obs[:, :3].argmax(dim=1)
returns = obs[:, 3:].sum(dim=1, keepdim=True)
losses = []
for step in range(60):
    idx = torch.randint(0, 512, (64,))
    logits, values = policy.predict(obs[idx])
    loss = nn.functional.cross_entropy(logits, best[idx].to(device)) + nn.functional.mse_loss(values, returns[idx].to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
