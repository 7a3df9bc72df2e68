# source: https://github.com/VinAIResearch/XPhoneBERT/issues/7
# fixture: torchrun 2
# VITS_with_XPhoneBERT/train.py: run(rank, n_gpus, hps) initialises the process group, builds the
# generator SynthesizerTrn (its text encoder `enc_p` holds the pre-trained XPhoneBERT as
# `enc_p.bert`), wraps it in DistributedDataParallel, and the epoch loop freezes the BERT for the
# first quarter of the epochs and unfreezes it afterwards with
# `for child in net_g.enc_p.bert.children(): for param in child.parameters(): ...`, reading
# `enc_p` through the DDP wrapper: "AttributeError: 'DistributedDataParallel' object has no
# attribute 'enc_p'" (the answer: net_g.module.enc_p.bert.children()).
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class TextEncoder(nn.Module):
    def __init__(self, vocab=16, hidden=16):
        super().__init__()
        self.bert = nn.Sequential(nn.Embedding(vocab, hidden), nn.Linear(hidden, hidden))
        self.proj = nn.Linear(hidden, 2 * hidden)

    def forward(self, x):
        h = self.bert(x)
        m, logs = self.proj(h).chunk(2, dim=-1)
        return m, logs


class SynthesizerTrn(nn.Module):
    def __init__(self, vocab=16, hidden=16, n_mel=8):
        super().__init__()
        self.enc_p = TextEncoder(vocab, hidden)
        self.dec = nn.Linear(hidden, n_mel)

    def forward(self, x):
        m, logs = self.enc_p(x)
        return self.dec(m + 0.1 * torch.tanh(logs))


def run(rank, n_gpus, epochs=6):
    dist.init_process_group(backend="gloo", init_method="env://", world_size=n_gpus, rank=rank)
    torch.manual_seed(1234)
    text = torch.randint(0, 16, (128, 6))
    mel = torch.sin(text.float()).unsqueeze(-1).repeat(1, 1, 8)
    train_dataset = TensorDataset(text, mel)
    train_sampler = DistributedSampler(train_dataset, num_replicas=n_gpus, rank=rank, shuffle=True)
    train_loader = DataLoader(train_dataset, batch_size=16, sampler=train_sampler)

    net_g = SynthesizerTrn()
    optim_g = torch.optim.AdamW(net_g.parameters(), 2e-3, betas=(0.8, 0.99), eps=1e-9)
    net_g = DDP(net_g)
    scheduler_g = torch.optim.lr_scheduler.ExponentialLR(optim_g, gamma=0.999)

    history = []
    for epoch in range(1, epochs + 1):
        if epoch < int(epochs / 4):
            for child in net_g.enc_p.bert.children():  # expect: GL305
                for param in child.parameters():
                    param.requires_grad = False
        else:
            for child in net_g.enc_p.bert.children():  # expect: GL305
                for param in child.parameters():
                    param.requires_grad = True
        train_sampler.set_epoch(epoch)
        net_g.train()
        total = 0.0
        for x, y_mel in train_loader:
            y_hat = net_g(x)
            loss_mel = F.l1_loss(y_hat, y_mel)
            optim_g.zero_grad()
            loss_mel.backward()
            optim_g.step()
            total += loss_mel.item()
        scheduler_g.step()
        history.append(total / len(train_loader))
    if rank == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": "cpu"}))
    dist.destroy_process_group()


def main():
    if "LOCAL_RANK" in os.environ:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29571")
        run(0, 1)


if __name__ == "__main__":
    main()
