# source: https://github.com/facebookresearch/fairseq/issues/2255
# fairseq (mid 2020), criterions/masked_lm.py: `MaskedLmLoss.forward(model, sample)` returns
# `(loss, sample_size, logging_output)` with `logging_output = {'loss': loss, 'ntokens': ...,
# 'nsentences': ..., 'sample_size': sample_size}`, the loss tensor itself, graph attached, where the
# other criterions store `loss.data`. The trainer runs the criterion for each of the `update_freq`
# sub-batches, collects the logging outputs, and the criterion's `reduce_metrics` sums them
# (`sum(log.get('loss', 0) for log in logging_outputs)`) into `metrics.log_scalar('loss', ...)`,
# whose AverageMeter keeps `self.sum = self.sum + val * n`: every update's graph stays alive for the
# whole run, so host memory grows with every step ("memory (not GPU memory) leakage"). Fixed by
# storing `loss.data` (a maintainer suggested `.detach()`). Rebuilt with a one-layer masked LM on
# synthetic token ids; the aggregation and the update_freq loop keep fairseq's structure, and the
# running meter is held by the trainer (`self.meters["train_loss"]`, as in fairseq 0.9) instead of
# the global metrics registry.
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class AverageMeter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.sum = 0
        self.count = 0
        self.avg = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


class MaskedLM(nn.Module):
    def __init__(self, vocab=16, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Conv1d(dim, dim, 3, padding=1)
        self.out = nn.Linear(dim, vocab)

    def forward(self, src_tokens):
        x = self.embed(src_tokens).transpose(1, 2)
        x = F.relu(self.mix(x)).transpose(1, 2)
        return self.out(x)


class MaskedLmLoss:
    def __init__(self, padding_idx):
        self.padding_idx = padding_idx

    def forward(self, model, sample):
        masked_tokens = sample["target"].ne(self.padding_idx)
        sample_size = int(masked_tokens.sum())
        logits = model(sample["net_input"]["src_tokens"])[masked_tokens]
        targets = sample["target"][masked_tokens]
        loss = F.nll_loss(F.log_softmax(logits, dim=-1), targets, reduction="sum")
        logging_output = {
            "loss": loss,
            "ntokens": sample["ntokens"],
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        return loss, sample_size, logging_output

    @staticmethod
    def aggregate_logging_outputs(logging_outputs):
        loss = sum(log.get("loss", 0) for log in logging_outputs)
        sample_size = sum(log.get("sample_size", 0) for log in logging_outputs)
        return {"loss": loss / sample_size / math.log(2), "sample_size": sample_size}


class Trainer:
    def __init__(self, model, criterion, lr):
        self.model = model
        self.criterion = criterion
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.meters = {"train_loss": AverageMeter(), "wps": AverageMeter()}

    def train_step(self, samples):
        self.model.train()
        self.optimizer.zero_grad()
        logging_outputs, sample_sizes = [], []
        for sample in samples:
            loss, sample_size, logging_output = self.criterion.forward(self.model, sample)
            loss.backward()
            logging_outputs.append(logging_output)
            sample_sizes.append(sample_size)
        sample_size = sum(sample_sizes)
        for p in self.model.parameters():
            if p.grad is not None:
                p.grad.data.div_(sample_size)
        self.optimizer.step()
        logging_output = self.criterion.aggregate_logging_outputs(logging_outputs)
        self.meters["train_loss"].update(logging_output["loss"], sample_size)  # expect: GL402
        return logging_output


def make_sample(g, device, vocab=16, bsz=8, tsz=12, mask_idx=15, padding_idx=0):
    tokens = torch.randint(1, vocab - 1, (bsz, tsz // 2), generator=g).repeat_interleave(2, dim=1)
    mask = torch.rand(bsz, tsz, generator=g) < 0.2
    src = tokens.masked_fill(mask, mask_idx)
    target = tokens.masked_fill(~mask, padding_idx)
    return {"net_input": {"src_tokens": src.to(device)}, "target": target.to(device), "ntokens": int(mask.sum())}


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = MaskedLM().to(device)
    trainer = Trainer(model, MaskedLmLoss(padding_idx=0), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    update_freq = 2
    history = []
    for epoch in range(3):
        trainer.meters["train_loss"].reset()
        for step in range(20):
            samples = [make_sample(g, device) for _ in range(update_freq)]
            trainer.train_step(samples)
        history.append(float(trainer.meters["train_loss"].avg))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
