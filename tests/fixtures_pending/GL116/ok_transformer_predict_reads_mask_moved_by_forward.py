# Hard negative, pending (engine-rooted; PRECISION20 A4). Real shape: dvgodoy/PyTorchStepByStep,
# Chapter10.ipynb, `EncoderDecoderTransf` (cell 125) and `DecoderTransf` (cell 129),
# https://github.com/dvgodoy/PyTorchStepByStep/blob/d837dec7250dae20d247634c4aba63791bd89b2f/Chapter10.ipynb
# `__init__` stores the causal mask as a plain attribute (`self.trg_masks = self.subsequent_mask(...)`,
# a host `torch.triu` tensor); `forward` first does `self.trg_masks = self.trg_masks.type_as(X).bool()`
# (the mask follows the input to its device) and then, in eval mode, calls `self.predict(...)`,
# which reads `self.trg_masks[:, :i+1, :i+1]` and hands it to the decoder. The mask is on the
# input's device before `predict` reads it. Because the `__init__` value comes from a method call
# (an inline `1 - torch.triu(...)` is answered right), the engine reads `self.trg_masks` in
# `predict` as its `__init__` value and reports the host mask meeting the decoder's input on the accelerator (GL116,
# line 69; the same report as in the notebook, where the imported `StepByStep` trainer moves the
# model; here the file moves it).
import json

import torch
import torch.nn as nn

torch.manual_seed(42)
device = 'cuda' if torch.cuda.is_available() else 'cpu'


class DecoderLayer(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.d_model = d_model
        self.attn = nn.Linear(d_model, d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, 16), nn.ReLU(), nn.Linear(16, d_model))

    def forward(self, query, target_mask=None):
        scores = query @ self.attn(query).transpose(-2, -1) / self.d_model ** 0.5
        if target_mask is not None:
            scores = scores.masked_fill(target_mask == 0, -1e9)
        att = torch.softmax(scores, dim=-1) @ query
        return att + self.ffn(att)


class DecoderTransf(nn.Module):
    def __init__(self, d_model, n_layers=1):
        super().__init__()
        self.d_model = d_model
        self.layers = nn.ModuleList([DecoderLayer(d_model) for _ in range(n_layers)])
        self.norm = nn.LayerNorm(d_model)

    def forward(self, query, target_mask=None):
        x = query
        for layer in self.layers:
            x = layer(x, target_mask)
        return self.norm(x)


class EncoderDecoderTransf(nn.Module):
    def __init__(self, decoder, input_len, target_len, n_features):
        super().__init__()
        self.decoder = decoder
        self.input_len = input_len
        self.target_len = target_len
        self.trg_masks = self.subsequent_mask(self.target_len)
        self.proj = nn.Linear(n_features, decoder.d_model)
        self.linear = nn.Linear(decoder.d_model, n_features)

    @staticmethod
    def subsequent_mask(size):
        attn_shape = (1, size, size)
        subsequent_mask = (1 - torch.triu(torch.ones(attn_shape), diagonal=1))
        return subsequent_mask

    def decode(self, shifted_target_seq, target_mask=None):
        target_proj = self.proj(shifted_target_seq)
        outputs = self.decoder(target_proj, target_mask=target_mask)
        return self.linear(outputs)

    def predict(self, source_seq):
        inputs = source_seq[:, -1:]
        for i in range(self.target_len):
            out = self.decode(inputs, self.trg_masks[:, :i + 1, :i + 1])
            out = torch.cat([inputs, out[:, -1:, :]], dim=-2)
            inputs = out.detach()
        return inputs[:, 1:, :]

    def forward(self, X):
        self.trg_masks = self.trg_masks.type_as(X).bool()
        source_seq = X[:, :self.input_len, :]
        if self.training:
            shifted_target_seq = X[:, self.input_len - 1:-1, :]
            return self.decode(shifted_target_seq, self.trg_masks)
        return self.predict(source_seq)


corners = torch.tensor([[-1., -1.], [-1., 1.], [1., 1.], [1., -1.]])
starts = torch.randint(0, 4, (256,))
full = torch.stack([corners[(starts + k) % 4] for k in range(4)], dim=1) + 0.05 * torch.randn(256, 4, 2)
model = EncoderDecoderTransf(DecoderTransf(d_model=8, n_layers=2), input_len=2, target_len=2, n_features=2).to(device)
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for epoch in range(15):
    for i in range(0, 256, 32):
        X = full[i:i + 32].to(device)
        model.train()
        outputs = model(X)
        loss = loss_fn(outputs, X[:, 2:])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())

model.eval()
with torch.no_grad():
    X = full[:32].to(device)
    val_loss = loss_fn(model(X), X[:, 2:]).item()
print(json.dumps({"val_loss": val_loss}))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(device).type}))
