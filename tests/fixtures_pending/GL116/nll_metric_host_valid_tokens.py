# source: https://github.com/haoyangzheng-ai/didi-instruct/issues/1
# Generative-perplexity logging: the per-token NLLs come from the model on the GPU, the mask of
# valid tokens is built on the CPU from the generated lengths, and the metric helper multiplies
# them (`nlls * valid_tokens`) before accumulating.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


def valid_token_mask(lengths, max_len):
    positions = torch.arange(max_len)
    return (positions[None, :] < torch.as_tensor(lengths)[:, None]).float()


class TinyLM(nn.Module):
    def __init__(self, vocab=16, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        return self.head(torch.relu(self.emb(tokens)))


def compute_generative_ppl(model, samples, lengths):
    logits = model(samples[:, :-1])
    nlls = nn.functional.cross_entropy(logits.transpose(1, 2), samples[:, 1:], reduction="none")
    valid_tokens = valid_token_mask(lengths, samples.size(1) - 1)
    total = (nlls * valid_tokens).sum()  # expect: GL116
    return torch.exp(total / valid_tokens.sum())


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = TinyLM().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
corpus = torch.stack([(torch.arange(10) * k) % 16 for k in range(1, 9)])
losses = []
for step in range(60):
    batch = corpus[torch.randint(0, 8, (8,))].to(device)
    logits = model(batch[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, 16), batch[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    if step % 20 == 19:
        with torch.no_grad():
            ppl = compute_generative_ppl(model, batch, [9, 7, 9, 8, 9, 6, 9, 9])
        print(f"step {step} gen ppl {ppl.item():.2f}")
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
