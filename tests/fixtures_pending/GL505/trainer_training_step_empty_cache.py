# source: https://github.com/huggingface/transformers/pull/31530
# A Trainer whose training_step() ends every step with `del inputs` and torch.cuda.empty_cache():
# the caching allocator hands all its free blocks back to the driver after each batch and has to
# request them again on the next one, which slowed training down (transformers#31372). The PR
# removes the call from the training loop.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, train_dataset, device, lr=0.01, epochs=4):
        self.model = model
        self.device = device
        self.epochs = epochs
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.loader = DataLoader(train_dataset, batch_size=32, shuffle=True)
        self.log_history = []

    def compute_loss(self, model, inputs):
        logits = model(inputs["input_features"])
        return nn.functional.cross_entropy(logits, inputs["labels"])

    def training_step(self, model, inputs):
        model.train()
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        loss = self.compute_loss(model, inputs)
        del inputs
        torch.cuda.empty_cache()  # expect: GL505
        loss.backward()
        return loss.detach()

    def train(self):
        for epoch in range(self.epochs):
            for x, y in self.loader:
                tr_loss_step = self.training_step(self.model, {"input_features": x, "labels": y})
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.log_history.append(tr_loss_step.item())


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(256, 10)
    y = (x[:, 0] > x[:, 1]).long()
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    trainer = Trainer(model, TensorDataset(x, y), device)
    trainer.train()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": trainer.log_history[0], "last_loss": trainer.log_history[-1], "device": device.type}))


if __name__ == "__main__":
    main()
