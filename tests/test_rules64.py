"""rules64 (thirtieth session): P51-5 (GL105: a host index tensor handed to a submodule of the file
whose forward only indexes with it, mmf's krisp graphnetwork_module.py:1104), P51-1 (GL403: a
few-shot learner of another file given the labelled support set and the query set at
evaluation, yaoyao-liu/meta-transfer-learning trainer/meta.py), G63-3 (GL111's message names the
first optimizer call that reads the state, not only `step()`)."""

from __future__ import annotations

import textwrap

from fixture_support import check

# ---------------------------------------------------------------------------------------- GL105

GRAPH = """
import torch
import torch.nn as nn


class NodeHead(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, output_nodes=None):
        x = torch.relu(self.proj(x))
        if output_nodes is not None:
            {use}
        return x.sum(-1)


class Graph(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.head = NodeHead(dim)

    def forward(self, feats, active):
        output_nodes = torch.LongTensor(active)
        return self.head(feats, {arg})


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
Graph().to(device)(torch.randn(2, 5, 4, device=device), [0, 3])
"""


def _gl105(use: str, arg: str = "output_nodes=output_nodes") -> list[int]:
    src = textwrap.dedent(GRAPH).replace("{use}", use).replace("{arg}", arg)
    return [d.line for d in check(src, {"GL105"}) if d.code == "GL105"]


def test_index_only_in_submodule_forward_is_silent():
    assert _gl105("x = x[:, output_nodes, :]") == []


def test_index_only_positional_argument_is_silent():
    assert _gl105("x = x[:, output_nodes, :]", "output_nodes") == []


def test_index_only_with_assert_is_silent():
    assert _gl105("assert output_nodes is not None\n            x = x[:, output_nodes, :]") == []


def test_operand_in_submodule_forward_is_reported():
    # the callee adds it to a device tensor: a real mismatch
    assert _gl105("x = x + output_nodes.float()") == [24]


def test_index_and_operand_in_submodule_forward_is_reported():
    assert _gl105("x = x[:, output_nodes, :] * output_nodes.float().mean()") == [24]


def test_index_then_used_as_operand_in_the_caller_is_reported():
    src = textwrap.dedent(GRAPH).replace("{use}", "x = x[:, output_nodes, :]").replace(
        "{arg}", "output_nodes=output_nodes) + output_nodes.sum(")
    assert [d.line for d in check(src, {"GL105"}) if d.code == "GL105"] == [24]


# ---------------------------------------------------------------------------------------- GL111

def test_gl111_message_names_the_first_call_that_reads_the_state():
    src = textwrap.dedent("""
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 2)
        optimizer = torch.optim.Adam(model.parameters())
        optimizer.load_state_dict(torch.load("opt.pth", map_location="cpu"))
        model.to(device)
        loss = model(torch.randn(2, 4, device=device)).sum()
        loss.backward()
        optimizer.step()
    """)
    found = [d for d in check(src, {"GL111"}) if d.code == "GL111"]
    assert [d.line for d in found] == [8]
    msg = found[0].message
    assert "`optimizer.step()` fails" not in msg
    assert "the first call of `optimizer` that reads it" in msg
    assert "`eval()`" in msg and "`step()`" in msg


# ---------------------------------------------------------------------------------------- GL403

EPISODES = """
import torch
import torch.nn as nn
{imp}


def evaluate(model, episodes):
    model.eval()
    accs = []
    for support, support_y, query, query_y in episodes:
        logits = {call}
        accs.append((logits.argmax(1) == query_y).float().mean().item())
    return sum(accs) / len(accs)


model = {ctor}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
print(evaluate(model, []))
"""
OTHER_FILE = "from learner import InnerLoopLearner"
OWN_CLASS = """
class InnerLoopLearner(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 3)

    def forward(self, inp):
        support, support_y, query = inp
        return self.head(query)
"""


def _gl403(call: str, imp: str = OTHER_FILE, ctor: str = "InnerLoopLearner()") -> list[int]:
    src = textwrap.dedent(EPISODES).replace("{imp}", imp).replace("{call}", call).replace("{ctor}", ctor)
    return [d.line for d in check(src, {"GL403"}) if d.code == "GL403"]


def test_episode_tuple_to_model_of_another_file_is_silent():
    # meta-transfer-learning trainer/meta.py:200 shape: MtlLearner's forward runs torch.autograd.grad
    assert _gl403("model((support, support_y, query))") == []


def test_episode_arguments_to_model_of_another_file_is_silent():
    # MAML-style names (x_spt, y_spt, x_qry), one argument each
    src_call = "model(x_spt, y_spt, x_qry)"
    src = textwrap.dedent(EPISODES).replace("{imp}", OTHER_FILE).replace("{call}", src_call).replace(
        "{ctor}", "InnerLoopLearner()").replace(
        "for support, support_y, query, query_y in episodes:", "for x_spt, y_spt, x_qry, query_y in episodes:")
    assert [d.line for d in check(src, {"GL403"}) if d.code == "GL403"] == []


def test_episode_with_label_shot_names_is_silent():
    src = textwrap.dedent(EPISODES).replace("{imp}", OTHER_FILE).replace(
        "{call}", "model((data_shot, label_shot, data_query))").replace("{ctor}", "InnerLoopLearner()").replace(
        "for support, support_y, query, query_y in episodes:",
        "for data_shot, label_shot, data_query, query_y in episodes:")
    assert [d.line for d in check(src, {"GL403"}) if d.code == "GL403"] == []


def test_query_only_to_model_of_another_file_is_reported():
    assert _gl403("model(query)") == [11]


def test_support_without_labels_is_reported():
    # a prototype network handed the support and query images only: no adaptation to labels
    assert _gl403("model((support, query))") == [11]


def test_episode_to_model_of_the_file_that_does_not_differentiate_is_reported():
    # the class is read: its forward takes no gradient, so the names do not matter
    assert _gl403("model((support, support_y, query))", imp=OWN_CLASS) == [20]
