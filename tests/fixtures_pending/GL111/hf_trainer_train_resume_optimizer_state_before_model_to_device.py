# source: https://github.com/huggingface/transformers/issues/4240
# transformers' early `Trainer` (v2.9): `train(model_path=...)` builds the optimizer and the
# scheduler with `self.get_optimizers(num_training_steps=t_total)`, restores their state from the
# checkpoint folder (`optimizer.load_state_dict(torch.load(.../"optimizer.pt", ...))`) and only
# then takes `model = self.model` and moves it with `model.to(self.args.device)`. The loaded Adam
# moments are cast to the parameters' device at load time, the CPU, so resuming
# `run_language_modeling.py` on a GPU fails at the first `optimizer.step()` with "expected device
# cpu but got device cuda:0". The fix (huggingface/transformers#4450, "move model to device
# before setting optimizer") moves the model in `Trainer.__init__`. (The language model, the
# tokenizer and the dataset reduced to a tiny regression model on synthetic batches; the
# checkpoint folder is written by a first, shorter training run of the same Trainer.)
# fails-on-cuda: Tensors of the same index must be on the same device
import json
import os
import tempfile
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class TrainingArguments:
    output_dir: str
    learning_rate: float = 1e-2
    num_train_epochs: int = 3
    train_batch_size: int = 8

    @property
    def device(self):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Trainer:
    def __init__(self, model, args, train_dataset):
        self.model = model
        self.args = args
        self.train_dataset = train_dataset
        self.losses = []

    def get_train_dataloader(self):
        return DataLoader(self.train_dataset, batch_size=self.args.train_batch_size, shuffle=True)

    def get_optimizers(self, num_training_steps):
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.args.learning_rate)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 - step / (2 * num_training_steps))
        return optimizer, scheduler

    def train(self, model_path=None):
        train_dataloader = self.get_train_dataloader()
        t_total = len(train_dataloader) * self.args.num_train_epochs
        optimizer, scheduler = self.get_optimizers(num_training_steps=t_total)
        if model_path is not None and os.path.isfile(os.path.join(model_path, "optimizer.pt")):
            optimizer.load_state_dict(  # expect: GL111
                torch.load(os.path.join(model_path, "optimizer.pt"), map_location=self.args.device)
            )
            scheduler.load_state_dict(torch.load(os.path.join(model_path, "scheduler.pt")))
        model = self.model
        model.to(self.args.device)
        model.train()
        for epoch in range(self.args.num_train_epochs):
            for inputs, labels in train_dataloader:
                inputs, labels = inputs.to(self.args.device), labels.to(self.args.device)
                loss = nn.functional.mse_loss(model(inputs), labels)
                loss.backward()
                optimizer.step()
                scheduler.step()
                model.zero_grad()
                self.losses.append(loss.item())
        self.save_checkpoint(optimizer, scheduler)

    def save_checkpoint(self, optimizer, scheduler):
        os.makedirs(self.args.output_dir, exist_ok=True)
        torch.save(self.model.state_dict(), os.path.join(self.args.output_dir, "pytorch_model.bin"))
        torch.save(optimizer.state_dict(), os.path.join(self.args.output_dir, "optimizer.pt"))
        torch.save(scheduler.state_dict(), os.path.join(self.args.output_dir, "scheduler.pt"))


def make_dataset(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=g)
    return TensorDataset(x, x @ torch.randn(6, 1, generator=g))


torch.manual_seed(0)
checkpoint_dir = os.path.join(tempfile.mkdtemp(), "checkpoint-8")
first = Trainer(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)), TrainingArguments(checkpoint_dir, num_train_epochs=1), make_dataset())
first.train()
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
model.load_state_dict(torch.load(os.path.join(checkpoint_dir, "pytorch_model.bin"), map_location="cpu"))
trainer = Trainer(model, TrainingArguments(tempfile.mkdtemp()), make_dataset())
trainer.train(model_path=checkpoint_dir)
losses = first.losses + trainer.losses
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": trainer.args.device.type}))
