# source: https://github.com/tenstorrent/tt-blacksmith/pull/711
# A Trainer class for LoRA fine-tuning of a language model: train() loops over epochs and batches,
# the per-batch method runs forward and backward, and the optimizer-step method steps the optimizer
# and the LR scheduler; nothing ever clears the gradients, so every step applies the sum of all
# gradients so far. The PR turns zero_grad on in the optimizer step.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, rank=4, alpha=8.0):
        super().__init__()
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.randn(rank, base.in_features) * 0.01)
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        self.scale = alpha / rank

    def forward(self, x):
        return self.base(x) + (x @ self.lora_a.t() @ self.lora_b.t()) * self.scale


class TinyLM(nn.Module):
    def __init__(self, vocab=16, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.proj = LoRALinear(nn.Linear(dim, dim))
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, ids):
        return self.lm_head(torch.tanh(self.proj(self.emb(ids))))


class Trainer:
    def __init__(self, model, loader, device, lr=0.01, epochs=3):
        self.model = model
        self.loader = loader
        self.device = device
        self.epochs = epochs
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.SGD(params, lr=lr, momentum=0.9)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: 1.0)
        self.losses = []

    def training_step(self, ids, labels):
        logits = self.model(ids)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))
        loss.backward()
        return loss

    def optimizer_step(self):
        self.optimizer.step()
        self.scheduler.step()

    def train(self):
        self.model.train()
        for epoch in range(self.epochs):
            for ids, labels in self.loader:
                ids, labels = ids.to(self.device), labels.to(self.device)
                loss = self.training_step(ids, labels)
                self.optimizer_step()  # expect: GL401
                self.losses.append(loss.item())


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ids = torch.randint(0, 16, (256, 8))
    labels = (ids + 1) % 16
    loader = DataLoader(TensorDataset(ids, labels), batch_size=32, shuffle=True)
    model = TinyLM().to(device)
    trainer = Trainer(model, loader, device)
    trainer.train()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": trainer.losses[0], "last_loss": trainer.losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
