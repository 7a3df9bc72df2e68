# source: https://github.com/lcswillems/rl-starter-files/issues/41
# utils/agent.py: the evaluation `Agent` builds its recurrent memories with
# `torch.zeros(num_envs, memory_size)` only when the model is recurrent (on the CPU), moves the
# actor-critic model to `self.device`, then `get_actions()` feeds `self.memories` to the model and
# `analyze_feedbacks()` multiplies them in place by a CPU mask; `scripts/evaluate.py --memory`
# fails on a GPU ("Expected object of backend CPU but got backend CUDA for argument #2 'mat2'").
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions.categorical import Categorical

torch.manual_seed(0)
np.random.seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
OBS_DIM, N_ACTIONS = 6, 3


class ACModel(nn.Module):
    def __init__(self, obs_dim, n_actions, use_memory=True):
        super().__init__()
        self.use_memory = use_memory
        self.embedding_size = 16
        self.encoder = nn.Sequential(nn.Linear(obs_dim, self.embedding_size), nn.Tanh())
        if self.use_memory:
            self.memory_rnn = nn.LSTMCell(self.embedding_size, self.semi_memory_size)
        self.actor = nn.Linear(self.embedding_size, n_actions)
        self.critic = nn.Linear(self.embedding_size, 1)

    @property
    def recurrent(self):
        return self.use_memory

    @property
    def memory_size(self):
        return 2 * self.semi_memory_size

    @property
    def semi_memory_size(self):
        return self.embedding_size

    def forward(self, obs, memory):
        x = self.encoder(obs)
        if self.use_memory:
            hidden = (memory[:, :self.semi_memory_size], memory[:, self.semi_memory_size:])
            hidden = self.memory_rnn(x, hidden)
            x = hidden[0]
            memory = torch.cat(hidden, dim=1)
        dist = Categorical(logits=F.log_softmax(self.actor(x), dim=1))
        value = self.critic(x).squeeze(1)
        return dist, value, memory


def preprocess_obss(obss, device=None):
    return torch.tensor(np.array(obss), device=device, dtype=torch.float)


def expert_action(obs):
    return int(np.argmax(obs[:N_ACTIONS]))


def train(acmodel, steps=60, num_envs=8):
    optimizer = torch.optim.Adam(acmodel.parameters(), lr=1e-2)
    memory = torch.zeros(num_envs, acmodel.memory_size, device=device)
    losses = []
    for step in range(steps):
        obss = np.random.randn(num_envs, OBS_DIM)
        target = torch.tensor([expert_action(o) for o in obss], device=device)
        dist, value, memory = acmodel(preprocess_obss(obss, device=device), memory.detach())
        loss = -dist.log_prob(target).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


class Agent:
    def __init__(self, acmodel_state, device=None, argmax=False, num_envs=1):
        self.acmodel = ACModel(OBS_DIM, N_ACTIONS)
        self.device = device
        self.argmax = argmax
        self.num_envs = num_envs

        if self.acmodel.recurrent:
            self.memories = torch.zeros(self.num_envs, self.acmodel.memory_size)

        self.acmodel.load_state_dict(acmodel_state)
        self.acmodel.to(self.device)
        self.acmodel.eval()

    def get_actions(self, obss):
        preprocessed_obss = preprocess_obss(obss, device=self.device)
        with torch.no_grad():
            if self.acmodel.recurrent:
                dist, _, self.memories = self.acmodel(preprocessed_obss, self.memories)  # expect: GL116
            else:
                dist, _, _ = self.acmodel(preprocessed_obss, None)
        if self.argmax:
            actions = dist.probs.max(1, keepdim=True)[1]
        else:
            actions = dist.sample()
        return actions.cpu().numpy()

    def analyze_feedbacks(self, rewards, dones):
        if self.acmodel.recurrent:
            masks = 1 - torch.tensor(dones, dtype=torch.float).unsqueeze(1)
            self.memories *= masks  # expect: GL116


model = ACModel(OBS_DIM, N_ACTIONS).to(device)
losses = train(model)

agent = Agent(model.state_dict(), device=device, argmax=True, num_envs=4)
correct = 0
for episode_step in range(10):
    obss = np.random.randn(4, OBS_DIM)
    actions = agent.get_actions(obss)
    rewards = [float(a == expert_action(o)) for a, o in zip(actions.reshape(-1), obss)]
    correct += sum(rewards)
    terminateds = [episode_step % 5 == 4] * 4
    truncateds = [episode_step == 9] * 4
    dones = tuple(a | b for a, b in zip(terminateds, truncateds))
    agent.analyze_feedbacks(rewards, dones)
print("evaluation accuracy:", correct / 40)

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
