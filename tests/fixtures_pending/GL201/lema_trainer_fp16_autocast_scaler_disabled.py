# source: https://github.com/oumi-ai/oumi/pull/342
# The Lema (now oumi) Trainer: __init__ builds the mixed-precision context
# `torch.amp.autocast(device_type=..., enabled=True, dtype=params.mixed_precision_dtype)` (float16
# in the fp16 config) and a GradScaler that is constructed disabled (`enabled=False`), so
# `_train_epoch()`'s `self.scaler.scale(loss).backward()`, `unscale_`, `step`, `update` all pass
# through and float16 gradients are never scaled. The PR: "We had the correct GradScaler calls in
# the trainer code before, but didn't enable it" (enabled when the dtype is float16).
import json
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class TrainingParams:
    mixed_precision_dtype: torch.dtype = torch.float16
    max_grad_norm: float = 1.0
    gradient_accumulation_steps: int = 2
    num_train_epochs: int = 5
    learning_rate: float = 3e-3


class TinyLM(nn.Module):
    def __init__(self, vocab=32, hidden=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, input_ids, labels):
        logits = self.head(torch.tanh(self.embed(input_ids)))
        return {"loss": F.cross_entropy(logits.float().view(-1, logits.size(-1)), labels.view(-1)), "logits": logits}


class Trainer:
    def __init__(self, model, train_dataset, params, device):
        self.model = model.to(device)
        self.params = params
        self.device = device
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=params.learning_rate)
        self.train_dataloader = DataLoader(train_dataset, batch_size=8, shuffle=True)
        self.mixed_precision_ctx = nullcontext()
        if params.mixed_precision_dtype in (torch.float16, torch.bfloat16):
            self.mixed_precision_ctx = torch.amp.autocast(
                device_type=device.type, enabled=device.type == "cuda", dtype=params.mixed_precision_dtype
            )
        self.scaler = torch.amp.GradScaler(device=device.type, enabled=False)
        self.losses = []

    def train(self):
        for epoch in range(self.params.num_train_epochs):
            self._train_epoch()

    def _train_epoch(self):
        self.model.train()
        total = 0.0
        for step, (input_ids, labels) in enumerate(self.train_dataloader):
            input_ids, labels = input_ids.to(self.device), labels.to(self.device)
            with self.mixed_precision_ctx:  # expect: GL201
                outputs = self.model(input_ids=input_ids, labels=labels)
                loss = outputs["loss"] / self.params.gradient_accumulation_steps
            self.scaler.scale(loss).backward()
            if (step + 1) % self.params.gradient_accumulation_steps == 0:
                self.scaler.unscale_(self.optimizer)
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=self.params.max_grad_norm)
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad(set_to_none=True)
            total += loss.item() * self.params.gradient_accumulation_steps
        self.losses.append(total / len(self.train_dataloader))


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ids = torch.randint(0, 32, (128, 8))
    labels = (ids * 3 + 1) % 32
    trainer = Trainer(TinyLM(), TensorDataset(ids, labels), TrainingParams(), device)
    trainer.train()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": trainer.losses[0], "last_loss": trainer.losses[-1], "device": device.type}))
