# source: https://github.com/Emerge-Lab/PufferDrive/pull/405
# PufferDrive's port of the transition-PPO train loop (pufferlib/pufferl.py, `PuffeRL`): the
# trainer class keeps its rollout storage on `self`; with `cpu_offload` the observations are
# allocated on the CPU while actions, log-probabilities, values, returns and advantages live on the
# training device. `train()` flattens the storage, draws a permutation of the kept transition
# indices on their device (`keep_idx[torch.randperm(keep_idx.numel(), device=keep_idx.device)]`)
# and gathers each minibatch with `flat_obs[mb_idx]`, CUDA indices into the host observation
# buffer (the review: "Indexing a CPU tensor with CUDA indices will raise at runtime. To keep
# cpu_offload working, index observations with `mb_idx.cpu()`"). Here: a small actor-critic on a
# vectorised toy environment, run with `cpu_offload` on as in the review's scenario.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ToyVecEnv:
    """Each of `num_envs` agents sees a 4-d observation; action 1 pays when obs[0] > 0."""

    def __init__(self, num_envs, seed=0):
        self.num_envs = num_envs
        self.rng = np.random.default_rng(seed)
        self.obs = self.rng.normal(size=(num_envs, 4)).astype(np.float32)

    def step(self, actions):
        rewards = np.where((self.obs[:, 0] > 0) == (actions == 1), 1.0, -1.0).astype(np.float32)
        self.obs = self.rng.normal(size=(self.num_envs, 4)).astype(np.float32)
        terminals = self.rng.random(self.num_envs) < 0.1
        return self.obs, rewards, terminals


class Policy(nn.Module):
    def __init__(self, obs_dim=4, hidden=32, num_actions=2):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(obs_dim, hidden), nn.Tanh())
        self.actor = nn.Linear(hidden, num_actions)
        self.critic = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.encoder(obs)
        return self.actor(h), self.critic(h).squeeze(-1)


class PuffeRL:
    def __init__(self, config, vecenv, policy, device):
        self.config = config
        self.vecenv = vecenv
        self.policy = policy
        self.device = device
        segments, horizon = vecenv.num_envs, config["bptt_horizon"]
        obs_device = "cpu" if config["cpu_offload"] else device
        self.observations = torch.zeros(segments, horizon, 4, device=obs_device)
        self.actions = torch.zeros(segments, horizon, dtype=torch.long, device=device)
        self.logprobs = torch.zeros(segments, horizon, device=device)
        self.values = torch.zeros(segments, horizon, device=device)
        self.rewards = torch.zeros(segments, horizon, device=device)
        self.terminals = torch.zeros(segments, horizon, device=device)
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=config["learning_rate"])
        self.minibatch_size = config["minibatch_size"]
        self.losses = []

    @torch.no_grad()
    def evaluate(self):
        obs = self.vecenv.obs
        for t in range(self.config["bptt_horizon"]):
            o = torch.as_tensor(obs)
            self.observations[:, t] = o
            logits, value = self.policy(o.to(self.device))
            dist = torch.distributions.Categorical(logits=logits)
            action = dist.sample()
            obs, reward, terminal = self.vecenv.step(action.cpu().numpy())
            self.actions[:, t] = action
            self.logprobs[:, t] = dist.log_prob(action)
            self.values[:, t] = value
            self.rewards[:, t] = torch.as_tensor(reward).to(self.device)
            self.terminals[:, t] = torch.as_tensor(terminal.astype(np.float32)).to(self.device)

    def compute_advantages(self, gamma=0.9, lam=0.95):
        advantages = torch.zeros_like(self.values)
        last = torch.zeros_like(self.values[:, 0])
        for t in reversed(range(self.values.size(1))):
            next_value = self.values[:, t + 1] if t + 1 < self.values.size(1) else torch.zeros_like(last)
            nonterminal = 1.0 - self.terminals[:, t]
            delta = self.rewards[:, t] + gamma * next_value * nonterminal - self.values[:, t]
            last = delta + gamma * lam * nonterminal * last
            advantages[:, t] = last
        return advantages

    def train(self):
        config = self.config
        advantages = self.compute_advantages()
        returns = advantages + self.values
        flat_obs = self.observations.reshape(-1, 4)
        flat_actions = self.actions.reshape(-1)
        flat_logprobs = self.logprobs.reshape(-1)
        flat_returns = returns.reshape(-1)
        flat_advantages = advantages.reshape(-1)
        keep_idx = torch.arange(flat_actions.numel(), device=flat_actions.device)
        for _ in range(config["update_epochs"]):
            permutation = keep_idx[torch.randperm(keep_idx.numel(), device=keep_idx.device)]
            for start in range(0, permutation.numel(), self.minibatch_size):
                mb_idx = permutation[start : start + self.minibatch_size]
                mb_obs = flat_obs[mb_idx]  # expect: GL116
                mb_actions = flat_actions[mb_idx]
                mb_logprobs = flat_logprobs[mb_idx]
                mb_returns = flat_returns[mb_idx]
                mb_adv = flat_advantages[mb_idx]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                logits, value = self.policy(mb_obs.to(self.device))
                dist = torch.distributions.Categorical(logits=logits)
                ratio = (dist.log_prob(mb_actions) - mb_logprobs).exp()
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * ratio.clamp(0.8, 1.2)).mean()
                v_loss = F.mse_loss(value, mb_returns)
                loss = pg_loss + 0.5 * v_loss - 0.01 * dist.entropy().mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
        self.losses.append(1.0 - self.rewards.mean().item())


torch.manual_seed(0)
config = {"bptt_horizon": 16, "cpu_offload": True, "learning_rate": 3e-3, "minibatch_size": 64, "update_epochs": 2}
device = "cuda" if torch.cuda.is_available() else "cpu"
policy = Policy().to(device)
trainer = PuffeRL(config, ToyVecEnv(num_envs=16), policy, device)
for epoch in range(15):
    trainer.evaluate()
    trainer.train()
losses = trainer.losses
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": torch.device(device).type}))
