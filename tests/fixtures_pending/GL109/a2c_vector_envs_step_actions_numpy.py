# source: https://github.com/Farama-Foundation/Gymnasium/pull/390
# Gymnasium's vector-environment tutorial trains an A2C agent whose critic and actor are moved to
# `device` in the agent's constructor; `forward()` turns the batched observations into tensors on
# that device, so the sampled actions live there too, and the rollout loop hands them to
# `envs.step(actions.numpy())`. On a GPU the first step raises "can't convert cuda:0 device type
# tensor to numpy" (the PR: `actions.cpu().numpy()`).
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch
import torch.nn as nn
from torch import optim

torch.manual_seed(0)
np.random.seed(0)


class ToyVectorEnv:
    """Each sub-environment rewards the action that matches the larger of two observed features."""

    def __init__(self, num_envs, obs_dim=4):
        self.num_envs = num_envs
        self.obs_dim = obs_dim
        self.rng = np.random.default_rng(0)
        self.obs = None

    def reset(self, seed=None):
        self.obs = self.rng.standard_normal((self.num_envs, self.obs_dim)).astype(np.float32)
        return self.obs, {}

    def step(self, actions):
        rewards = (actions == self.obs[:, :2].argmax(axis=1)).astype(np.float32)
        self.obs = self.rng.standard_normal((self.num_envs, self.obs_dim)).astype(np.float32)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        return self.obs, rewards, terminated, truncated, {}


class A2C(nn.Module):
    def __init__(self, n_features, n_actions, device, critic_lr, actor_lr, n_envs):
        super().__init__()
        self.device = device
        self.n_envs = n_envs
        critic_layers = [nn.Linear(n_features, 32), nn.ReLU(), nn.Linear(32, 1)]
        actor_layers = [nn.Linear(n_features, 32), nn.ReLU(), nn.Linear(32, n_actions)]
        self.critic = nn.Sequential(*critic_layers).to(self.device)
        self.actor = nn.Sequential(*actor_layers).to(self.device)
        self.critic_optim = optim.RMSprop(self.critic.parameters(), lr=critic_lr)
        self.actor_optim = optim.RMSprop(self.actor.parameters(), lr=actor_lr)

    def forward(self, x):
        x = torch.Tensor(x).to(self.device)
        state_values = self.critic(x)
        action_logits_vec = self.actor(x)
        return (state_values, action_logits_vec)

    def select_action(self, x):
        state_values, action_logits = self.forward(x)
        action_pd = torch.distributions.Categorical(logits=action_logits)
        actions = action_pd.sample()
        action_log_probs = action_pd.log_prob(actions)
        entropy = action_pd.entropy()
        return (actions, action_log_probs, state_values, entropy)

    def get_losses(self, rewards, action_log_probs, value_preds, entropy, masks, gamma, ent_coef, device):
        T = len(rewards)
        advantages = torch.zeros(T, self.n_envs, device=device)
        gae = 0.0
        for t in reversed(range(T - 1)):
            td_error = rewards[t] + gamma * masks[t] * value_preds[t + 1] - value_preds[t]
            gae = td_error + gamma * 0.95 * masks[t] * gae
            advantages[t] = gae
        critic_loss = advantages.pow(2).mean()
        actor_loss = -(advantages.detach() * action_log_probs).mean() - ent_coef * entropy.mean()
        return (critic_loss, actor_loss)

    def update_parameters(self, critic_loss, actor_loss):
        self.critic_optim.zero_grad()
        critic_loss.backward()
        self.critic_optim.step()
        self.actor_optim.zero_grad()
        actor_loss.backward()
        self.actor_optim.step()


n_envs = 4
n_updates = 60
n_steps_per_update = 8
gamma = 0.9
ent_coef = 0.01
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
envs = ToyVectorEnv(n_envs)
agent = A2C(4, 2, device, 0.005, 0.005, n_envs)
states, info = envs.reset(seed=42)
mean_rewards = []
for sample_phase in range(n_updates):
    ep_value_preds = torch.zeros(n_steps_per_update, n_envs, device=device)
    ep_rewards = torch.zeros(n_steps_per_update, n_envs, device=device)
    ep_action_log_probs = torch.zeros(n_steps_per_update, n_envs, device=device)
    masks = torch.zeros(n_steps_per_update, n_envs, device=device)
    entropy = None
    for step in range(n_steps_per_update):
        actions, action_log_probs, state_value_preds, entropy = agent.select_action(states)
        states, rewards, terminated, truncated, infos = envs.step(actions.numpy())  # expect: GL109
        ep_value_preds[step] = torch.squeeze(state_value_preds)
        ep_rewards[step] = torch.tensor(rewards, device=device)
        ep_action_log_probs[step] = action_log_probs
        masks[step] = torch.tensor([not term for term in terminated], device=device)
    critic_loss, actor_loss = agent.get_losses(ep_rewards, ep_action_log_probs, ep_value_preds, entropy, masks, gamma, ent_coef, device)
    agent.update_parameters(critic_loss, actor_loss)
    mean_rewards.append(ep_rewards.mean().item())
# the loss the tutorial plots is the actor's; here the reward's complement is reported
losses = [1.0 - r for r in mean_rewards]
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:10]) / 10, "last_loss": sum(losses[-10:]) / 10, "device": device.type}))
