"""GL118 (G50-1, allenai/allennlp#205): the engine check looks for the call of the moved model in
the function that steps the optimizer. A trainer whose `train` gets its loss from a helper method
(`loss = self._batch_loss(batch)`, the method that calls `self._model(...)`) steps an Adagrad
built before the model moved just the same; the check now also reads the file's functions and
methods the stepping function calls, one level down, as the engine resolved them. Hard negatives:
the optimizer built after the move, an Adam optimizer (no state at construction), and a helper
that never calls the model."""

from __future__ import annotations

import pytest
from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, optimizer, cuda_device=0):
        self._model = model
        self._optimizer = optimizer
        self._cuda_device = cuda_device
        self._model = self._model.cuda(self._cuda_device)

    def _batch_loss(self, batch):
        x, y = batch
        x, y = x.cuda(self._cuda_device), y.cuda(self._cuda_device)
        return BODY

    def train(self, batches):
        for batch in batches:
            self._optimizer.zero_grad()
            loss = self._batch_loss(batch)
            loss.backward()
            self._optimizer.step()


def train_model(batches):
    model = nn.Linear(4, 2)
    OPTIMIZER
    trainer = Trainer(model, optimizer)
    trainer.train(batches)


train_model([(torch.randn(8, 4), torch.randn(8, 2)) for _ in range(3)])
'''

MODEL_LOSS = "((self._model(x) - y) ** 2).mean()"


def gl118(body: str, optimizer: str):
    text = TEXT.replace("BODY", body).replace("OPTIMIZER", optimizer)
    return [d.line for d in check(text, {"GL118"}) if d.code == "GL118"]


def test_adagrad_stepped_by_a_trainer_whose_helper_calls_the_moved_model_is_reported():
    assert gl118(MODEL_LOSS, "optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)") == [27]


@pytest.mark.parametrize(
    "body,optimizer",
    [
        # Adam makes its state lazily, at the first step, on the moved parameters
        (MODEL_LOSS, "optimizer = torch.optim.Adam(model.parameters(), lr=0.1)"),
        # the helper never calls the model: no evidence the model runs on the GPU there
        ("((x - y) ** 2).mean().requires_grad_()", "optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)"),
        # the model moved before the optimizer is built
        (MODEL_LOSS, "model = model.cuda(0)\n    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)"),
    ],
)
def test_lazy_optimizers_unrelated_helpers_and_moved_first_stay_silent(body, optimizer):
    assert gl118(body, optimizer) == []
