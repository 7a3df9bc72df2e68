# source: https://github.com/lyutyuh/gazetteer-NER-acl19/issues/5
# HSCRF_SoftDict's forward adds the end-token embedding to the span scores with
# `self.end_token_embedding.cuda(util.get_device_of(spans))`; training on a CPU-only machine
# fails ("Device index must not be negative" on the reporter's build; "Torch not compiled with
# CUDA enabled" on a CPU wheel). The maintainer's answer: use `.cpu()` there for CPU training.
# Here the training script, like the reporter's GPU configuration, hard-codes `.cuda()` for the
# model and the batches too. GL102 reports one finding per file, at its first hard-coded site,
# listing the others: expected here at the reported line, with lines 53 and 58 listed.
# (CPU-only crash: no fails-on-cuda header; the run trains on a GPU.)
import json

import torch
import torch.nn as nn


class util:
    @staticmethod
    def get_device_of(tensor):
        if not tensor.is_cuda:
            return -1
        return tensor.get_device()


class HSCRF_SoftDict(nn.Module):
    def __init__(self, vocab_size=50, dim=16, num_tags=4, max_span=3):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.span_scorer = nn.Linear(2 * dim, num_tags)
        self.end_token_embedding = nn.Parameter(torch.zeros(num_tags))
        self.max_span = max_span

    def forward(self, tokens, spans):
        h = self.embed(tokens)
        starts, ends = spans[..., 0], spans[..., 1]
        idx = torch.arange(tokens.size(0), device=tokens.device).unsqueeze(1)
        span_repr = torch.cat([h[idx, starts], h[idx, ends]], dim=-1)
        span_scores = self.span_scorer(span_repr)
        last = ends == tokens.size(1) - 1
        span_scores[last] += self.end_token_embedding.cuda(util.get_device_of(spans))  # expect: GL102
        return span_scores


def make_batch(n, seq_len=8, max_span=3):
    tokens = torch.randint(0, 50, (n, seq_len))
    starts = torch.randint(0, seq_len, (n, 6))
    ends = torch.clamp(starts + torch.randint(0, max_span, (n, 6)), max=seq_len - 1)
    spans = torch.stack([starts, ends], dim=-1)
    tags = (tokens.gather(1, starts) % 4)
    return tokens, spans, tags


torch.manual_seed(0)
model = HSCRF_SoftDict().cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
losses = []
for step in range(40):
    tokens, spans, tags = make_batch(16)
    tokens, spans, tags = tokens.cuda(), spans.cuda(), tags.cuda()
    scores = model(tokens, spans)
    loss = nn.functional.cross_entropy(scores.reshape(-1, 4), tags.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": "cuda"}))
