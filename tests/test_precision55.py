"""Fifty-fifth precision pass (benchmarks/PRECISION55.md): each hard negative next to the true
shapes it must be told apart from."""

from __future__ import annotations

from fixture_support import check


def codes(text, code):
    return [(d.code, d.line) for d in check(text, {code}) if d.code == code]


# MIC-DKFZ/medicaldetectiontoolkit exec.py: a dict of results whose "torch_loss" is
# backpropagated; the loop keeps another entry of it.
GL402_RESULTS = '''import torch


def train(net, optimizer, batches, monitor):
    net.train()
    for batch in batches:
        results_dict = net.train_forward(batch)
        optimizer.zero_grad()
        results_dict["torch_loss"].backward()
        optimizer.step()
        monitor.append(results_dict[KEY])
'''


def test_gl402_other_key_of_the_backpropagated_dict_is_silent():
    assert codes(GL402_RESULTS.replace("KEY", '"monitor_values"'), "GL402") == []
    assert codes(GL402_RESULTS.replace("KEY", '"boxes"'), "GL402") == []


def test_gl402_the_backpropagated_key_or_a_loss_key_still_reports():
    assert codes(GL402_RESULTS.replace("KEY", '"torch_loss"'), "GL402") == [("GL402", 11)]
    assert codes(GL402_RESULTS.replace("KEY", '"loss_cls"'), "GL402") == [("GL402", 11)]
    # a key the analysis cannot read: stays reported
    assert codes(GL402_RESULTS.replace("KEY", "name"), "GL402") == [("GL402", 11)]


def test_gl402_dict_appended_whole_still_reports():
    text = GL402_RESULTS.replace("monitor.append(results_dict[KEY])", "monitor.append(results_dict)")
    assert codes(text, "GL402") == [("GL402", 11)]


# boyu-ai/Hands-on-RL chapters 16-17 (PETS, MBPO): an ensemble whose every parameter is made on
# `device` in `__init__`, never moved, called with inputs moved to `device`.
GL112_ENSEMBLE = '''import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class FCLayer(nn.Module):
    def __init__(self, input_dim, output_dim, ensemble_size, activation):
        super().__init__()
        self._input_dim, self._output_dim = input_dim, output_dim
        self.weight = nn.Parameter(WEIGHT)
        self._activation = activation
        self.bias = nn.Parameter(torch.zeros(ensemble_size, output_dim, device=device))

    def forward(self, x):
        return self._activation(torch.add(torch.bmm(x, self.weight), self.bias[:, None, :]))


class EnsembleModel(nn.Module):
    def __init__(self, state_dim, action_dim, ensemble_size=5):
        super().__init__()
        self._output_dim = (state_dim + 1) * 2
        self.layer1 = FCLayer(state_dim + action_dim, 200, ensemble_size, Swish())
        self.layer2 = FCLayer(200, self._output_dim, ensemble_size, ACT)
        self.optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)

    def forward(self, x):
        return self.layer2(self.layer1(x))


class EnsembleDynamicsModel:
    def __init__(self, state_dim, action_dim, num_network=5):
        self.model = EnsembleModel(state_dim, action_dim, ensemble_size=num_network)

    def train(self, inputs):
        x = torch.from_numpy(inputs).float().to(INPUT_DEVICE)
        return self.model(x)
'''


def _ensemble(weight="torch.Tensor(ensemble_size, input_dim, output_dim).to(device)", act="nn.Identity()",
              input_device="device"):
    return (GL112_ENSEMBLE.replace("WEIGHT", weight).replace("ACT", act)
            .replace("INPUT_DEVICE", input_device))


def test_gl112_module_whose_parameters_are_made_on_the_device_is_silent():
    assert codes(_ensemble(), "GL112") == []
    assert codes(_ensemble(act="Swish()"), "GL112") == []


def test_gl112_module_with_a_parameter_left_on_the_host_still_reports():
    line = GL112_ENSEMBLE.splitlines().index("        return self.model(x)") + 1
    assert codes(_ensemble(weight="torch.Tensor(ensemble_size, input_dim, output_dim)"), "GL112") == [("GL112", line)]
    # a layer with weights handed to it, built on the host
    assert codes(_ensemble(act="nn.PReLU()"), "GL112") == [("GL112", line)]
    # parameters made on the CPU, or on another device than the inputs'
    assert codes(_ensemble(weight='torch.Tensor(ensemble_size, input_dim, output_dim).to("cpu")'), "GL112") == [("GL112", line)]
    assert codes(_ensemble(input_device='"cuda:1"'), "GL112") == [("GL112", line)]


# HumanCompatibleAI/imitation preference_comparisons.py: one wrapper per member of an ensemble the
# module already holds, kept in a plain list.
GL107_WRAPPERS = '''from typing import cast

import torch.nn as nn


class Ensemble(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.members = nn.ModuleList([nn.Linear(4, 1) for _ in range(n)])


class Pref(nn.Module):
    def __init__(self, model, noise=0.0, member=False):
        super().__init__()
        self.model = model
        self.noise = noise
        EXTRA
        self.member_prefs = []
        if not member:
            for m in ITER:
                self.member_prefs.append(Pref(ARG, self.noise, member=True))
'''


def _wrappers(extra="pass", it="self.model.members", arg="cast(nn.Module, m)"):
    return GL107_WRAPPERS.replace("EXTRA", extra).replace("ITER", it).replace("ARG", arg)


def test_gl107_wrappers_around_parts_the_module_holds_are_silent():
    assert codes(_wrappers(), "GL107") == []
    assert codes(_wrappers(arg="m"), "GL107") == []


def test_gl107_wrappers_that_own_layers_or_wrap_new_modules_still_report():
    line = GL107_WRAPPERS.splitlines().index("        self.member_prefs = []") + 1
    # the wrapper builds a layer of its own: not registered anywhere
    assert codes(_wrappers(extra="self.head = nn.Linear(1, 1)"), "GL107") == [("GL107", line)]
    # wrapped around modules built here, not parts of something held
    assert codes(_wrappers(it="range(3)", arg="nn.Linear(4, 1)"), "GL107") == [("GL107", line)]
