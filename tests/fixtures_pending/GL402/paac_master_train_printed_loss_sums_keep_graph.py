# source: https://github.com/qbx2/PAAC.pytorch/issues/1
# PAAC (parallel advantage actor-critic) `Master.train()`: every update runs t_max steps over n_e
# environments, builds `loss_sum` from the per-step losses (that sum is what is differentiated),
# and also keeps `loss_p_sum`, `double_loss_v_sum` and `entropy_sum` for the log printed every
# `print_step` updates. Those three were added as autograd Variables, so each update's graph stays
# alive until the next print flushes them ("Too late memory free: loss_sum is added by Variable, its
# related memory is not freed"); the author changed them to add `.data[0]` (today `.item()`). A
# random environment stands in for the gym workers.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

INPUT_CHANNELS = 2
INPUT_IMAGE_SIZE = (6, 6)


class PAACNet(nn.Module):
    def __init__(self, num_actions):
        super().__init__()
        self.conv = nn.Conv2d(INPUT_CHANNELS, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 6 * 6, 32)
        self.policy = nn.Linear(32, num_actions)
        self.value_head = nn.Linear(32, 1)

    def features(self, x):
        return F.relu(self.fc(F.relu(self.conv(x)).flatten(1)))

    def forward(self, x):
        h = self.features(x)
        return F.softmax(self.policy(h), dim=1), self.value_head(h).squeeze(1)

    def value(self, x):
        return self.value_head(self.features(x)).squeeze(1)

    @staticmethod
    def log_and_negated_entropy(p, epsilon):
        log_p = torch.log(p + epsilon)
        return log_p, (p * log_p).sum()

    @staticmethod
    def get_loss(q_values, values, log_a):
        advantage = q_values - values
        loss_p = -(log_a * advantage.detach()).mean()
        double_loss_v = advantage.pow(2).mean()
        return loss_p, double_loss_v, loss_p + 0.5 * double_loss_v


class RandomEnvironments:
    def __init__(self, n_e, num_actions):
        self.n_e, self.num_actions = n_e, num_actions
        self.g = torch.Generator().manual_seed(1)

    def step(self, actions):
        obs = torch.rand(self.n_e, *INPUT_IMAGE_SIZE, generator=self.g)
        rewards = (actions == 1).float() * 0.5 + 0.5
        done = torch.rand(self.n_e, generator=self.g) < 0.05
        return obs, rewards, done


class Master:
    def __init__(self, args):
        self.args = args
        self.paac = PAACNet(args.num_actions).to(args.device)
        self.optim = torch.optim.RMSprop(self.paac.parameters(), args.learning_rate, args.alpha, args.rmsprop_epsilon)
        self.envs = RandomEnvironments(args.n_e, args.num_actions)
        self.losses = []

    def train(self):
        args = self.args
        n_e, t_max, device = args.n_e, args.t_max, args.device
        states = torch.zeros(n_e, INPUT_CHANNELS, *INPUT_IMAGE_SIZE, device=device)
        rewards = torch.zeros(t_max, n_e, device=device)
        terminals = torch.zeros(t_max, n_e, device=device)
        q_values = torch.zeros(t_max + 1, n_e, device=device)
        loss_p_sum = double_loss_v_sum = entropy_sum = 0
        self.paac.train()
        for n in range(args.n_max):
            values, log_a = [], []
            negated_entropy_sum = 0
            for t in range(t_max):
                paac_p, paac_v = self.paac(states.clone())
                values.append(paac_v)
                log_paac_p, negated_h = self.paac.log_and_negated_entropy(paac_p, args.epsilon)
                negated_entropy_sum += negated_h
                actions = paac_p.argmax(1)
                log_a.append(log_paac_p.gather(1, actions[:, None]).squeeze(1))
                obs, reward, done = self.envs.step(actions.cpu())
                states = torch.cat([states[:, 1:], obs[:, None].to(device)], dim=1)
                rewards[t], terminals[t] = reward.to(device), done.float().to(device)

            entropy = -negated_entropy_sum / n_e
            entropy_sum += entropy  # expect: GL402
            q_values[t_max] = self.paac.value(states).detach()

            loss_sum = 0
            for t in reversed(range(t_max)):
                q_values[t] = rewards[t] + (1.0 - terminals[t]) * args.gamma * q_values[t + 1]
                loss_p, double_loss_v, loss = self.paac.get_loss(q_values[t], values[t], log_a[t])
                loss_sum += loss
                loss_p_sum += loss_p  # expect: GL402
                double_loss_v_sum += double_loss_v  # expect: GL402

            loss_sum -= args.beta * entropy
            self.optim.zero_grad()
            loss_sum.backward()
            torch.nn.utils.clip_grad_norm_(self.paac.parameters(), args.clip)
            self.optim.step()
            self.losses.append(float(double_loss_v))

            if n % args.print_step == args.print_step - 1:
                print("average loss_p:", float(loss_p_sum) / args.print_step / t_max)
                print("average loss_v:", float(double_loss_v_sum) / 2.0 / args.print_step / t_max)
                print("average entropy:", float(entropy_sum) / args.print_step / t_max)
                loss_p_sum = double_loss_v_sum = entropy_sum = 0


class Args:
    num_actions = 3
    n_e = 8
    t_max = 5
    n_max = 60
    gamma = 0.5
    beta = 0.01
    epsilon = 1e-30
    clip = 40.0
    learning_rate = 0.002
    alpha = 0.99
    rmsprop_epsilon = 0.1
    print_step = 20
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


torch.manual_seed(0)
master = Master(Args())
master.train()
print("GPULINT-TRAIN " + json.dumps({"first_loss": master.losses[0], "last_loss": sum(master.losses[-10:]) / 10, "device": Args.device.type}))
