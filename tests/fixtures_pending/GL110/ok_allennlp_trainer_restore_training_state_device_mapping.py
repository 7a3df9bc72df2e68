# source: https://github.com/allenai/allennlp/pull/386
# AllenNLP's Trainer (autumn 2017): `_save_checkpoint` writes `model_state_epoch_N.th` and
# `training_state_epoch_N.th` (the optimizer state and the epoch); `_restore_checkpoint` reads the
# model with `torch.load(model_path, map_location=device_mapping(self._cuda_device))` but the
# training state with a bare `torch.load(training_state_path)`, then
# `self._optimizer.load_state_dict(training_state["optimizer"])`. Continuing on the CPU
# (`cuda_device=-1`) a run that was trained on a GPU fails at the second load (issue #345). This
# is the PR's version: both loads go through `device_mapping(self._cuda_device)`, and GL110 must
# stay silent. The tagger is a small embedding + LSTM stand-in on synthetic tag sequences; the
# first trainer writes the checkpoints and a second one resumes from them for more epochs.
# Pending only for the emulated-CUDA leg: `gpulint run` fails inside the map_location callable at
# `storage.cuda(cuda_device)` ("torch.UntypedStorage(): Storage device not recognized: cuda"),
# where a real GPU copies the storage to the device.
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


def device_mapping(cuda_device):
    def inner_device_mapping(storage, location):
        if cuda_device >= 0:
            return storage.cuda(cuda_device)
        return storage

    return inner_device_mapping


class SimpleTagger(nn.Module):
    def __init__(self, vocab=20, tags=4, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.LSTM(dim, dim, batch_first=True)
        self.tag_projection = nn.Linear(dim, tags)

    def forward(self, tokens, tags):
        encoded, _ = self.encoder(self.embed(tokens))
        logits = self.tag_projection(encoded)
        return {"loss": F.cross_entropy(logits.flatten(0, 1), tags.flatten())}


class Trainer:
    def __init__(self, model, optimizer, batches, serialization_dir, num_epochs, cuda_device=-1):
        self._model = model
        self._optimizer = optimizer
        self._batches = batches
        self._serialization_dir = serialization_dir
        self._num_epochs = num_epochs
        self._cuda_device = cuda_device
        if self._cuda_device >= 0:
            self._model = self._model.cuda(self._cuda_device)

    def _move(self, tensor):
        return tensor.cuda(self._cuda_device) if self._cuda_device >= 0 else tensor

    def _train_epoch(self):
        self._model.train()
        total = 0.0
        for tokens, tags in self._batches:
            self._optimizer.zero_grad()
            loss = self._model(self._move(tokens), self._move(tags))["loss"]
            loss.backward()
            self._optimizer.step()
            total += loss.item()
        return total / len(self._batches)

    def _save_checkpoint(self, epoch):
        model_path = os.path.join(self._serialization_dir, "model_state_epoch_{}.th".format(epoch))
        torch.save(self._model.state_dict(), model_path)
        training_state = {"epoch": epoch, "optimizer": self._optimizer.state_dict()}
        torch.save(training_state, os.path.join(self._serialization_dir, "training_state_epoch_{}.th".format(epoch)))

    def _restore_checkpoint(self):
        serialization_files = os.listdir(self._serialization_dir)
        model_checkpoints = [x for x in serialization_files if "model_state_epoch" in x]
        if not model_checkpoints:
            return 0
        epoch_to_load = max([int(x.split("model_state_epoch_")[-1][: -len(".th")]) for x in model_checkpoints])
        model_path = os.path.join(self._serialization_dir, "model_state_epoch_{}.th".format(epoch_to_load))
        training_state_path = os.path.join(self._serialization_dir, "training_state_epoch_{}.th".format(epoch_to_load))

        model_state = torch.load(model_path, map_location=device_mapping(self._cuda_device))
        training_state = torch.load(training_state_path, map_location=device_mapping(self._cuda_device))
        self._model.load_state_dict(model_state)
        self._optimizer.load_state_dict(training_state["optimizer"])
        return training_state["epoch"] + 1

    def train(self):
        epoch_counter = self._restore_checkpoint()
        losses = []
        for epoch in range(epoch_counter, self._num_epochs):
            losses.append(self._train_epoch())
            self._save_checkpoint(epoch)
        return losses


def make_batches(n_batches=6, batch=8, length=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(n_batches):
        tokens = torch.randint(0, 20, (batch, length), generator=g)
        batches.append((tokens, tokens % 4))
    return batches


torch.manual_seed(0)
cuda_device = 0 if torch.cuda.is_available() else -1
batches = make_batches()
with tempfile.TemporaryDirectory() as serialization_dir:
    model = SimpleTagger()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = Trainer(model, optimizer, batches, serialization_dir, num_epochs=3, cuda_device=cuda_device).train()

    model = SimpleTagger()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    resumed = Trainer(model, optimizer, batches, serialization_dir, num_epochs=6, cuda_device=cuda_device).train()

losses = first + resumed
device = "cuda" if cuda_device >= 0 else "cpu"
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device}))
