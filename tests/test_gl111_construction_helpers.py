"""GL111: an instance that restores its optimizer while it is built, with the optimizer built in a
method `__init__` calls and its parameters given through a local, a parameter of that method or
a `self._get_param_groups()` result (fixtures40 G40-1, namisan/mt-dnn#40, rules42).

`_trainer_restore` found the model of a restored `self.optimizer` only for
`self.optimizer = torch.optim.X(self.<model>.parameters(), ...)` written in `__init__` itself. Now
the binding is searched in every method that builds the instance, and the `params` argument is
traced to `.parameters()` / `.named_parameters()` of one model attribute. Silent when the model
is moved while the instance is built, or when the parameters cannot be traced to one model.
"""

from __future__ import annotations

from fixture_support import check

HEAD = '''
import torch
import torch.nn as nn


class Wrapper(object):
'''

TAIL = '''
    def update(self, x):
        self.network(x).sum().backward()
        self.optimizer.step()

    def cuda(self):
        self.network.cuda()


state = torch.load("ckpt.pt", map_location="cpu")
model = Wrapper(state_dict=state)
if torch.cuda.is_available():
    model.cuda()
model.update(torch.randn(2, 4).cuda())
'''

# mt-dnn: `_setup_optim(optimizer_parameters, state_dict)` with the groups of `_get_param_groups()`
MTDNN = HEAD + '''    def __init__(self, state_dict=None):
        self.network = nn.Linear(4, 2)
        optimizer_parameters = self._get_param_groups()
        self._setup_optim(optimizer_parameters, state_dict)

    def _get_param_groups(self):
        return [{"params": [p for n, p in self.network.named_parameters() if "bias" not in n]},
                {"params": [p for n, p in self.network.named_parameters() if "bias" in n], "weight_decay": 0.0}]

    def _setup_optim(self, optimizer_parameters, state_dict=None):
        self.optimizer = torch.optim.Adamax(optimizer_parameters, 0.01)
        if state_dict:
            self.optimizer.load_state_dict(state_dict["optimizer"])
''' + TAIL

# the README's repro: everything in the helper, parameters inline
HELPER_INLINE = HEAD + '''    def __init__(self, state_dict=None):
        self.network = nn.Linear(4, 2)
        self._setup_optim(state_dict)

    def _setup_optim(self, state_dict=None):
        self.optimizer = torch.optim.Adamax(self.network.parameters(), 0.01)
        if state_dict:
            self.optimizer.load_state_dict(state_dict["optimizer"])
''' + TAIL

# a local in `__init__`
LOCAL_IN_INIT = HEAD + '''    def __init__(self, state_dict=None):
        self.network = nn.Linear(4, 2)
        groups = self.network.parameters()
        self.optimizer = torch.optim.Adamax(groups, 0.01)
        if state_dict:
            self.optimizer.load_state_dict(state_dict["optimizer"])
''' + TAIL

# the PR's fix: the network is moved in `__init__` before the optimizer is built and restored
MOVED_IN_INIT = MTDNN.replace(
    "        optimizer_parameters = self._get_param_groups()\n",
    "        if torch.cuda.is_available():\n            self.network.cuda()\n"
    "        optimizer_parameters = self._get_param_groups()\n",
)

# the groups come from the caller: nothing ties them to `self.network`
GROUPS_FROM_CALLER = HEAD + '''    def __init__(self, groups=None, state_dict=None):
        self.network = nn.Linear(4, 2)
        self._setup_optim(groups, state_dict)

    def _setup_optim(self, optimizer_parameters, state_dict=None):
        self.optimizer = torch.optim.Adamax(optimizer_parameters, 0.01)
        if state_dict:
            self.optimizer.load_state_dict(state_dict["optimizer"])
''' + TAIL

# the parameters of two models: which one is restored on the host is not one attribute's
TWO_MODELS = HEAD + '''    def __init__(self, state_dict=None):
        self.network = nn.Linear(4, 2)
        self.head = nn.Linear(2, 2)
        self._setup_optim(self._get_param_groups(), state_dict)

    def _get_param_groups(self):
        return list(self.network.parameters()) + list(self.head.parameters())

    def _setup_optim(self, optimizer_parameters, state_dict=None):
        self.optimizer = torch.optim.Adamax(optimizer_parameters, 0.01)
        if state_dict:
            self.optimizer.load_state_dict(state_dict["optimizer"])
''' + TAIL

# the helper is also called later with other parameters: its `optimizer_parameters` is not
# only what the constructor gives
CALLED_LATER_TOO = MTDNN.replace(
    "    def cuda(self):\n",
    "    def reset(self, groups):\n        self._setup_optim(groups)\n\n    def cuda(self):\n",
)


def _gl111(text):
    return [d.line for d in check(text, {"GL111"}) if d.code == "GL111"]


def test_optimizer_built_in_a_helper_from_param_groups_is_reported():
    assert _gl111(MTDNN) == [19]


def test_optimizer_built_and_restored_in_a_helper_is_reported():
    assert _gl111(HELPER_INLINE) == [14]


def test_optimizer_built_from_a_local_is_reported():
    assert _gl111(LOCAL_IN_INIT) == [12]


def test_silent_when_the_network_is_moved_while_the_instance_is_built():
    assert _gl111(MOVED_IN_INIT) == []


def test_silent_when_the_parameters_cannot_be_traced_to_one_model():
    assert _gl111(GROUPS_FROM_CALLER) == []
    assert _gl111(TWO_MODELS) == []
    assert _gl111(CALLED_LATER_TOO) == []
