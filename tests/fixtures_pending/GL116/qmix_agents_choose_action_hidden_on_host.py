# source: https://github.com/thesouther/MARL/issues/2
# QMIX (thesouther/MARL): the policy object keeps the recurrent hidden state of every agent in
# `self.eval_hidden`, made by `init_hidden()` with `torch.zeros(...)` and no device. `learn()`
# moves it with `.to(self.device)` before calling the DRQN, but `Agents.choose_action()` slices
# it and passes it straight to the DRQN that `QMIX.__init__` moved to the device, so the first
# rollout on a GPU fails in the GRUCell with the host hidden state. (Environment replaced by
# random observations; the rollout and the learner keep the reporter's classes and call chain.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Conf:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.n_agents = 3
        self.n_actions = 5
        self.obs_shape = 6
        self.state_shape = 8
        self.episode_limit = 6
        self.drqn_hidden_dim = 16
        self.qmix_hidden_dim = 8
        self.last_action = True
        self.reuse_network = True
        self.gamma = 0.9
        self.learning_rate = 5e-3
        self.grad_norm_clip = 10


class DRQN(nn.Module):
    def __init__(self, input_shape, conf):
        super(DRQN, self).__init__()
        self.conf = conf
        self.fc1 = nn.Linear(input_shape, conf.drqn_hidden_dim)
        self.rnn = nn.GRUCell(conf.drqn_hidden_dim, conf.drqn_hidden_dim)
        self.fc2 = nn.Linear(conf.drqn_hidden_dim, conf.n_actions)

    def forward(self, obs, hidden_state):
        x = F.relu(self.fc1(obs))
        h_in = hidden_state.reshape(-1, self.conf.drqn_hidden_dim)
        h = self.rnn(x, h_in)
        return self.fc2(h), h


class QMIXNET(nn.Module):
    def __init__(self, conf):
        super(QMIXNET, self).__init__()
        self.conf = conf
        self.hyper_w1 = nn.Linear(conf.state_shape, conf.n_agents * conf.qmix_hidden_dim)
        self.hyper_b1 = nn.Linear(conf.state_shape, conf.qmix_hidden_dim)
        self.hyper_w2 = nn.Linear(conf.state_shape, conf.qmix_hidden_dim)
        self.hyper_b2 = nn.Linear(conf.state_shape, 1)

    def forward(self, q_values, states):
        episode_num = q_values.size(0)
        q_values = q_values.view(-1, 1, self.conf.n_agents)
        states = states.reshape(-1, self.conf.state_shape)
        w1 = torch.abs(self.hyper_w1(states)).view(-1, self.conf.n_agents, self.conf.qmix_hidden_dim)
        b1 = self.hyper_b1(states).view(-1, 1, self.conf.qmix_hidden_dim)
        hidden = F.elu(torch.bmm(q_values, w1) + b1)
        w2 = torch.abs(self.hyper_w2(states)).view(-1, self.conf.qmix_hidden_dim, 1)
        b2 = self.hyper_b2(states).view(-1, 1, 1)
        return (torch.bmm(hidden, w2) + b2).view(episode_num, -1, 1)


