# source: https://github.com/2U1/Qwen-VL-Series-Finetune/issues/136
# Qwen-VL-Series-Finetune's trainer is a subclass of the Hugging Face `Trainer`; the issue asks to
# override its `training_step(self, model, inputs, num_items=None)` so that it first calls
# `torch.cuda.empty_cache()` (when CUDA is available) and then returns
# `super().training_step(model, inputs, num_items)`. The Trainer's inner loop calls
# `training_step` once per micro-batch, so the cache is released and re-requested from the driver
# at every step; the maintainer declined it for that reason ("could cause a performance
# degradation ... if I empty the cache every step"). transformers is not a dependency of the
# fixture suite, so the base class here is a small stand-in for `Trainer` with the same
# `train()` -> `training_step()` -> `compute_loss()` call structure; the vision-language model is
# a tiny projector + decoder and the image-token / caption batches are synthetic.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)


class Trainer:
    """The part of transformers.Trainer this script relies on."""

    def __init__(self, model, args, train_dataset):
        self.args = args
        self.model = model.to(args["device"])
        self.train_dataset = train_dataset
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args["learning_rate"])
        self.log_history = []

    def get_train_dataloader(self):
        return DataLoader(self.train_dataset, batch_size=self.args["per_device_train_batch_size"], shuffle=True)

    def compute_loss(self, model, inputs, num_items_in_batch=None):
        outputs = model(inputs["pixel_values"], inputs["input_ids"])
        return F.cross_entropy(outputs.flatten(0, 1), inputs["labels"].flatten())

    def training_step(self, model, inputs, num_items_in_batch=None):
        model.train()
        inputs = {k: v.to(self.args["device"]) for k, v in inputs.items()}
        loss = self.compute_loss(model, inputs, num_items_in_batch)
        loss.backward()
        return loss.detach()

    def train(self):
        for epoch in range(self.args["num_train_epochs"]):
            for step, inputs in enumerate(self.get_train_dataloader()):
                tr_loss_step = self.training_step(self.model, inputs)
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.log_history.append(tr_loss_step.item())


class QwenTrainer(Trainer):
    def training_step(self, model, inputs, num_items=None):
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # expect: GL505
        return super().training_step(model, inputs, num_items)


class TinyVLM(nn.Module):
    def __init__(self, vocab=50, dim=64):
        super().__init__()
        self.visual = nn.Linear(32, dim)
        self.embed = nn.Embedding(vocab, dim)
        self.decoder = nn.GRU(dim, dim, batch_first=True)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, pixel_values, input_ids):
        img = self.visual(pixel_values).unsqueeze(1)
        h, _ = self.decoder(torch.cat([img, self.embed(input_ids)], dim=1)[:, :-1])
        return self.lm_head(h)


class CaptionDataset(Dataset):
    def __init__(self, n=192):
        self.pixels = torch.randn(n, 32)
        self.ids = torch.randint(0, 50, (n, 8))
        self.ids[:, 0] = (self.pixels[:, 0] > 0).long() + 2

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"pixel_values": self.pixels[i], "input_ids": self.ids[i], "labels": self.ids[i]}


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    args = {"device": device, "learning_rate": 3e-3, "per_device_train_batch_size": 16, "num_train_epochs": 6}
    trainer = QwenTrainer(model=TinyVLM(), args=args, train_dataset=CaptionDataset())
    trainer.train()
    losses = trainer.log_history
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device}))


if __name__ == "__main__":
    main()
