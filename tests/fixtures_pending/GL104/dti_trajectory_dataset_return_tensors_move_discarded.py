# source: https://github.com/jbloomAus/DecisionTransformerInterpretability/pull/5
# Decision Transformer Interpretability (offline_dataset.py + trainer + run script in one file):
# TrajectoryDataset.return_tensors() is meant to put every field on `self.device`, but for fields
# that are already tensors (trajectories stored as tensors) it calls `s.to(dtype=..., device=...)`
# as a bare statement and drops the result, so states, actions, rewards and returns-to-go reach
# the model on the CPU while it trains on the GPU (`--cuda`).
# fails-on-cuda: Expected all tensors to be on the same device
import json
import random

import numpy as np
import torch as t
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class TrajectoryDataset(Dataset):
    def __init__(self, trajectories, max_len=1, prob_go_from_end=0, rtg_scale=1, device="cpu"):
        self.max_len = max_len
        self.prob_go_from_end = prob_go_from_end
        self.rtg_scale = rtg_scale
        self.device = device
        self.states, self.actions, self.rewards = trajectories
        self.indices = list(range(len(self.states)))
        self.state_dim = self.states[0].shape[1:]

    def discount_cumsum(self, x, gamma):
        out = t.zeros_like(x)
        running = 0.0
        for i in reversed(range(x.shape[0])):
            running = x[i] + gamma * running
            out[i] = running
        return out

    def get_traj(self, traj_index, max_len=100, prob_go_from_end=None):
        traj_rewards = self.rewards[traj_index]
        traj_states = self.states[traj_index]
        traj_actions = self.actions[traj_index]
        si = random.randint(0, traj_rewards.shape[0] - max_len)
        if prob_go_from_end is not None and random.random() < prob_go_from_end:
            si = traj_rewards.shape[0] - max_len
        s = traj_states[si:si + max_len].reshape(1, -1, *self.state_dim)
        a = traj_actions[si:si + max_len].reshape(1, -1)
        r = traj_rewards[si:si + max_len].reshape(1, -1, 1)
        rtg = self.discount_cumsum(traj_rewards[si:], gamma=1.0)[:s.shape[1]].reshape(1, -1, 1)
        d = np.zeros((1, s.shape[1]))
        ti = np.arange(si, si + s.shape[1]).reshape(1, -1)
        m = np.ones((1, s.shape[1]))
        rtg = rtg / self.rtg_scale
        return self.return_tensors(s, a, r, rtg, d, ti, m)

    def return_tensors(self, s, a, r, rtg, d, timesteps, mask):
        if isinstance(s, t.Tensor):
            s.to(dtype=t.float32, device=self.device)  # expect: GL104
        else:
            s = t.from_numpy(s).to(dtype=t.float32, device=self.device)

        if isinstance(a, t.Tensor):
            a.to(dtype=t.long, device=self.device)  # expect: GL104
        else:
            a = t.from_numpy(a).to(dtype=t.long, device=self.device)

        if isinstance(r, t.Tensor):
            r.to(dtype=t.float32, device=self.device)  # expect: GL104
        else:
            r = t.from_numpy(r).to(dtype=t.float32, device=self.device)

        if isinstance(rtg, t.Tensor):
            rtg.to(dtype=t.float32, device=self.device)  # expect: GL104
        else:
            rtg = t.from_numpy(rtg).to(dtype=t.float32, device=self.device)

        if isinstance(d, t.Tensor):
            d = d.to(dtype=t.bool, device=self.device)
        else:
            d = t.from_numpy(d).to(dtype=t.bool, device=self.device)
        timesteps = t.from_numpy(timesteps).to(dtype=t.long, device=self.device)
        mask = t.from_numpy(mask).to(dtype=t.bool, device=self.device)
        return (s.squeeze(0), a.squeeze(0), r.squeeze(0), d.squeeze(0), rtg.squeeze(0),
                timesteps.squeeze(0), mask.squeeze(0))

    def __len__(self):
        return len(self.indices)

    def __getitem__(self, idx):
        traj_index = self.indices[idx]
        return self.get_traj(traj_index, max_len=self.max_len, prob_go_from_end=self.prob_go_from_end)


class DecisionTransformer(nn.Module):
    def __init__(self, state_dim, n_actions, d_model=32, max_timestep=64):
        super().__init__()
        self.state_embedding = nn.Linear(state_dim, d_model)
        self.action_embedding = nn.Embedding(n_actions, d_model)
        self.reward_embedding = nn.Linear(1, d_model)
        self.time_embedding = nn.Embedding(max_timestep, d_model)
        self.block = nn.Sequential(nn.LayerNorm(d_model), nn.Linear(d_model, d_model), nn.GELU())
        self.action_predictor = nn.Linear(d_model, n_actions)

    def forward(self, states, actions, rtgs, timesteps):
        h = self.state_embedding(states) + self.reward_embedding(rtgs) + self.time_embedding(timesteps)
        h = h + self.block(h)
        return self.action_predictor(h)


def train(model, trajectory_data_set, batch_size=8, n_epochs=6, lr=3e-3):
    loss_fn = nn.CrossEntropyLoss()
    optimizer = t.optim.Adam(model.parameters(), lr=lr)
    dataloader = DataLoader(trajectory_data_set, batch_size=batch_size, shuffle=True)
    losses = []
    for epoch in range(n_epochs):
        for batch, (s, a, r, d, rtg, ti, m) in enumerate(dataloader):
            action_preds = model(states=s, actions=a, rtgs=rtg, timesteps=ti)
            loss = loss_fn(action_preds[m], a[m])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


if __name__ == "__main__":
    random.seed(0)
    t.manual_seed(0)
    use_cuda = True
    device = "cuda" if use_cuda and t.cuda.is_available() else "cpu"
    states = [t.randn(40, 6) for _ in range(24)]
    actions = [s[:, :3].argmax(-1) for s in states]
    rewards = [(a == 1).float() for a in actions]
    dataset = TrajectoryDataset((states, actions, rewards), max_len=10, prob_go_from_end=0.1, device=device)
    model = DecisionTransformer(state_dim=6, n_actions=3).to(device)
    losses = train(model, dataset)
    first, last = sum(losses[:4]) / 4, sum(losses[-4:]) / 4
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": t.device(device).type}))