class QMIX:
    def __init__(self, conf):
        self.conf = conf
        self.device = conf.device
        self.n_agents = conf.n_agents
        input_shape = conf.obs_shape + conf.n_actions + conf.n_agents
        self.eval_drqn_net = DRQN(input_shape, conf).to(self.device)
        self.target_drqn_net = DRQN(input_shape, conf).to(self.device)
        self.eval_qmix_net = QMIXNET(conf).to(self.device)
        self.target_qmix_net = QMIXNET(conf).to(self.device)
        self.target_drqn_net.load_state_dict(self.eval_drqn_net.state_dict())
        self.target_qmix_net.load_state_dict(self.eval_qmix_net.state_dict())
        self.eval_parameters = list(self.eval_qmix_net.parameters()) + list(self.eval_drqn_net.parameters())
        self.optimizer = torch.optim.RMSprop(self.eval_parameters, lr=conf.learning_rate)
        self.eval_hidden = None
        self.target_hidden = None

    def learn(self, batch, max_episode_len):
        episode_num = batch["o"].shape[0]
        self.init_hidden(episode_num)
        for key in batch.keys():
            dtype = torch.long if key == "u" else torch.float32
            batch[key] = torch.tensor(batch[key], dtype=dtype)
        s, s_, u, r, terminated = batch["s"], batch["s_"], batch["u"], batch["r"], batch["terminated"]
        q_evals, q_targets = self.get_q_values(batch, max_episode_len)
        s = s.to(self.device)
        u = u.to(self.device)
        r = r.to(self.device)
        s_ = s_.to(self.device)
        terminated = terminated.to(self.device)
        q_evals = torch.gather(q_evals, dim=3, index=u).squeeze(3)
        q_targets = q_targets.max(dim=3)[0]
        q_total_eval = self.eval_qmix_net(q_evals, s)
        q_total_target = self.target_qmix_net(q_targets, s_)
        targets = r + self.conf.gamma * q_total_target * (1 - terminated)
        loss = ((q_total_eval - targets.detach()) ** 2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.eval_parameters, self.conf.grad_norm_clip)
        self.optimizer.step()
        return loss.item()

    def get_q_values(self, batch, max_episode_len):
        episode_num = batch["o"].shape[0]
        q_evals, q_targets = [], []
        for transition_idx in range(max_episode_len):
            inputs, inputs_ = self._get_inputs(batch, transition_idx)
            inputs = inputs.to(self.device)
            inputs_ = inputs_.to(self.device)
            self.eval_hidden = self.eval_hidden.to(self.device)
            self.target_hidden = self.target_hidden.to(self.device)
            q_eval, self.eval_hidden = self.eval_drqn_net(inputs, self.eval_hidden)
            q_target, self.target_hidden = self.target_drqn_net(inputs_, self.target_hidden)
            q_evals.append(q_eval.view(episode_num, self.n_agents, -1))
            q_targets.append(q_target.view(episode_num, self.n_agents, -1))
        return torch.stack(q_evals, dim=1), torch.stack(q_targets, dim=1)

    def _get_inputs(self, batch, transition_idx):
        o, o_, u_onehot = batch["o"][:, transition_idx], batch["o_"][:, transition_idx], batch["u_onehot"][:]
        episode_num = o.shape[0]
        inputs, inputs_ = [o], [o_]
        if transition_idx == 0:
            inputs.append(torch.zeros_like(u_onehot[:, transition_idx]))
        else:
            inputs.append(u_onehot[:, transition_idx - 1])
        inputs_.append(u_onehot[:, transition_idx])
        inputs.append(torch.eye(self.n_agents).unsqueeze(0).expand(episode_num, -1, -1))
        inputs_.append(torch.eye(self.n_agents).unsqueeze(0).expand(episode_num, -1, -1))
        inputs = torch.cat([x.reshape(episode_num * self.n_agents, -1) for x in inputs], dim=1)
        inputs_ = torch.cat([x.reshape(episode_num * self.n_agents, -1) for x in inputs_], dim=1)
        return inputs, inputs_

    def init_hidden(self, episode_num):
        self.eval_hidden = torch.zeros((episode_num, self.n_agents, self.conf.drqn_hidden_dim))
        self.target_hidden = torch.zeros((episode_num, self.n_agents, self.conf.drqn_hidden_dim))


class Agents:
    def __init__(self, conf):
        self.conf = conf
        self.device = conf.device
        self.n_agents = conf.n_agents
        self.policy = QMIX(conf)

    def choose_action(self, obs, last_action, agent_num, epsilon):
        agents_id = np.zeros(self.n_agents)
        agents_id[agent_num] = 1.0
        inputs = np.hstack((obs.copy(), last_action, agents_id))
        hidden_state = self.policy.eval_hidden[:, agent_num, :]
        inputs = torch.tensor(inputs, dtype=torch.float32).unsqueeze(0).to(self.device)
        q_value, self.policy.eval_hidden[:, agent_num, :] = self.policy.eval_drqn_net(inputs, hidden_state)  # expect: GL116
        if np.random.uniform() < epsilon:
            return np.random.randint(self.conf.n_actions)
        return int(torch.argmax(q_value).item())

    def train(self, batch, max_episode_len):
        return self.policy.learn(batch, max_episode_len)


def generate_episode(agents, conf, rng):
    agents.policy.init_hidden(1)
    o, u, u_onehot, s, r = [], [], [], [], []
    last_action = np.zeros((conf.n_agents, conf.n_actions))
    for step in range(conf.episode_limit):
        obs = rng.standard_normal((conf.n_agents, conf.obs_shape)).astype(np.float32)
        state = rng.standard_normal(conf.state_shape).astype(np.float32)
        with torch.no_grad():
            actions = [agents.choose_action(obs[i], last_action[i], i, 0.1) for i in range(conf.n_agents)]
        onehot = np.eye(conf.n_actions)[actions]
        o.append(obs)
        s.append(state)
        u.append(np.reshape(actions, [conf.n_agents, 1]))
        u_onehot.append(onehot)
        r.append([float(np.mean(obs[:, 0] > 0))])
        last_action = onehot
    o_, s_ = o[1:] + [o[-1]], s[1:] + [s[-1]]
    terminated = [[0.0]] * (conf.episode_limit - 1) + [[1.0]]
    return {"o": o, "s": s, "u": u, "u_onehot": u_onehot, "r": r, "o_": o_, "s_": s_, "terminated": terminated}


torch.manual_seed(0)
np.random.seed(0)
rng = np.random.default_rng(0)
conf = Conf()
agents = Agents(conf)
episodes = [generate_episode(agents, conf, rng) for _ in range(4)]
batch = {k: np.array([ep[k] for ep in episodes]) for k in episodes[0]}
losses = []
for train_step in range(30):
    losses.append(agents.train({k: v.copy() for k, v in batch.items()}, conf.episode_limit))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": conf.device.type}))
