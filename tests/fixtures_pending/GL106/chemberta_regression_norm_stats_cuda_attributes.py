# source: https://github.com/seyonechithrananda/bert-loves-chemistry/pull/15
# ChemBERTa's multitask regression model kept the label normalisation statistics as plain tensor
# attributes moved with `.cuda()` in `__init__`; the PR registers them as buffers "so they end up on
# the proper GPUs (.cuda() always puts them on cuda:0 but the tensors they are interacting with aren't
# necessarily on that GPU when using multiple GPUs)". With more than one GPU the Trainer wraps the
# model in DataParallel: the replica on cuda:1 still reads the cuda:0 statistics and the loss fails.
# (A small encoder replaces RobertaModel, and a plain DataParallel loop stands in for the HF Trainer's
# multi-GPU path. Like the repository, the script needs a GPU; it trains on one, and
# `gpulint run --gpus 2 file.py` fails with "Expected all tensors to be on the same device, but found
# at least two devices, cuda:1 and cuda:0".)
import json
from types import SimpleNamespace

import torch
import torch.nn as nn
from torch.nn import MSELoss


class RobertaRegressionHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.out_proj = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, features):
        x = features[:, 0, :]
        return self.out_proj(torch.tanh(self.dense(x)))


class RobertaForRegression(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(config.hidden_size, 2, 64, dropout=0.0, batch_first=True), 1
        )
        self.regression = RobertaRegressionHead(config)
        self.norm_mean = torch.tensor(config.norm_mean).cuda()  # expect: GL106
        self.norm_std = torch.tensor(config.norm_std).cuda()  # expect: GL106

    def forward(self, input_ids, labels=None):
        logits = self.regression(self.encoder(self.embeddings(input_ids)))
        loss = None
        if labels is not None:
            normalized_labels = (labels - self.norm_mean) / self.norm_std
            loss = MSELoss()(logits, normalized_labels)
        return loss, logits


def main():
    torch.manual_seed(0)
    labels = torch.randn(128, 2) * torch.tensor([3.0, 0.5]) + torch.tensor([10.0, -2.0])
    config = SimpleNamespace(
        vocab_size=32, hidden_size=32, num_labels=2,
        norm_mean=labels.mean(0).tolist(), norm_std=labels.std(0).tolist(),
    )
    input_ids = torch.randint(0, 32, (128, 12))
    input_ids[:, 1] = (labels[:, 0] > 10).long() + 2 * (labels[:, 1] > -2).long()

    model = RobertaForRegression(config).cuda()
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for epoch in range(6):
        for i in range(0, 128, 32):
            loss, _ = model(input_ids[i : i + 32].cuda(), labels[i : i + 32].cuda())
            loss = loss.mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
    losses = torch.stack(losses).tolist()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cuda"}))


if __name__ == "__main__":
    main()
