# source: https://github.com/pykeen/pykeen/pull/936
# A knowledge-graph embedding loop: the negative sampler corrupts tails on the device, a Python
# set filterer marks the corrupted triples that are real facts with a boolean mask built on the
# host, and the softmax loss helper scatters the device scores back into a dense tensor made with
# `torch.zeros_like(batch_filter, ...)`: on the filter's device, the host. The assignment then mixes
# a CPU destination with CUDA scores. (#937, the fix taken, moves the filter to the scores' device.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class TransE(nn.Module):
    def __init__(self, num_entities, num_relations, dim=16):
        super().__init__()
        self.ent = nn.Embedding(num_entities, dim)
        self.rel = nn.Embedding(num_relations, dim)

    def score_hrt(self, hrt):
        h, r, t = self.ent(hrt[..., 0]), self.rel(hrt[..., 1]), self.ent(hrt[..., 2])
        return -(h + r - t).norm(dim=-1)


class BasicNegativeSampler:
    def __init__(self, num_entities, num_negs_per_pos):
        self.num_entities = num_entities
        self.num_negs_per_pos = num_negs_per_pos

    def sample(self, positive_batch):
        neg = positive_batch.unsqueeze(1).repeat(1, self.num_negs_per_pos, 1)
        neg[..., 2] = torch.randint(0, self.num_entities, neg.shape[:2], device=positive_batch.device)
        return neg


class PythonSetFilterer:
    def __init__(self, triples):
        self.triples = {tuple(t) for t in triples.tolist()}

    def __call__(self, negative_batch):
        keep = [tuple(t) not in self.triples for t in negative_batch.view(-1, 3).tolist()]
        return torch.as_tensor(keep, dtype=torch.bool).view(negative_batch.shape[:2])


def prepare_negative_scores_for_softmax(batch_filter, negative_scores, no_inf_rep=-1e4):
    negative_scores_ = torch.zeros_like(batch_filter, dtype=negative_scores.dtype)
    negative_scores_[batch_filter] = negative_scores  # expect: GL116
    negative_scores_[~batch_filter] = no_inf_rep
    return negative_scores_


def softmax_loss(positive_scores, negative_scores):
    scores = torch.cat([positive_scores.unsqueeze(1), negative_scores], dim=1)
    return -torch.log_softmax(scores, dim=1)[:, 0].mean()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
num_entities, num_relations = 30, 3
heads = torch.randint(0, num_entities, (120,))
rels = torch.randint(0, num_relations, (120,))
triples = torch.stack([heads, rels, (heads + rels + 1) % num_entities], dim=1)
model = TransE(num_entities, num_relations).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
sampler = BasicNegativeSampler(num_entities, num_negs_per_pos=4)
filterer = PythonSetFilterer(triples)
losses = []
for epoch in range(8):
    for batch in triples.split(30):
        positive_batch = batch.to(device)
        negative_batch = sampler.sample(positive_batch)
        batch_filter = filterer(negative_batch)
        negative_scores = model.score_hrt(negative_batch[batch_filter])
        negative_scores = prepare_negative_scores_for_softmax(batch_filter, negative_scores)
        loss = softmax_loss(model.score_hrt(positive_batch), negative_scores)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
