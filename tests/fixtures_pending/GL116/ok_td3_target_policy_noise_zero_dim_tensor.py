# source: https://github.com/philtabor/Actor-Critic-Methods-Paper-To-Code/blob/10d46855496e/TD3/td3_torch.py
# Hard negative (engine-rooted false positive, benchmarks/PRECISION32.md, pending A1): the TD3
# agent's target policy smoothing adds `T.clamp(T.tensor(np.random.normal(scale=0.2)), -0.5, 0.5)`
# to the target actor's output. `np.random.normal(scale=0.2)` without `size` is one Python float,
# so `T.tensor(...)` is a 0-dimensional CPU tensor, which PyTorch lets meet CUDA tensors (it is
# treated as a scalar). Every network keeps `self.device` (cuda when available) and moves itself;
# the batch is moved with `.to(self.critic_1.device)`. GL116 reports the addition as a host/GPU
# mismatch; nothing mismatches on a GPU.
import json

import numpy as np
import torch as T
import torch.nn as nn
import torch.nn.functional as F


class CriticNetwork(nn.Module):
    def __init__(self, input_dims, n_actions, fc1_dims=32, fc2_dims=32):
        super().__init__()
        self.fc1 = nn.Linear(input_dims + n_actions, fc1_dims)
        self.fc2 = nn.Linear(fc1_dims, fc2_dims)
        self.q1 = nn.Linear(fc2_dims, 1)
        self.device = T.device('cuda:0' if T.cuda.is_available() else 'cpu')
        self.to(self.device)

    def forward(self, state, action):
        q1_action_value = F.relu(self.fc1(T.cat([state, action], dim=1)))
        q1_action_value = F.relu(self.fc2(q1_action_value))
        return self.q1(q1_action_value)


class ActorNetwork(nn.Module):
    def __init__(self, input_dims, n_actions, fc1_dims=32, fc2_dims=32):
        super().__init__()
        self.fc1 = nn.Linear(input_dims, fc1_dims)
        self.fc2 = nn.Linear(fc1_dims, fc2_dims)
        self.mu = nn.Linear(fc2_dims, n_actions)
        self.device = T.device('cuda:0' if T.cuda.is_available() else 'cpu')
        self.to(self.device)

    def forward(self, state):
        prob = F.relu(self.fc1(state))
        prob = F.relu(self.fc2(prob))
        return T.tanh(self.mu(prob))


class Agent:
    def __init__(self, input_dims, n_actions, gamma=0.9, tau=0.05, lr=1e-3):
        self.gamma = gamma
        self.tau = tau
        self.max_action = np.ones(n_actions)
        self.min_action = -np.ones(n_actions)
        self.actor = ActorNetwork(input_dims, n_actions)
        self.critic_1 = CriticNetwork(input_dims, n_actions)
        self.critic_2 = CriticNetwork(input_dims, n_actions)
        self.target_actor = ActorNetwork(input_dims, n_actions)
        self.target_critic_1 = CriticNetwork(input_dims, n_actions)
        self.target_critic_2 = CriticNetwork(input_dims, n_actions)
        self.target_actor.load_state_dict(self.actor.state_dict())
        self.target_critic_1.load_state_dict(self.critic_1.state_dict())
        self.target_critic_2.load_state_dict(self.critic_2.state_dict())
        self.critic_optimizer = T.optim.Adam(
            list(self.critic_1.parameters()) + list(self.critic_2.parameters()), lr=lr)

    def learn(self, state, action, reward, new_state, done):
        reward = T.tensor(reward, dtype=T.float).to(self.critic_1.device)
        done = T.tensor(done).to(self.critic_1.device)
        state_ = T.tensor(new_state, dtype=T.float).to(self.critic_1.device)
        state = T.tensor(state, dtype=T.float).to(self.critic_1.device)
        action = T.tensor(action, dtype=T.float).to(self.critic_1.device)

        target_actions = self.target_actor.forward(state_)
        target_actions = target_actions + \
            T.clamp(T.tensor(np.random.normal(scale=0.2)), -0.5, 0.5)
        target_actions = T.clamp(target_actions, self.min_action[0], self.max_action[0])

        q1_ = self.target_critic_1.forward(state_, target_actions)
        q2_ = self.target_critic_2.forward(state_, target_actions)
        q1 = self.critic_1.forward(state, action)
        q2 = self.critic_2.forward(state, action)
        q1_[done] = 0.0
        q2_[done] = 0.0
        critic_value_ = T.min(q1_.view(-1), q2_.view(-1))
        target = (reward + self.gamma * critic_value_).view(-1, 1).detach()

        self.critic_optimizer.zero_grad()
        critic_loss = F.mse_loss(target, q1) + F.mse_loss(target, q2)
        critic_loss.backward()
        self.critic_optimizer.step()
        return critic_loss.item()


np.random.seed(0)
T.manual_seed(0)
agent = Agent(input_dims=4, n_actions=2)
states = np.random.randn(64, 4).astype(np.float32)
actions = np.clip(np.random.randn(64, 2), -1, 1).astype(np.float32)
rewards = (states[:, 0] - np.abs(actions).sum(1)).astype(np.float32)
new_states = (states + 0.1 * np.random.randn(64, 4)).astype(np.float32)
dones = np.random.rand(64) < 0.1
losses = [agent.learn(states, actions, rewards, new_states, dones) for _ in range(40)]
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:3]) / 3, "last_loss": sum(losses[-3:]) / 3,
                                     "device": agent.critic_1.device.type}))
