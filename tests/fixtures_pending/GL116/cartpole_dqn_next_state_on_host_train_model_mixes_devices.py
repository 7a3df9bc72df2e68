# source: https://github.com/choru-k/Reinforcement-Learning-Pytorch-Cartpole/issues/1
# Reinforcement-Learning-Pytorch-Cartpole, rainbow/1-dqn (train.py, model.py, memory.py): `main`
# moves both Q-networks and each episode's first state to `device` (CUDA when available), but
# `next_state = torch.Tensor(next_state)` stays on the host and becomes `state` for the next
# step, so the replay memory (a deque of `Transition` namedtuples) holds device and host states
# side by side. The classmethod `QNet.train_model` stacks the sampled states and builds the
# actions, rewards and masks of the batch with `torch.Tensor(...)` on the host; the reporter's
# run stopped at `torch.stack(batch.state)` ("Expected object of backend CPU but got backend CUDA
# for sequence element 4"). Past the stack, the network's output meets the host actions and
# masks, and `QNet.get_action` calls `.numpy()` on the argmax of the moved target network.
# (A small deterministic stand-in for gym's CartPole; 30 episodes; config.py inlined.)
# fails-on-cuda: Expected all tensors to be on the same device
import json
import random
from collections import deque, namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

gamma = 0.5
batch_size = 16
lr = 0.001
initial_exploration = 40
update_target = 20
replay_memory_capacity = 1000
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

Transition = namedtuple("Transition", ("state", "next_state", "action", "reward", "mask"))


class Memory(object):
    def __init__(self, capacity):
        self.memory = deque(maxlen=capacity)
        self.capacity = capacity

    def push(self, state, next_state, action, reward, mask):
        self.memory.append(Transition(state, next_state, action, reward, mask))

    def sample(self, batch_size):
        transitions = random.sample(self.memory, batch_size)
        return Transition(*zip(*transitions))

    def __len__(self):
        return len(self.memory)


class ToyCartPole:
    """Four numbers drifting with the pushes; the episode ends after 12 steps or off the track."""

    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)

    def reset(self):
        self.t = 0
        self.s = self.rng.uniform(-0.05, 0.05, size=4).astype(np.float32)
        return self.s

    def step(self, action):
        self.t += 1
        self.s = (self.s + (0.05 if action == 1 else -0.05) + self.rng.normal(0, 0.01, 4)).astype(np.float32)
        done = self.t >= 12 or abs(float(self.s[0])) > 1.0
        return self.s, 1.0, done, {}

    def sample_action(self):
        return int(self.rng.randint(2))


class QNet(nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super(QNet, self).__init__()
        self.num_inputs = num_inputs
        self.num_outputs = num_outputs
        self.fc1 = nn.Linear(num_inputs, 32)
        self.fc2 = nn.Linear(32, num_outputs)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        return self.fc2(x)

    @classmethod
    def train_model(cls, online_net, target_net, optimizer, batch):
        states = torch.stack(batch.state)
        next_states = torch.stack(batch.next_state)
        actions = torch.Tensor(batch.action).float()
        rewards = torch.Tensor(batch.reward)
        masks = torch.Tensor(batch.mask)

        pred = online_net(states).squeeze(1)
        next_pred = target_net(next_states).squeeze(1)
        pred = torch.sum(pred.mul(actions), dim=1)  # expect: GL116
        target = rewards + masks * gamma * next_pred.max(1)[0]  # expect: GL116

        loss = F.mse_loss(pred, target.detach())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    def get_action(self, input):
        qvalue = self.forward(input)
        _, action = torch.max(qvalue, 1)
        return action.numpy()[0]  # expect: GL109


def get_action(state, target_net, epsilon, env):
    if np.random.rand() <= epsilon:
        return env.sample_action()
    return target_net.get_action(state)


def update_target_model(online_net, target_net):
    target_net.load_state_dict(online_net.state_dict())


def main():
    env = ToyCartPole(500)
    torch.manual_seed(500)
    random.seed(500)
    np.random.seed(500)
    online_net = QNet(4, 2)
    target_net = QNet(4, 2)
    update_target_model(online_net, target_net)
    optimizer = optim.Adam(online_net.parameters(), lr=lr)

    online_net.to(device)
    target_net.to(device)
    online_net.train()
    target_net.train()
    memory = Memory(replay_memory_capacity)
    epsilon = 1.0
    steps = 0
    losses = []

    for e in range(30):
        done = False
        state = env.reset()
        state = torch.Tensor(state).to(device)
        state = state.unsqueeze(0)
        while not done:
            steps += 1
            action = get_action(state, target_net, epsilon, env)
            next_state, reward, done, _ = env.step(action)
            next_state = torch.Tensor(next_state)
            next_state = next_state.unsqueeze(0)
            mask = 0 if done else 1
            action_one_hot = np.zeros(2)
            action_one_hot[action] = 1
            memory.push(state, next_state, action_one_hot, reward, mask)
            state = next_state
            if steps > initial_exploration:
                epsilon = max(epsilon - 0.01, 0.1)
                batch = memory.sample(batch_size)
                loss = QNet.train_model(online_net, target_net, optimizer, batch)
                losses.append(loss.item())
                if steps % update_target == 0:
                    update_target_model(online_net, target_net)

    head, tail = losses[:10], losses[-10:]
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(head) / len(head), "last_loss": sum(tail) / len(tail), "device": device.type}))


if __name__ == "__main__":
    main()
