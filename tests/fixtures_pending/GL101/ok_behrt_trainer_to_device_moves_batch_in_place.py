# source: https://github.com/mikkelfo/CORE-BEHRT/issues/1 (the fix proposed there)
# The repaired EHRTrainer: to_device(batch) moves every value into the caller's dict in place, so
# the batch validate() hands to the metric functions is on the model's device.
import json
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class EHRDataset(Dataset):
    def __init__(self, n=64, seq_len=10, vocab=30):
        g = torch.Generator().manual_seed(0)
        self.concept = torch.randint(1, vocab, (n, seq_len), generator=g)
        self.target = self.concept[:, 0] % 2

    def __len__(self):
        return len(self.target)

    def __getitem__(self, i):
        return {"concept": self.concept[i], "attention_mask": torch.ones(self.concept.size(1)), "target": self.target[i]}


@dataclass
class SequenceClassifierOutput:
    loss: Optional[torch.Tensor] = None
    logits: Optional[torch.Tensor] = None


class BehrtForFineTuning(nn.Module):
    def __init__(self, vocab=30, hidden=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.head = nn.Linear(hidden, 2)

    def forward(self, input_ids, attention_mask, labels=None):
        h = (self.emb(input_ids) * attention_mask.unsqueeze(-1)).sum(1) / attention_mask.sum(1, keepdim=True)
        logits = self.head(h)
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)


def accuracy(outputs, batch):
    predictions = outputs.logits.argmax(dim=-1)
    return (predictions == batch["target"]).float().mean().item()


class EHRTrainer:
    def __init__(self, model, train_dataset=None, val_dataset=None, optimizer=None, metrics={}, args={}):
        self.device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        self.model = model.to(self.device)
        self.train_dataset = train_dataset
        self.val_dataset = val_dataset
        self.optimizer = optimizer
        self.metrics = metrics
        self.args = {"batch_size": 8, "epochs": 6, **args}
        self.losses = []

    def train(self):
        dataloader = DataLoader(self.train_dataset, batch_size=self.args["batch_size"], shuffle=True)
        for epoch in range(self.args["epochs"]):
            for i, batch in enumerate(dataloader):
                loss = self.train_step(batch)
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.losses.append(loss.item())
            val_loss, metrics = self.validate()
            print(f"Epoch {epoch} val loss: {val_loss} metrics: {metrics}")

    def train_step(self, batch):
        outputs = self.forward_pass(batch)
        outputs.loss.backward()
        return outputs.loss

    def forward_pass(self, batch):
        self.to_device(batch)
        return self.model(input_ids=batch["concept"], attention_mask=batch["attention_mask"], labels=batch["target"])

    def validate(self):
        self.model.eval()
        dataloader = DataLoader(self.val_dataset, batch_size=self.args["batch_size"], shuffle=False)
        val_loss = 0
        metric_values = {name: [] for name in self.metrics}
        with torch.no_grad():
            for batch in dataloader:
                outputs = self.forward_pass(batch)
                val_loss += outputs.loss.item()
                for name, func in self.metrics.items():
                    metric_values[name].append(func(outputs, batch))
        self.model.train()
        return val_loss / len(dataloader), {name: sum(v) / len(v) for name, v in metric_values.items()}

    def to_device(self, batch):
        for key, value in batch.items():
            batch[key] = value.to(self.device)


torch.manual_seed(0)
model = BehrtForFineTuning()
trainer = EHRTrainer(
    model,
    train_dataset=EHRDataset(),
    val_dataset=EHRDataset(n=16),
    optimizer=torch.optim.Adam(model.parameters(), lr=1e-2),
    metrics={"accuracy": accuracy},
)
trainer.train()
losses = trainer.losses
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": trainer.device.type}))
