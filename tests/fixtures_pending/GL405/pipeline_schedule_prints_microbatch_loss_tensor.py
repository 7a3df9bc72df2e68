# source: https://github.com/pytorch/pytorch/pull/126829
# A pipeline-parallel schedule (one stage per rank, here a single process holding both stages) splits
# every batch into microbatches; the last stage computes each microbatch's loss in
# `_maybe_compute_loss` and printed the loss tensor there. Printing a CUDA tensor copies it to the
# host, so every microbatch of every step waits for the GPU (the PR: "loss is a tensor, printing it
# would induce a GPU-CPU sync"); the fix drops the print and lets users log their own losses.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class PipelineStage(nn.Module):
    def __init__(self, d_in, d_out, last=False):
        super().__init__()
        self.layer = nn.Linear(d_in, d_out)
        self.last = last

    def forward(self, x):
        out = self.layer(x)
        return out if self.last else F.relu(out)


class ScheduleGPipe:
    def __init__(self, stages, n_microbatches, loss_fn):
        self.stages = stages
        self.n_microbatches = n_microbatches
        self.loss_fn = loss_fn

    def _maybe_compute_loss(self, output, target, mb_index):
        loss = self.loss_fn(output, target)
        print(f"microbatch {mb_index} loss:", loss)  # expect: GL405
        return loss

    def step(self, x, target):
        losses = []
        for mb_index, (x_mb, t_mb) in enumerate(zip(x.chunk(self.n_microbatches), target.chunk(self.n_microbatches))):
            out = x_mb
            for stage in self.stages:
                out = stage(out)
            loss = self._maybe_compute_loss(out, t_mb, mb_index)
            (loss / self.n_microbatches).backward()
            losses.append(loss.detach())
        return torch.stack(losses).mean()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    stages = [PipelineStage(16, 32).to(device), PipelineStage(32, 4, last=True).to(device)]
    params = [p for s in stages for p in s.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.1)
    schedule = ScheduleGPipe(stages, n_microbatches=4, loss_fn=F.cross_entropy)

    x = torch.randn(128, 16)
    y = x[:, :4].argmax(dim=1)
    step_losses = []
    for step in range(30):
        idx = torch.randint(0, 128, (32,))
        optimizer.zero_grad()
        step_losses.append(schedule.step(x[idx].to(device), y[idx].to(device)))
        optimizer.step()

    losses = torch.stack(step_losses).tolist()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
