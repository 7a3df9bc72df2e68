# source: https://github.com/allenai/allennlp/issues/205
# AllenNLP (2017), `commands/train.py`: `train_model(params)` builds the model, then the optimizer
# with `Optimizer.from_params(model.parameters(), params.pop("optimizer"))` (a registry from the
# config's "type" to a torch optimizer class; the experiments used "adagrad"), and only then the
# `Trainer`, whose `__init__` moves the model with `self._model.cuda(self._cuda_device)` when a
# CUDA device is configured. `Adagrad` creates its per-parameter `sum` state when it is built, on
# the CPU, so the first `self._optimizer.step()` on the GPU fails (pytorch/pytorch#2021, cited in
# the issue). The issue moves the `cuda()` call and the optimizer creation into
# `Trainer.from_params()`, model first.
# (A small embedding tagger over synthetic token ids; the registry and the params object keep
# AllenNLP's shape in a few lines.)
# fails-on-cuda: Tensors of the same index must be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class Params(dict):
    def pop(self, key, default=None):
        value = super().pop(key, default)
        return Params(value) if isinstance(value, dict) else value


class Optimizer:
    by_name = {
        "adam": torch.optim.Adam,
        "adagrad": torch.optim.Adagrad,
        "sgd": torch.optim.SGD,
    }

    @classmethod
    def from_params(cls, model_parameters, params):
        optimizer = params.pop("type")
        return cls.by_name[optimizer](model_parameters, **params)


class SimpleTagger(nn.Module):
    def __init__(self, vocab_size=20, num_tags=4, dim=16):
        super().__init__()
        self.embedder = nn.Embedding(vocab_size, dim)
        self.encoder = nn.GRU(dim, dim, batch_first=True)
        self.tag_projection_layer = nn.Linear(dim, num_tags)

    def forward(self, tokens, tags):
        encoded, _ = self.encoder(self.embedder(tokens))
        logits = self.tag_projection_layer(encoded)
        return {"logits": logits, "loss": F.cross_entropy(logits.flatten(0, 1), tags.flatten())}


class Trainer:
    def __init__(self, model, optimizer, batches, num_epochs=5, cuda_device=-1):
        self._model = model
        self._optimizer = optimizer
        self._batches = batches
        self._num_epochs = num_epochs
        self._cuda_device = cuda_device
        if self._cuda_device >= 0:
            self._model = self._model.cuda(self._cuda_device)

    def _batch_loss(self, batch):
        tokens, tags = batch
        if self._cuda_device >= 0:
            tokens, tags = tokens.cuda(self._cuda_device), tags.cuda(self._cuda_device)
        return self._model(tokens, tags)["loss"]

    def train(self):
        losses = []
        for epoch in range(self._num_epochs):
            self._model.train()
            for batch in self._batches:
                self._optimizer.zero_grad()
                loss = self._batch_loss(batch)
                loss.backward()
                self._optimizer.step()
                losses.append(loss.item())
        return losses


def train_model(params, batches):
    model = SimpleTagger()
    optimizer = Optimizer.from_params(model.parameters(), params.pop("optimizer"))  # expect: GL118
    trainer = Trainer(model, optimizer, batches, num_epochs=params.pop("num_epochs", 5),
                      cuda_device=params.pop("cuda_device", -1))
    return trainer.train()


torch.manual_seed(0)
tokens = torch.randint(0, 20, (64, 7))
tags = tokens % 4
batches = [(tokens[i:i + 16], tags[i:i + 16]) for i in range(0, 64, 16)]
params = Params({
    "optimizer": {"type": "adagrad", "lr": 0.3},
    "num_epochs": 6,
    "cuda_device": 0 if torch.cuda.is_available() else -1,
})
losses = train_model(params, batches)
device = "cuda" if torch.cuda.is_available() else "cpu"
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device}))
