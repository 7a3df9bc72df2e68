# source: https://github.com/SeanNaren/deepspeech.pytorch/pull/22
# train.py's main(): every epoch starts with model.train(), runs the train loader, then decodes the
# whole test loader (`for i, (data) in enumerate(test_loader):  # test`) to compute WER/CER, but
# never switches the model to eval mode: the sequence-wise BatchNorm keeps normalising with batch
# statistics (and updating its running stats) on validation data. The PR adds model.eval() before
# the test loop. (Variable wrappers of the 2017 code dropped; the test loop runs under no_grad.)
import argparse
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class DeepSpeech(nn.Module):
    def __init__(self, rnn_hidden_size=16, nb_layers=1, num_classes=5, n_feats=8):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(n_feats, 16, 3, padding=1), nn.BatchNorm1d(16), nn.Hardtanh(0, 20, inplace=True))
        self.rnn = nn.GRU(16, rnn_hidden_size, num_layers=nb_layers, bidirectional=True, batch_first=True)
        self.fc = nn.Sequential(nn.BatchNorm1d(2 * rnn_hidden_size), nn.Linear(2 * rnn_hidden_size, num_classes))

    def forward(self, x):
        x = self.conv(x).transpose(1, 2)  # N x T x H
        x, _ = self.rnn(x)
        n, t, h = x.shape
        x = self.fc(x.reshape(n * t, h)).view(n, t, -1)
        return x.log_softmax(-1)


class ArgMaxDecoder:
    def decode(self, out):
        return out.argmax(-1)

    def cer(self, decoded, target):
        return (decoded[: target.numel()] != target).float().mean().item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--max_norm", type=float, default=400)
    args = parser.parse_args([])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    feats = torch.randn(64, 8, 12)
    labels = (feats[:, :4].mean(1) > 0).long() + 1  # N x T, classes 1..2, blank 0
    targets = labels[:, ::3]
    train_loader = DataLoader(TensorDataset(feats[:48], targets[:48]), batch_size=8, shuffle=True)
    test_loader = DataLoader(TensorDataset(feats[48:], targets[48:]), batch_size=8)

    criterion = nn.CTCLoss(blank=0, zero_infinity=True)
    model = DeepSpeech().to(device)
    decoder = ArgMaxDecoder()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, nesterov=True)

    history = []
    for epoch in range(args.epochs):
        model.train()
        avg_loss = 0
        for i, (data) in enumerate(train_loader):
            inputs, target = data
            inputs, target = inputs.to(device), target.to(device)
            out = model(inputs).transpose(0, 1)  # T x N x H
            sizes = torch.full((inputs.size(0),), out.size(0), dtype=torch.long)
            target_sizes = torch.full((inputs.size(0),), target.size(1), dtype=torch.long)
            loss = criterion(out, target, sizes, target_sizes)
            avg_loss += loss.item()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_norm)
            optimizer.step()
        avg_loss /= len(train_loader)
        history.append(avg_loss)

        total_cer = 0
        for i, (data) in enumerate(test_loader):  # test  # expect: GL404
            inputs, target = data
            inputs = inputs.to(device)
            with torch.no_grad():
                out = model(inputs)
            decoded_output = decoder.decode(out.cpu())
            for x in range(len(target)):
                total_cer += decoder.cer(decoded_output[x], target[x])
        cer = 100 * total_cer / len(test_loader.dataset)
        print("Validation Summary Epoch: [{0}]\tAverage CER {cer:.0f}".format(epoch + 1, cer=cer))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))


if __name__ == "__main__":
    main()
