# source: https://github.com/lucidrains/RETRO-pytorch/pull/9
# RETRO's retrieval helpers keep the BERT embedder in a module-level singleton: get_bert() builds
# it once and moves it with .cuda() when CUDA is available. bert_embed(token_ids) derives the
# padding mask from the token ids (`mask = token_ids != pad_id`), then moves only the token ids to
# the GPU and calls the model with `attention_mask = mask` still on the host (the PR adds
# `mask = mask.cuda()`). The embeddings then train a small projection (standing in for the
# faiss index built from them), so that the script trains.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn

BERT_MODEL_DIM = 16
MODEL = None


def exists(val):
    return val is not None


class TinyBert(nn.Module):
    def __init__(self, vocab=50, dim=BERT_MODEL_DIM):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.layer = nn.Linear(dim, dim)

    def forward(self, input_ids, attention_mask):
        x = self.emb(input_ids) * attention_mask.unsqueeze(-1)
        return torch.tanh(self.layer(x))


def get_bert():
    global MODEL
    if not exists(MODEL):
        MODEL = TinyBert()
        if torch.cuda.is_available():
            MODEL = MODEL.cuda()
    return MODEL


@torch.no_grad()
def bert_embed(token_ids, eps=1e-8, pad_id=0.):
    model = get_bert()
    mask = token_ids != pad_id

    if torch.cuda.is_available():
        token_ids = token_ids.cuda()

    hidden_state = model(input_ids=token_ids, attention_mask=mask)  # expect: GL116

    mask = mask[:, 1:].unsqueeze(-1)
    numer = (hidden_state[:, 1:] * mask).sum(dim=1)  # expect: GL116
    denom = mask.sum(dim=1)
    return numer / (denom + eps)  # expect: GL116


torch.manual_seed(0)
chunks = torch.randint(1, 50, (64, 8))
chunks[:, 6:] = 0  # padding
embeddings = torch.cat([bert_embed(chunks[i:i + 16]) for i in range(0, 64, 16)])
device = embeddings.device
targets = (embeddings @ torch.randn(BERT_MODEL_DIM, 4, device=device)).detach()
proj = nn.Linear(BERT_MODEL_DIM, 4).to(device)
optimizer = torch.optim.Adam(proj.parameters(), lr=1e-2)
losses = []
for step in range(40):
    loss = ((proj(embeddings) - targets) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
