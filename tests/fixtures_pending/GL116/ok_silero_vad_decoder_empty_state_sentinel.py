# source: https://github.com/snakers4/silero-vad/pull/699
# Hard negative for GL116 (a false positive today, engine item F21-1): the PR's version of the
# training function. `state = torch.zeros(0)` (an empty CPU tensor) is handed to the GPU decoder on
# the first chunk, but its forward only uses the state `if len(state):`, so nothing mixes devices
# (trains under `gpulint run`).
# silero-vad's tuning/utils.py: train(config, loader, jit_model, decoder, criterion, optimizer,
# device) fine-tunes only the VAD decoder on top of the frozen JIT model's stft and encoder
# layers. The model loader switched autograd off for the whole process
# (torch.set_grad_enabled(False)), so the training function runs inside `with
# torch.enable_grad():`; each batch is cut into overlapping chunks fed through stft -> encoder ->
# decoder (with a carried LSTM state), the per-frame BCE is masked and averaged, then
# loss.backward() and optimizer.step(): gradients were never cleared (the PR adds
# optimizer.zero_grad() before backward).
import json
from types import SimpleNamespace

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class FrozenVad(nn.Module):
    """Stands for the JIT model: an stft-like front end and an encoder, never trained here."""

    def __init__(self):
        super().__init__()
        self.stft = nn.Conv1d(1, 16, kernel_size=64, stride=64)
        self.encoder = nn.Sequential(nn.Conv1d(16, 32, kernel_size=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1))

    def forward(self, x):
        return self.encoder(self.stft(x.unsqueeze(1)))


class VADDecoderRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTMCell(32, 32)
        self.decoder = nn.Sequential(nn.Dropout(0.1), nn.ReLU(), nn.Conv1d(32, 1, kernel_size=1), nn.Sigmoid())

    def forward(self, x, state=torch.zeros(0)):
        x = x.squeeze(-1)
        if len(state):
            h, c = self.rnn(x, (state[0], state[1]))
        else:
            h, c = self.rnn(x)
        state = torch.stack([h, c])
        return self.decoder(h.unsqueeze(-1)), state


class VadDataset(Dataset):
    def __init__(self, n=32, frames=4, num_samples=128):
        g = torch.Generator().manual_seed(1)
        self.gt = (torch.rand(n, frames, generator=g) > 0.5).float()
        noise = 0.1 * torch.randn(n, frames, num_samples, generator=g)
        self.wav = (noise + self.gt.unsqueeze(-1)).flatten(1)
        self.mask = torch.ones(n, frames)

    def __len__(self):
        return len(self.gt)

    def __getitem__(self, idx):
        return self.wav[idx], self.gt[idx], self.mask[idx]


class AverageMeter:
    def __init__(self):
        self.sum, self.count, self.avg = 0.0, 0, 0.0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def train(config, loader, jit_model, decoder, criterion, optimizer, device):
    losses = AverageMeter()
    decoder.train()
    context_size = config.context_size
    num_samples = config.num_samples
    stft_layer = jit_model.stft
    encoder_layer = jit_model.encoder

    with torch.enable_grad():
        for _, (x, targets, masks) in enumerate(loader):
            targets = targets.to(device)
            x = x.to(device)
            masks = masks.to(device)
            x = torch.nn.functional.pad(x, (context_size, 0))

            outs = []
            state = torch.zeros(0)
            for i in range(context_size, x.shape[1], num_samples):
                input_ = x[:, i - context_size:i + num_samples - context_size]
                out = stft_layer(input_.unsqueeze(1))
                out = encoder_layer(out)
                out, state = decoder(out, state)
                outs.append(out)
            stacked = torch.cat(outs, dim=2).squeeze(1)

            loss = criterion(stacked, targets)
            loss = (loss * masks).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.update(loss.item(), masks.numel())
    return losses.avg


def main():
    torch.manual_seed(0)
    config = SimpleNamespace(context_size=64, num_samples=128, epochs=8, lr=2e-2)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.set_grad_enabled(False)  # what init_jit_model does before loading the JIT model
    jit_model = FrozenVad().to(device)
    jit_model.eval()
    decoder = VADDecoderRNN().to(device)
    optimizer = torch.optim.Adam(decoder.parameters(), lr=config.lr)
    criterion = nn.BCELoss(reduction="none")
    loader = DataLoader(VadDataset(), batch_size=8, shuffle=True)
    history = []
    for epoch in range(config.epochs):
        history.append(train(config, loader, jit_model, decoder, criterion, optimizer, device))
        print(f"epoch {epoch}: train loss {history[-1]:.4f}")
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))


if __name__ == "__main__":
    main()
