# Hard negative (real shape: NVIDIA/DeepLearningExamples, PyTorch/SpeechSynthesis/Tacotron2/exports/export_tacotron2_onnx.py,
# https://github.com/NVIDIA/DeepLearningExamples/blob/729963dd47e7c8bd462ad10bfac7a7b0b604e6dd/PyTorch/SpeechSynthesis/Tacotron2/exports/export_tacotron2_onnx.py
# lstmcell2lstm_params / DecoderIter / main; benchmarks/PRECISION47.md P47-4): the export wrapper
# builds a fresh `nn.LSTM(..., 1)` in `__init__` and at once replaces all four of its parameters
# with `torch.nn.Parameter(<the trained LSTMCell's tensor>)` through a helper of the file; its other
# parts are the trained (moved) model's own submodules. Every parameter it holds already lives on
# the model's device, so calling it with moved inputs is right; it is never moved itself.
# The trained model comes back from a whole-module checkpoint (the real script: a loader of
# another module that moves it to the GPU), so its device is not known to the analysis.
import json
import os
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Decoder(nn.Module):
    def __init__(self, n_in=6, n_hidden=12):
        super().__init__()
        self.rnn = nn.LSTMCell(n_in, n_hidden)
        self.proj = nn.Linear(n_hidden, 1)

    def forward(self, x):
        h = torch.zeros(x.size(0), self.rnn.hidden_size, device=x.device)
        c = torch.zeros_like(h)
        outs = []
        for t in range(x.size(1)):
            h, c = self.rnn(x[:, t], (h, c))
            outs.append(self.proj(h))
        return torch.cat(outs, dim=1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.decoder = Decoder()

    def forward(self, x):
        return self.decoder(x)


def lstmcell2lstm_params(lstm_mod, lstmcell_mod):
    lstm_mod.weight_ih_l0 = torch.nn.Parameter(lstmcell_mod.weight_ih)
    lstm_mod.weight_hh_l0 = torch.nn.Parameter(lstmcell_mod.weight_hh)
    lstm_mod.bias_ih_l0 = torch.nn.Parameter(lstmcell_mod.bias_ih)
    lstm_mod.bias_hh_l0 = torch.nn.Parameter(lstmcell_mod.bias_hh)


class DecoderIter(nn.Module):
    def __init__(self, model):
        super().__init__()
        dec = model.decoder
        self.rnn = nn.LSTM(6, 12, 1)
        lstmcell2lstm_params(self.rnn, dec.rnn)
        self.proj = dec.proj

    def forward(self, x_t, h, c):
        out, (h, c) = self.rnn(x_t.unsqueeze(0), (h.unsqueeze(0), c.unsqueeze(0)))
        return self.proj(out.squeeze(0)), h.squeeze(0), c.squeeze(0)


model = Model().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
x = torch.randn(32, 5, 6, device=device)
y = x.sum(dim=2).cumsum(dim=1) * 0.1
losses = []
for step in range(40):
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

# the export script gets the trained model from a loader of another module; here, a whole-module
# checkpoint restored onto the device
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "model.pt")
    torch.save(model, path)
    tacotron2 = torch.load(path, map_location=device, weights_only=False)

decoder_iter = DecoderIter(tacotron2)
decoder_iter.eval()
x_t = torch.randn(4, 6).to(device)
h = torch.zeros(4, 12).to(device)
c = torch.zeros(4, 12).to(device)
with torch.no_grad():
    out, h, c = decoder_iter(x_t, h, c)
print(out.shape)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
