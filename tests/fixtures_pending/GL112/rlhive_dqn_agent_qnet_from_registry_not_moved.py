# source: https://github.com/chandar-lab/RLHive/pull/83
# RLHive's `DQNAgent.__init__` builds its Q-network through the registry helper,
# `self._qnet = get_qnet(qnet)`, copies it for the target network and keeps
# `self._device = torch.device(device)`; `act()` moves each observation,
# `torch.tensor(...).to(self._device).float()`, and `update()` moves the sampled batch, but the
# networks are never moved: with `device="cuda"` the first `self._qnet(observation)` fails with
# "RuntimeError: Expected all tensors to be on the same device" (here an mat1/mat2 addmm).
# The PR ("Fix cuda issue with qnet to device") makes it `get_qnet(qnet).to(device)`.
# Here a one-step (contextual bandit) task with discount 0, so the TD loss falls.
# fails-on-cuda: Expected all tensors to be on the same device
import copy
import json

import numpy as np
import torch
import torch.nn as nn


class MLPNetwork(nn.Module):
    def __init__(self, in_dim, out_dim, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, out_dim))

    def forward(self, x):
        return self.net(x)


registry = {"MLPNetwork": MLPNetwork}


def get_qnet(qnet):
    return registry[qnet["name"]](**qnet["kwargs"])


class CircularReplayBuffer:
    def __init__(self, rng, capacity=512):
        self._rng = rng
        self._data = []
        self._capacity = capacity

    def add(self, **transition):
        self._data = (self._data + [transition])[-self._capacity:]

    def size(self):
        return len(self._data)

    def sample(self, batch_size):
        idx = self._rng.integers(len(self._data), size=batch_size)
        return {k: np.array([self._data[i][k] for i in idx]) for k in self._data[0]}


class DQNAgent:
    def __init__(self, qnet, obs_dim, act_dim, discount_rate=0.0, seed=42, batch_size=32, device="cpu"):
        self._obs_dim = obs_dim
        self._act_dim = act_dim
        qnet["kwargs"]["in_dim"] = self._obs_dim
        qnet["kwargs"]["out_dim"] = self._act_dim
        self._qnet = get_qnet(qnet)
        self._target_qnet = copy.deepcopy(self._qnet).requires_grad_(False)
        self._optimizer = torch.optim.Adam(self._qnet.parameters(), lr=1e-2)
        self._rng = np.random.default_rng(seed=seed)
        self._replay_buffer = CircularReplayBuffer(np.random.default_rng(seed=seed))
        self._discount_rate = discount_rate
        self._device = torch.device(device)
        self._loss_fn = torch.nn.SmoothL1Loss()
        self._batch_size = batch_size

    @torch.no_grad()
    def act(self, observation, epsilon=0.3):
        observation = torch.tensor(np.expand_dims(observation, axis=0)).to(self._device).float()
        qvals = self._qnet(observation).cpu()  # expect: GL112
        if self._rng.random() < epsilon:
            return int(self._rng.integers(self._act_dim))
        return int(torch.argmax(qvals).numpy())

    def update(self, update_info):
        self._replay_buffer.add(**update_info)
        if self._replay_buffer.size() < self._batch_size:
            return None
        batch = self._replay_buffer.sample(self._batch_size)
        for key in batch:
            batch[key] = torch.tensor(batch[key], device=self._device)
        pred_qvals = self._qnet(batch["observation"].float())
        pred_qvals = pred_qvals[torch.arange(self._batch_size, device=self._device), batch["action"].long()]
        next_qvals = self._target_qnet(batch["next_observation"].float()).max(dim=1)[0]
        q_targets = batch["reward"].float() + self._discount_rate * next_qvals * (1 - batch["done"].float())
        loss = self._loss_fn(pred_qvals, q_targets)
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        return loss.item()


torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
env_rng = np.random.default_rng(0)
agent = DQNAgent({"name": "MLPNetwork", "kwargs": {}}, obs_dim=4, act_dim=2, device=device)
losses = []
for step in range(300):
    observation = env_rng.normal(size=4).astype(np.float32)
    action = agent.act(observation)
    reward = float(action == int(observation[0] > 0))
    loss = agent.update({"observation": observation, "action": action, "reward": reward,
                         "next_observation": observation, "done": True})
    if loss is not None:
        losses.append(loss)

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": float(np.mean(losses[-20:])), "device": device}))
