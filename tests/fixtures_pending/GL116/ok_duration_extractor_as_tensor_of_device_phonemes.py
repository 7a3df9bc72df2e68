# Hard negative (PRECISION55, P55-5): `phonemes = torch.as_tensor(phonemes)` of a method
# parameter that is already a tensor on the model's device returns that same tensor: no copy to
# the host. The engine reads `as_tensor(...)` as a host factory because the name is bound twice
# (parameter, then the assignment), and reports the embedding lookup.
# Shape of janvainer/speedyspeech code/duration_extractor.py `DurationExtractor.generate_naive`
# (`phonemes = torch.as_tensor(phonemes)`, then `self.txt_encoder(phonemes)`; the model moved in
# `__init__` with `self.to(self.device)`; the method is not called in the file):
# https://github.com/janvainer/speedyspeech/blob/master/code/duration_extractor.py
import json

import torch
import torch.nn as nn

torch.manual_seed(0)


class TextEncoder(nn.Module):
    def __init__(self, n_symbols=12, channels=16):
        super().__init__()
        self.embedding = nn.Embedding(n_symbols, channels)
        self.proj = nn.Linear(channels, channels)

    def forward(self, x):
        emb = self.embedding(x)
        return self.proj(torch.relu(emb)) + emb


class DurationExtractor(nn.Module):
    def __init__(self, device="cuda" if torch.cuda.is_available() else "cpu"):
        super().__init__()
        self.txt_encoder = TextEncoder()
        self.head = nn.Linear(16, 1)
        self.device = device
        self.to(self.device)

    def forward(self, phonemes):
        return self.head(self.txt_encoder(phonemes)).squeeze(-1)

    def generate_naive(self, phonemes):
        """Generation without caching, for testing (a list of ids or a tensor on the device)."""
        with torch.no_grad():
            phonemes = torch.as_tensor(phonemes)
            keys = self.txt_encoder(phonemes)
            return self.head(keys).squeeze(-1)


def fit(model, batches, steps=60):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        phonemes, durations = batches[step % len(batches)]
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(phonemes), durations)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


model = DurationExtractor()
batches = []
for _ in range(4):
    p = torch.randint(0, 12, (8, 10))
    batches.append((p.to(model.device), (p.float() % 3 + 1).to(model.device)))
losses = fit(model, batches)
naive = getattr(model, "generate_naive")  # the testing entry point, as the original calls it from outside
assert torch.allclose(naive(batches[0][0]), model(batches[0][0]))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(model.device).type}))
