# source: https://github.com/gentaiscool/end2end-asr-pytorch/issues/29
# An end-to-end ASR trainer: Trainer.train() runs the training batches, then switches to
# model.eval() and loops over a list of validation loaders, calling the model on every batch outside
# torch.no_grad(). The activations of the whole validation batch are kept for a backward that never
# comes, and validation runs out of GPU memory where training did not; the commenter's fix adds
# `with torch.no_grad():` before the validation loop.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Transformer(nn.Module):
    def __init__(self, feat=12, vocab=6, hidden=32):
        super().__init__()
        self.encoder = nn.GRU(feat, hidden, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, src, src_lengths):
        out, _ = self.encoder(src)
        return self.decoder(out)


class Trainer:
    def train(self, model, train_loader, valid_loader_list, opt, device, num_epochs=4):
        history = []
        for epoch in range(num_epochs):
            model.train()
            for src, src_lengths, tgt in train_loader:
                src, tgt = src.to(device), tgt.to(device)
                opt.zero_grad()
                pred = model(src, src_lengths)
                loss = F.cross_entropy(pred.reshape(-1, pred.size(-1)), tgt.reshape(-1))
                loss.backward()
                opt.step()
                history.append(loss.item())

            model.eval()
            total_valid_loss = 0.0
            for valid_loader in valid_loader_list:
                for src, src_lengths, tgt in valid_loader:
                    src, tgt = src.to(device), tgt.to(device)
                    pred = model(src, src_lengths)  # expect: GL403
                    loss = F.cross_entropy(pred.reshape(-1, pred.size(-1)), tgt.reshape(-1))
                    total_valid_loss += loss.item()
            print("epoch %d valid loss %.4f" % (epoch, total_valid_loss))
        return history


def make_loader(n, seed, shuffle):
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(n, 20, 12, generator=g)
    tgt = (src[..., :6].argmax(dim=-1))
    lengths = torch.full((n,), 20)
    return DataLoader(TensorDataset(src, lengths, tgt), batch_size=16, shuffle=shuffle)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Transformer().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    train_loader = make_loader(128, 0, True)
    valid_loader_list = [make_loader(32, 1, False), make_loader(32, 2, False)]
    history = Trainer().train(model, train_loader, valid_loader_list, opt, device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))


if __name__ == "__main__":
    main()
