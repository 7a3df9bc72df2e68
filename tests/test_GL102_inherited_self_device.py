"""GL102 (G46-1, ebagdasa/federated_adaptation#3): an unguarded hard-coded `.cuda()` whose tensor
meets a module moved to `self.device`, where `self.device` is the run-time CUDA/CPU choice made in
the `__init__` of the class, of a base class of the file, or of a subclass of the file, fails on the
CPU run. The rule follows `self.<attr>` to every binding of it in that class family and reports only
when each one is such a choice; a guarded `.cuda()`, a device that is no CUDA/CPU choice in one of the
classes, or a class family that binds nothing stays silent. A hard-coded CUDA `self.device` in a file
that never checks availability is still the file-level finding."""

from __future__ import annotations

import textwrap

from fixture_support import check, fix

FALLBACK = 'torch.device("cuda" if torch.cuda.is_available() else "cpu")'

BASE = """
import torch
import torch.nn as nn


class Helper:
    def __init__(self):
        self.device = DEVICE


class TextHelper(Helper):
    @staticmethod
    def batchify(data, bsz):
        data = data.view(bsz, -1).t().contiguous()
        return data.cuda()

    def load_data(self):
        self.train_data = [self.batchify(torch.arange(40), 4) for _ in range(3)]

    def create_model(self):
        self.model = nn.Embedding(40, 8)
        self.model.to(self.device)


helper = TextHelper()
helper.load_data()
helper.create_model()
for data in helper.train_data:
    helper.model(data).sum().backward()
"""


def src(text: str, device: str = FALLBACK) -> str:
    return textwrap.dedent(text).replace("DEVICE", device)


def gl102(text: str, device: str = FALLBACK) -> list[int]:
    return [d.line for d in check(src(text, device), ["GL102"])]


def line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(src(text).splitlines(), 1) if src(needle) in ln)


# positives ---------------------------------------------------------------------------------------

def test_device_chosen_in_the_base_class_init_fires():
    assert gl102(BASE) == [line_of(BASE, "return data.cuda()")]


def test_the_message_names_the_meeting_and_no_fix_is_offered():
    (d,) = check(src(BASE), ["GL102"])
    assert "`data.cuda()`" in d.message and "`helper.model`" in d.message
    # `self.device` cannot be written in a staticmethod: the site is left for the author
    assert "return data.cuda()" in fix(src(BASE), ["GL102"], unsafe=True).text


SAME_CLASS = BASE.replace(
    "class TextHelper(Helper):\n",
    "class TextHelper:\n    def __init__(self):\n        self.device = DEVICE\n\n",
)


def test_device_chosen_in_the_class_own_init_fires():
    assert gl102(SAME_CLASS) == [line_of(SAME_CLASS, "return data.cuda()")]


GRANDPARENT = BASE.replace(
    "class TextHelper(Helper):\n",
    "class FederatedHelper(Helper):\n    rounds = 1\n\n\nclass TextHelper(FederatedHelper):\n",
)


def test_device_chosen_two_bases_up_fires():
    assert gl102(GRANDPARENT) == [line_of(GRANDPARENT, "return data.cuda()")]


SUBCLASS_SETS = """
import torch
import torch.nn as nn


class Helper:
    def create_model(self):
        self.model = nn.Embedding(40, 8)
        self.model.to(self.device)


class TextHelper(Helper):
    def __init__(self):
        self.device = DEVICE


helper = TextHelper()
helper.create_model()
for step in range(3):
    tokens = torch.arange(40).view(4, -1).cuda()
    helper.model(tokens).sum().backward()
"""


def test_device_chosen_by_the_subclass_used_in_a_base_method_fires():
    assert gl102(SUBCLASS_SETS) == [line_of(SUBCLASS_SETS, ".cuda()")]


# hard negatives ----------------------------------------------------------------------------------

FIXED = BASE.replace("def batchify(data, bsz):", "def batchify(data, bsz, device):").replace(
    "return data.cuda()", "return data.to(device)"
).replace("self.batchify(torch.arange(40), 4)", "self.batchify(torch.arange(40), 4, self.device)")


def test_reporter_fix_moving_to_the_helper_device_is_silent():
    assert gl102(FIXED) == []


GUARDED = BASE.replace(
    "        return data.cuda()",
    "        if torch.cuda.is_available():\n            data = data.cuda()\n        return data",
)


def test_cuda_under_an_availability_guard_is_silent():
    assert gl102(GUARDED) == []


def test_base_device_hard_coded_cuda_without_any_check_still_reports_the_file():
    # no availability test anywhere: the file-level finding, at the first hard-coded site
    lines = gl102(BASE, 'torch.device("cuda")')
    assert lines == [line_of(BASE, "self.device = DEVICE")]


HARD_CODED_BESIDE_A_CHECK = BASE.replace(
    "helper = TextHelper()", 'print("cuda" if torch.cuda.is_available() else "cpu")\nhelper = TextHelper()'
)


def test_base_device_hard_coded_cuda_is_no_fallback_meeting():
    # both sides are CUDA: the `.cuda()` tensor does not meet a CPU-fallback device
    assert gl102(HARD_CODED_BESIDE_A_CHECK, 'torch.device("cuda")') == []


SUBCLASS_OVERRIDES = BASE.replace(
    "class TextHelper(Helper):\n",
    "class TextHelper(Helper):\n    def __init__(self):\n        super().__init__()\n        self.device = torch.device(\"cuda\")\n\n",
)


def test_a_subclass_rebinding_the_device_to_cuda_is_silent():
    assert gl102(SUBCLASS_OVERRIDES) == []


DERIVED_REBINDS = BASE + """

class LocalTextHelper(TextHelper):
    def use(self, device_name):
        self.device = torch.device(device_name)
"""


def test_a_derived_class_rebinding_the_device_from_a_value_is_silent():
    # `self` in `create_model` may be a `LocalTextHelper` on any device: cannot tell
    assert gl102(DERIVED_REBINDS) == []


UNRELATED = """
import torch
import torch.nn as nn


class Settings:
    def __init__(self):
        self.device = DEVICE


class TextHelper:
    def __init__(self, device):
        self.device = device

    def create_model(self):
        self.model = nn.Embedding(40, 8)
        self.model.to(self.device)


settings = Settings()
helper = TextHelper("cuda:0")
helper.create_model()
for step in range(3):
    tokens = torch.arange(40).view(4, -1).cuda()
    helper.model(tokens).sum().backward()
"""


def test_a_fallback_device_of_an_unrelated_class_is_silent():
    assert gl102(UNRELATED) == []


TWICE = BASE + """

class TextHelper(Helper):
    pass
"""


def test_a_class_name_defined_twice_is_silent():
    assert gl102(TWICE) == []
