# source: https://github.com/kh-kim/simple-nmt/pull/22
# simple-nmt's MaximumLikelihoodEstimationEngine (an ignite Engine subclass) accumulates gradients
# over `config.iteration_per_update` mini-batches: its static `train(engine, mini_batch)` clears
# them only when `engine.state.iteration % engine.config.iteration_per_update == 1`, and steps the
# GradScaler/optimizer when the remainder is 0. With iteration_per_update == 1 (update every batch)
# `iteration % 1` is always 0, so zero_grad() never runs and every step applies the sum of all
# gradients so far. The PR "hotfix: handle zero_grad in case of iteration_per_update==1" added
# `or engine.config.iteration_per_update == 1` to the condition. A small Engine class stands in for
# ignite's (it runs the process function once per batch with a 1-based `state.iteration`).
import json
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.utils as torch_utils


class Engine:
    def __init__(self, process_function):
        self._process_function = process_function
        self.state = SimpleNamespace(iteration=0, epoch=0, output=None)
        self.outputs = []

    def run(self, data, max_epochs=1):
        for _ in range(max_epochs):
            self.state.epoch += 1
            for batch in data:
                self.state.iteration += 1
                self.state.output = self._process_function(self, batch)
                self.outputs.append(self.state.output)
        return self.state


class Seq2Seq(nn.Module):
    def __init__(self, vocab=12, hidden=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.generator = nn.Linear(hidden, vocab)

    def forward(self, src, tgt_in):
        _, h = self.rnn(self.emb(src))
        out, _ = self.rnn(self.emb(tgt_in), h)
        return torch.log_softmax(self.generator(out), dim=-1)


class MaximumLikelihoodEstimationEngine(Engine):
    def __init__(self, func, model, crit, optimizer, lr_scheduler, config):
        self.model = model
        self.crit = crit
        self.optimizer = optimizer
        self.lr_scheduler = lr_scheduler
        self.config = config
        super().__init__(func)
        self.best_loss = float("inf")
        self.scaler = torch.amp.GradScaler("cuda", enabled=config.use_amp)

    @staticmethod
    def train(engine, mini_batch):
        engine.model.train()
        if engine.state.iteration % engine.config.iteration_per_update == 1:
            engine.optimizer.zero_grad()

        device = next(engine.model.parameters()).device
        src, tgt = mini_batch[0].to(device), mini_batch[1].to(device)
        x, y = src, tgt[:, 1:]

        with torch.autocast(device.type, enabled=engine.config.use_amp):
            y_hat = engine.model(x, tgt[:, :-1])
            loss = engine.crit(y_hat.contiguous().view(-1, y_hat.size(-1)), y.contiguous().view(-1))
            backward_target = loss.div(y.size(0)).div(engine.config.iteration_per_update)
        engine.scaler.scale(backward_target).backward()

        if engine.state.iteration % engine.config.iteration_per_update == 0 and engine.state.iteration > 0:
            engine.scaler.unscale_(engine.optimizer)
            torch_utils.clip_grad_norm_(engine.model.parameters(), engine.config.max_grad_norm)
            engine.scaler.step(engine.optimizer)  # expect: GL401
            engine.scaler.update()
            if engine.lr_scheduler is not None:
                engine.lr_scheduler.step()

        return float(loss / y.size(0))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
config = SimpleNamespace(iteration_per_update=1, max_grad_norm=5.0, use_amp=device.type == "cuda")
torch.manual_seed(0)
src = torch.randint(1, 12, (64, 6))
tgt = torch.cat([torch.zeros(64, 1, dtype=torch.long), src.flip(1)], dim=1)
train_loader = [(src[i:i + 8], tgt[i:i + 8]) for i in range(0, 64, 8)]

model = Seq2Seq().to(device)
crit = nn.NLLLoss(reduction="sum")
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
trainer = MaximumLikelihoodEstimationEngine(MaximumLikelihoodEstimationEngine.train, model, crit, optimizer, None, config)
trainer.run(train_loader, max_epochs=6)

print("GPULINT-TRAIN " + json.dumps({"first_loss": trainer.outputs[0], "last_loss": trainer.outputs[-1], "device": device.type}))
