# source: https://github.com/LucasAlegre/morl-baselines/pull/185
# GPI-PD's continuous-action agent samples its prioritized replay buffer with `to_tensor=True` on
# `self.device`, so the sampled indices come back as a tensor on that device with the
# transitions; after the TD update it hands them back with
# `self.replay_buffer.update_priorities(idxes, priority)`, and the buffer's sum tree calls
# `np.unique` on them: on a GPU this raises "can't convert cuda:0 device type tensor to numpy"
# (the PR moves `idxes` to the CPU first, as the priorities already were). A small Q-network on a
# synthetic task stands in for the multi-objective agent.
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F

th.manual_seed(0)
np.random.seed(0)


class SumTree:
    def __init__(self, max_size):
        self.nodes = []
        level_size = 1
        for _ in range(int(np.ceil(np.log2(max_size))) + 1):
            self.nodes.append(np.zeros(level_size))
            level_size *= 2

    def batch_sample(self, values):
        idxs = np.zeros(len(values), dtype=int)
        for nodes in self.nodes[1:]:
            idxs *= 2
            left_sums = nodes[idxs]
            is_greater = np.greater(values, left_sums)
            idxs = idxs + is_greater
            values = values - left_sums * is_greater
        return idxs

    def batch_set(self, ind, new_priority):
        ind, unique_ind = np.unique(ind, return_index=True)  # expect: GL109
        priority_diff = new_priority[unique_ind] - self.nodes[-1][ind]
        for nodes in self.nodes[::-1]:
            np.add.at(nodes, ind, priority_diff)
            ind //= 2

    def max(self):
        return self.nodes[-1].max()


class PrioritizedReplayBuffer:
    def __init__(self, obs_shape, action_dim, max_size=1000, min_priority=1e-5):
        self.max_size = max_size
        self.ptr, self.size = 0, 0
        self.obs = np.zeros((max_size,) + obs_shape, dtype=np.float32)
        self.actions = np.zeros((max_size, action_dim), dtype=np.float32)
        self.rewards = np.zeros((max_size, 1), dtype=np.float32)
        self.tree = SumTree(max_size)
        self.min_priority = min_priority

    def add(self, obs, action, reward):
        self.obs[self.ptr] = np.array(obs).copy()
        self.actions[self.ptr] = np.array(action).copy()
        self.rewards[self.ptr] = np.array(reward).copy()
        self.tree.batch_set(np.array([self.ptr]), np.array([self.min_priority ** 0.6]))
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def sample(self, batch_size, to_tensor=False, device=None):
        idxes = self.tree.batch_sample(np.random.uniform(0, self.tree.nodes[0][0], batch_size))
        idxes = np.minimum(idxes, self.size - 1)
        experience_tuples = (self.obs[idxes], self.actions[idxes], self.rewards[idxes])
        if to_tensor:
            return tuple(map(lambda x: th.tensor(x).to(device), experience_tuples)) + (th.tensor(idxes).to(device),)
        return experience_tuples + (idxes,)

    def update_priorities(self, idxes, priorities):
        priorities = np.maximum(priorities, self.min_priority)
        self.tree.batch_set(idxes, priorities ** 0.6)


class QNet(nn.Module):
    def __init__(self, obs_dim, action_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim + action_dim, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, obs, action):
        return self.net(th.cat([obs, action], dim=1))


class GPIPDContinuousAction:
    def __init__(self, obs_dim=4, action_dim=2, batch_size=32, device="auto"):
        self.device = th.device("cuda" if th.cuda.is_available() else "cpu") if device == "auto" else device
        self.batch_size = batch_size
        self.q_net = QNet(obs_dim, action_dim).to(self.device)
        self.q_optim = th.optim.Adam(self.q_net.parameters(), lr=3e-3)
        self.replay_buffer = PrioritizedReplayBuffer((obs_dim,), action_dim)

    def update(self):
        s_obs, s_actions, s_rewards, idxes = self.replay_buffer.sample(self.batch_size, to_tensor=True, device=self.device)
        q_values = self.q_net(s_obs, s_actions)
        td_error = q_values - s_rewards
        critic_loss = (td_error ** 2).mean()
        self.q_optim.zero_grad()
        critic_loss.backward()
        self.q_optim.step()
        per = td_error.abs().detach().max(dim=1)[0]
        priority = per.cpu().numpy().flatten()
        self.replay_buffer.update_priorities(idxes, priority)
        return critic_loss.item()


agent = GPIPDContinuousAction()
losses = []
for step in range(200):
    obs = np.random.randn(4).astype(np.float32)
    action = np.random.uniform(-1, 1, 2).astype(np.float32)
    agent.replay_buffer.add(obs, action, [float(obs[:2] @ action)])
    if agent.replay_buffer.size >= agent.batch_size:
        losses.append(agent.update())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:10]) / 10, "last_loss": sum(losses[-10:]) / 10, "device": agent.device.type}))
