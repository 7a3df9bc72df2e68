# source: https://github.com/LucasAlegre/morl-baselines/pull/178
# morl-baselines' test_nlmoppo: the utility handed to the non-linear multi-objective PPO agent is a
# closure over `weights_th = th.tensor(weights, dtype=th.float32)` (no device); the agent, which
# picked cuda with device="auto", calls `u_func(...)` on the vector returns of its rollouts, kept on
# its device, and `reward * weights_th` mixes the two (PR 178: "creating weights_th on the agent
# device").
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F


class TwoObjectiveBandit:
    """Deep-sea-treasure in miniature: action k pays a (treasure, time) vector reward."""

    rewards = np.array([[1.0, -1.0], [3.0, -3.0], [0.5, -0.2]], dtype=np.float32)

    def __init__(self, seed=0):
        self.rng = np.random.RandomState(seed)

    def step(self, actions):
        return self.rewards[actions] + 0.1 * self.rng.randn(len(actions), 2).astype(np.float32)


class NLMOPPO:
    def __init__(self, id, env, num_envs=16, learning_rate=3e-2, norm_adv=False, log=False, device="auto"):
        self.id = id
        self.env = env
        self.num_envs = num_envs
        self.norm_adv = norm_adv
        self.device = th.device("cuda" if th.cuda.is_available() else "cpu") if device == "auto" else th.device(device)
        self.actor = nn.Linear(1, 3).to(self.device)
        self.critic = nn.Linear(1, 1).to(self.device)
        self.optimizer = th.optim.Adam(list(self.actor.parameters()) + list(self.critic.parameters()), lr=learning_rate)
        self.losses = []

    def train(self, eval_env, u_func, deterministic=False, n_updates=40):
        obs = th.ones(self.num_envs, 1, device=self.device)
        for update in range(n_updates):
            dist = th.distributions.Categorical(logits=self.actor(obs))
            actions = dist.sample()
            vec_returns = th.tensor(self.env.step(actions.cpu().numpy()), device=self.device)
            utility = u_func(vec_returns)
            value = self.critic(obs).squeeze(-1)
            advantages = utility - value.detach()
            if self.norm_adv:
                advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
            pg_loss = -(dist.log_prob(actions) * advantages).mean()
            v_loss = F.mse_loss(value, utility)
            loss = pg_loss + 0.5 * v_loss
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.losses.append(v_loss.detach())


def test_nlmoppo():
    env = TwoObjectiveBandit(seed=0)
    weights = [1.0, 0.0]
    weights_np = np.array(weights)
    weights_th = th.tensor(weights, dtype=th.float32)

    def scalarization_th(reward: th.Tensor) -> th.Tensor:
        return th.sum(reward * weights_th, dim=-1)  # expect: GL116

    def scalarization_np(reward: np.ndarray) -> np.ndarray:
        return np.sum(reward * weights_np, axis=-1)

    agent = NLMOPPO(0, env, norm_adv=False, log=False)
    agent.train(eval_env=env, u_func=scalarization_th, deterministic=True)
    best = scalarization_np(env.rewards).argmax()
    return agent, best


th.manual_seed(0)
agent, best = test_nlmoppo()
losses = th.stack(agent.losses).tolist()
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:3]) / 3, "last_loss": sum(losses[-3:]) / 3, "device": agent.device.type}))
