# source: https://github.com/meta-pytorch/torchforge/pull/71
# apps/sft/main.py: ForgeSFTRecipe.train() loops over the training steps and calls
# self.train_step(batch); train_step() runs self.forward_backward(...) (the loss and its backward)
# and then self.optimizers.step() and self.lr_schedulers.step(), with no zero_grad anywhere, so
# every step applies the sum of all gradients so far ("[ez] zero grad every step": the PR adds
# self.optimizers.zero_grad() after the step).
import json

import torch
import torch.nn as nn


class ForgeSFTRecipe:
    def __init__(self, job_config):
        self.job_config = job_config
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.current_step = 0
        self.num_training_steps = job_config["steps"]

    def setup(self):
        torch.manual_seed(0)
        self.model = nn.Sequential(nn.Embedding(32, 16), nn.Linear(16, 32)).to(self.device)
        self.optimizers = torch.optim.AdamW(self.model.parameters(), lr=self.job_config["lr"])
        self.lr_schedulers = torch.optim.lr_scheduler.LambdaLR(self.optimizers, lambda step: 1.0)
        tokens = torch.randint(0, 32, (16, 9))
        self.train_dataloader = [{"tokens": tokens[:, :-1], "labels": tokens[:, 1:]}]
        self.loss_fn = nn.CrossEntropyLoss()

    def forward_backward(self, input_dict, labels):
        logits = self.model(input_dict["tokens"])
        loss = self.loss_fn(logits.flatten(0, 1), labels.flatten())
        loss.backward()
        return loss

    def train_step(self, batch):
        labels = batch.pop("labels")
        loss = self.forward_backward(batch, labels)
        self.optimizers.step()  # expect: GL401
        self.lr_schedulers.step()
        return loss.item()

    def train(self):
        dataloader = iter(self.train_dataloader * self.num_training_steps)
        losses = []
        while self.current_step < self.num_training_steps:
            batch = next(dataloader)
            batch = {k: v.to(self.device) for k, v in batch.items()}
            losses.append(self.train_step(batch))
            self.current_step += 1
        return losses


recipe = ForgeSFTRecipe({"steps": 12, "lr": 2e-2})
recipe.setup()
losses = recipe.train()
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": recipe.device.type}))
