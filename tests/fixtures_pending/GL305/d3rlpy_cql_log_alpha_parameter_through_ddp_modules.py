# source: https://github.com/takuseno/d3rlpy/issues/363
# fixture: torchrun 2
# d3rlpy keeps an algorithm's networks in a frozen dataclass (`CQLModules`: the Q-function, the
# `log_alpha` temperature held by a file-defined `Parameter` module, the optimizers). With
# `fit(..., enable_ddp=True)` the algorithm's `wrap_models_by_ddp()` rebuilds that dataclass with
# every `nn.Module` field wrapped in `DistributedDataParallel`, and stores it back on the impl's
# `self._modules`. CQL's conservative loss and its temperature update then read
# `self._modules.log_alpha.parameter`, a property of `Parameter` that the wrapper does not forward:
# "'DistributedDataParallel' object has no attribute 'parameter'" on every rank.
# (A tiny Q-function on synthetic transitions; one gloo process per rank under torchrun.)
import dataclasses
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Parameter(nn.Module):
    def __init__(self, data):
        super().__init__()
        self._parameter = nn.Parameter(data)

    def forward(self):
        raise NotImplementedError("Parameter does not support __call__. Use parameter property instead.")

    @property
    def parameter(self):
        return self._parameter


@dataclasses.dataclass(frozen=True)
class Modules:
    def wrap_models_by_ddp(self):
        dict_values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for k, v in dict_values.items():
            if isinstance(v, nn.Module):
                dict_values[k] = DDP(v)
        return self.__class__(**dict_values)


@dataclasses.dataclass(frozen=True)
class CQLModules(Modules):
    q_func: nn.Module
    log_alpha: Parameter
    critic_optim: torch.optim.Optimizer
    alpha_optim: torch.optim.Optimizer


class CQLImpl:
    def __init__(self, modules, alpha_threshold=1.0, n_action_samples=4):
        self._modules = modules
        self._alpha_threshold = alpha_threshold
        self._n_action_samples = n_action_samples

    def wrap_models_by_ddp(self):
        self._modules = self._modules.wrap_models_by_ddp()

    def _q(self, obs, act):
        return self._modules.q_func(torch.cat([obs, act], dim=1))

    def _compute_conservative_loss(self, obs, act):
        random_acts = torch.rand(self._n_action_samples, *act.shape) * 2 - 1
        random_q = torch.stack([self._q(obs, a) for a in random_acts], dim=0)
        logsumexp = torch.logsumexp(random_q, dim=0)
        data_q = self._q(obs, act)
        clipped_alpha = self._modules.log_alpha.parameter.exp().clamp(0, 1e6)  # expect: GL305
        return clipped_alpha * ((logsumexp - data_q).mean() - self._alpha_threshold)

    def update_critic(self, obs, act, target):
        self._modules.critic_optim.zero_grad()
        td_loss = nn.functional.mse_loss(self._q(obs, act), target)
        conservative_loss = self._compute_conservative_loss(obs, act)
        (td_loss + conservative_loss).backward()
        self._modules.critic_optim.step()
        return td_loss.item(), conservative_loss.detach()

    def update_alpha(self, conservative_loss):
        self._modules.alpha_optim.zero_grad()
        alpha = self._modules.log_alpha.parameter.exp()  # expect: GL305
        loss = -alpha * conservative_loss.detach()
        loss.backward()
        self._modules.alpha_optim.step()


def create_cql(obs_dim, act_dim):
    q_func = nn.Sequential(nn.Linear(obs_dim + act_dim, 32), nn.ReLU(), nn.Linear(32, 1))
    log_alpha = Parameter(torch.zeros(1, 1))
    modules = CQLModules(
        q_func=q_func,
        log_alpha=log_alpha,
        critic_optim=torch.optim.Adam(q_func.parameters(), lr=1e-2),
        alpha_optim=torch.optim.Adam(log_alpha.parameters(), lr=1e-3),
    )
    return CQLImpl(modules)


def fit(impl, obs, act, target, n_steps, enable_ddp=False):
    if enable_ddp:
        impl.wrap_models_by_ddp()
    losses = []
    for step in range(n_steps):
        idx = torch.randint(0, len(obs), (32,))
        td_loss, conservative_loss = impl.update_critic(obs[idx], act[idx], target[idx])
        impl.update_alpha(conservative_loss)
        losses.append(td_loss)
    return losses


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    obs = torch.randn(512, 6)
    act = torch.rand(512, 2) * 2 - 1
    target = obs[:, :1] - act[:, 1:]
    torch.manual_seed(rank)
    impl = create_cql(6, 2)
    losses = fit(impl, obs, act, target, 120, enable_ddp=True)
    dist.destroy_process_group()
    if rank == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": "cpu"}))


if __name__ == "__main__":
    main()
