"""GL106 follows methods outside forward's reach that the file calls on a moved instance
(`policy.sample(state)` after `policy.to(device)`, pytorch-soft-actor-critic#21), and a class's
`to()` override silences it only for the attributes that override moves."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.noise = torch.zeros(2)

    def forward(self, state):
        return self.linear(state)

    def sample(self, state):
        mean = self.forward(state)
        READ
        return mean + noise
TO

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
policy = Policy()MOVE
state = torch.randn(3, 4).to(device)
action = policy.sample(state)
'''

READ = "noise = self.noise.normal_(0.0, 0.1)"
MOVE = ".to(device)"


def codes(read=READ, move=MOVE, to=""):
    text = TEXT.replace("READ", read).replace("MOVE", move).replace("TO", to)
    return [(f.code, f.line) for f in check(text, ["GL106"])]


def test_method_called_on_moved_instance_reads_unmoved_attribute():
    assert codes() == [("GL106", 9)]


def test_instance_never_moved_is_silent():
    assert codes(move="") == []


def test_attribute_moved_where_it_is_read_is_silent():
    assert codes(read="noise = self.noise.to(state.device).normal_(0.0, 0.1)") == []


def test_noise_made_with_the_input_device_is_silent():
    assert codes(read="noise = torch.zeros(2, device=state.device).normal_(0.0, 0.1)") == []


def test_attribute_reassigned_on_the_device_in_the_method_is_silent():
    read = "self.noise = torch.zeros(2, device=state.device)\n        noise = self.noise.normal_(0.0, 0.1)"
    assert codes(read=read) == []


TO_OTHER = '''
    def to(self, device):
        self.other = 1
        return super().to(device)
'''

TO_NOISE = '''
    def to(self, device):
        self.noise = self.noise.to(device)
        return super().to(device)
'''


def test_to_override_moving_other_state_does_not_silence():
    assert codes(to=TO_OTHER) == [("GL106", 9)]


def test_to_override_moving_the_attribute_is_silent():
    assert codes(to=TO_NOISE) == []


def test_message_names_the_method_where_it_meets_the_device():
    text = TEXT.replace("READ", READ).replace("MOVE", MOVE).replace("TO", "")
    (finding,) = check(text, ["GL106"])
    assert "and `sample()` combines it with tensors on the device" in finding.message
    assert "forward combines" not in finding.message
