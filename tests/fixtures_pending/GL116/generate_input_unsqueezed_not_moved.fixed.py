# source: https://github.com/rasbt/reasoning-from-scratch/issues/20
# fails-on-cuda: Expected all tensors to be on the same device
# The generation helper encodes the prompt, adds the batch dimension with .unsqueeze(0) and feeds
# the result to the model on the device without moving it (the fix adds
# input_tensor_fmt = input_tensor_fmt.to(device)).
import json

import torch
import torch.nn as nn


class TinyLM(nn.Module):
    def __init__(self, vocab=20, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, idx):
        return self.out(torch.tanh(self.emb(idx)))


def encode(text):
    return [ord(c) % 20 for c in text]


@torch.inference_mode()
def generate_text_basic(model, token_ids, max_new_tokens):
    out = token_ids
    for _ in range(max_new_tokens):
        logits = model(out.to(device))[:, -1]  # expect: GL116
        next_token = torch.argmax(logits, dim=-1, keepdim=True)
        out = torch.cat([out, next_token], dim=1)  # expect: GL116
    return out


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = TinyLM().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
seq = torch.tensor(encode("the quick brown fox jumps over the lazy dog" * 3), device=device)
history = []
for step in range(60):
    i = torch.randint(0, seq.numel() - 9, (16,), device=device)
    x = torch.stack([seq[j : j + 8] for j in i])
    y = torch.stack([seq[j + 1 : j + 9] for j in i])
    loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss.item())

prompt = "the quick"
input_tensor = torch.tensor(encode(prompt))
input_tensor_fmt = input_tensor.unsqueeze(0)
model.eval()
output_token_ids = generate_text_basic(model, input_tensor_fmt, max_new_tokens=5)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
