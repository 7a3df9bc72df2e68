"""GL403 through a method of the same class that runs the model (the seventh precision pass's
miss, ClusterGCN's `test()`: after `self.model.eval()` its loop calls `self.do_prediction(cluster)`,
which returns `self.model(...)`'s output): reported at the helper's call in the loop. Silent when
the helper detaches what it returns (an RL agent's `select_action`), or uses gradients itself."""

from __future__ import annotations

from fixture_support import check

SRC = """
import numpy as np
import torch
import torch.nn as nn


class Trainer:
    def __init__(self):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = nn.Linear(4, 3).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters())
        self.clusters = [torch.randn(8, 4) for _ in range(3)]

    def do_prediction(self, cluster):
        prediction = self.model(cluster.to(self.device))
        HELPER

    def train(self):
        self.model.train()
        for cluster in self.clusters:
            self.optimizer.zero_grad()
            self.model(cluster.to(self.device)).sum().backward()
            self.optimizer.step()

    def test(self):
        self.model.eval()
        predictions = []
        for cluster in self.clusters:
            prediction = self.do_prediction(cluster)
            predictions.append(np.asarray(prediction))
        return predictions


t = Trainer()
t.train()
t.test()
"""


def lines(helper: str) -> list[int]:
    return [d.line for d in check(SRC.replace("HELPER", helper), {"GL403"}) if d.code == "GL403"]


def test_a_helper_returning_the_model_output_is_reported_at_its_call_in_the_loop():
    assert lines("return prediction") == [29]  # `prediction = self.do_prediction(cluster)`


def test_a_helper_that_detaches_what_it_returns_is_silent():
    assert lines("return prediction.argmax(1).detach().cpu().numpy()") == []


def test_a_helper_that_uses_gradients_is_silent():
    assert lines("prediction.sum().backward()\n        return prediction") == []
