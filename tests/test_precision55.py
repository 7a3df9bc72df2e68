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
