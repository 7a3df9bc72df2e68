# source: https://github.com/harryjo97/GDSS/issues/13
# GDSS (score-based graph generation): Trainer.__init__ takes `self.train_loader, self.test_loader =
# load_data(self.config)`, which builds each split with `graphs_to_dataloader(config, graph_list)`:
# `DataLoader(TensorDataset(x_tensor, adjs_tensor), batch_size=config.data.batch_size,
# shuffle=True)`. Trainer.train() moves every batch with `load_batch(batch, self.device)`
# (`batch[0].to(f'cuda:{device[0]}')`) and steps two score networks (features and adjacency), each
# with its own optimizer and EMA. The issue: "I suggest using num_workers > 0 in the dataloaders. It
# can speed up training significantly. Using 4 workers makes training 30% faster"; the maintainer
# would add it to that DataLoader call.
import json
from types import SimpleNamespace

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def load_device():
    if torch.cuda.is_available():
        device = list(range(torch.cuda.device_count()))
    else:
        device = 'cpu'
    return device


def load_batch(batch, device):
    device_id = f'cuda:{device[0]}' if isinstance(device, list) else device
    x_b = batch[0].to(device_id)
    adj_b = batch[1].to(device_id)
    return x_b, adj_b


def graphs_to_tensor(n_graphs, max_node_num, generator):
    upper = (torch.rand(n_graphs, max_node_num, max_node_num, generator=generator) < 0.3).float().triu(1)
    return upper + upper.transpose(1, 2)


def graphs_to_dataloader(config, adjs_tensor):
    x_tensor = adjs_tensor.sum(-1, keepdim=True).repeat(1, 1, config.data.max_feat_num) / config.data.max_node_num
    train_ds = TensorDataset(x_tensor, adjs_tensor)
    train_dl = DataLoader(train_ds, batch_size=config.data.batch_size, shuffle=True)  # expect: GL502
    return train_dl


def load_data(config):
    adjs = graphs_to_tensor(80, config.data.max_node_num, torch.Generator().manual_seed(config.seed))
    test_size = int(config.data.test_split * len(adjs))
    return graphs_to_dataloader(config, adjs[test_size:]), graphs_to_dataloader(config, adjs[:test_size])


class ScoreNetworkX(nn.Module):
    def __init__(self, max_feat_num, nhid):
        super().__init__()
        self.lin_in = nn.Linear(max_feat_num, nhid)
        self.lin_out = nn.Linear(2 * nhid, max_feat_num)

    def forward(self, x, adj):
        h = torch.tanh(self.lin_in(x))
        return self.lin_out(torch.cat([h, adj @ h], dim=-1))


class ScoreNetworkA(nn.Module):
    def __init__(self, max_feat_num, nhid):
        super().__init__()
        self.lin = nn.Linear(max_feat_num + 1, nhid)

    def forward(self, x, adj):
        h = self.lin(torch.cat([x, adj.sum(-1, keepdim=True)], dim=-1))
        score = h @ h.transpose(1, 2) / h.shape[-1]
        return score + score.transpose(1, 2)


class ExponentialMovingAverage:
    def __init__(self, parameters, decay):
        self.decay = decay
        self.shadow_params = [p.clone().detach() for p in parameters]

    def update(self, parameters):
        with torch.no_grad():
            for s, p in zip(self.shadow_params, parameters):
                s.sub_((1.0 - self.decay) * (s - p))


def load_model_optimizer(model, lr, device):
    if isinstance(device, list):
        model = model.to(f'cuda:{device[0]}')
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    return model, optimizer


def loss_fn(model_x, model_adj, x, adj):
    t = torch.rand(x.shape[0], 1, 1, device=x.device) * 0.9 + 0.1
    z_x = torch.randn_like(x)
    z_adj = torch.randn_like(adj).triu(1)
    z_adj = z_adj + z_adj.transpose(1, 2)
    x_t = x + t * z_x
    adj_t = adj + t * z_adj
    loss_x = ((model_x(x_t, adj_t) * t + z_x) ** 2).mean()
    loss_adj = ((model_adj(x_t, adj_t) * t + z_adj) ** 2).mean()
    return loss_x, loss_adj


class Trainer(object):
    def __init__(self, config):
        self.config = config
        torch.manual_seed(config.seed)
        self.device = load_device()
        self.train_loader, self.test_loader = load_data(self.config)

    def train(self):
        nf, nh = self.config.data.max_feat_num, self.config.model.nhid
        self.model_x, self.optimizer_x = load_model_optimizer(ScoreNetworkX(nf, nh), self.config.train.lr, self.device)
        self.model_adj, self.optimizer_adj = load_model_optimizer(ScoreNetworkA(nf, nh), self.config.train.lr, self.device)
        self.ema_x = ExponentialMovingAverage(self.model_x.parameters(), decay=self.config.train.ema)
        self.ema_adj = ExponentialMovingAverage(self.model_adj.parameters(), decay=self.config.train.ema)

        history = []
        for epoch in range(self.config.train.num_epochs):
            self.train_x = []
            self.model_x.train()
            self.model_adj.train()
            for _, train_b in enumerate(self.train_loader):
                self.optimizer_x.zero_grad()
                self.optimizer_adj.zero_grad()
                x, adj = load_batch(train_b, self.device)
                loss_x, loss_adj = loss_fn(self.model_x, self.model_adj, x, adj)
                loss_x.backward()
                loss_adj.backward()
                torch.nn.utils.clip_grad_norm_(self.model_x.parameters(), self.config.train.grad_norm)
                torch.nn.utils.clip_grad_norm_(self.model_adj.parameters(), self.config.train.grad_norm)
                self.optimizer_x.step()
                self.optimizer_adj.step()
                self.ema_x.update(self.model_x.parameters())
                self.ema_adj.update(self.model_adj.parameters())
                self.train_x.append((loss_x + loss_adj).detach())
            history.append(float(torch.stack(self.train_x).mean()))
        return history


if __name__ == "__main__":
    config = SimpleNamespace(
        seed=42,
        data=SimpleNamespace(max_node_num=8, max_feat_num=4, batch_size=16, test_split=0.2),
        model=SimpleNamespace(nhid=16),
        train=SimpleNamespace(lr=5e-3, ema=0.99, grad_norm=1.0, num_epochs=10),
    )
    trainer = Trainer(config)
    history = trainer.train()
    device = trainer.device
    device_type = "cuda" if isinstance(device, list) else device
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device_type}))
