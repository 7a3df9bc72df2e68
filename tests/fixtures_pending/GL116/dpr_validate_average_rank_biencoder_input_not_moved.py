# source: https://github.com/facebookresearch/DPR/issues/173
# DPR's BiEncoderTrainer: the training step hands each BiEncoderBatch to _do_biencoder_fwd_pass,
# which moves every field with `move_to_device(input._asdict(), cfg.device)`. The average-rank
# validation builds the same batch with `biencoder.create_biencoder_input(...)` and calls
# `self.biencoder(q_ids, ..., ctx_ids_batch, ...)` on its host tensors directly.
# fails-on-cuda: Expected all tensors to be on the same device
import collections
import json
import random
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

BiEncoderBatch = collections.namedtuple(
    "BiEncoderBatch", ["question_ids", "question_segments", "context_ids", "ctx_segments", "is_positive"]
)


def move_to_device(sample, device):
    if torch.is_tensor(sample):
        return sample.to(device)
    if isinstance(sample, dict):
        return {key: move_to_device(value, device) for key, value in sample.items()}
    if isinstance(sample, list):
        return [move_to_device(x, device) for x in sample]
    return sample


class Tensorizer:
    def __init__(self, max_length=8, pad_id=0):
        self.max_length, self.pad_id = max_length, pad_id

    def text_to_tensor(self, token_ids):
        ids = token_ids[: self.max_length]
        return torch.tensor(ids + [self.pad_id] * (self.max_length - len(ids)))

    def get_attn_mask(self, tokens):
        return tokens != self.pad_id


class Encoder(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.proj = nn.Linear(dim, dim)

    def forward(self, ids, segments, attn_mask):
        h = self.emb(ids) * attn_mask.unsqueeze(-1)
        return self.proj(h.sum(1) / attn_mask.sum(1, keepdim=True).clamp(min=1))


class BiEncoder(nn.Module):
    def __init__(self, vocab=50, dim=16):
        super().__init__()
        self.question_model = Encoder(vocab, dim)
        self.ctx_model = Encoder(vocab, dim)

    def forward(self, q_ids, q_segments, q_attn_mask, ctx_ids, ctx_segments, ctx_attn_mask):
        q_out = self.question_model(q_ids, q_segments, q_attn_mask) if q_ids is not None else None
        return q_out, self.ctx_model(ctx_ids, ctx_segments, ctx_attn_mask)

    @staticmethod
    def create_biencoder_input(samples, tensorizer):
        questions, ctxs, positives = [], [], []
        for sample in samples:
            positives.append(len(ctxs))
            ctxs.extend([sample["positive"], *sample["negatives"]])
            questions.append(sample["question"])
        ctx_tensor = torch.stack([tensorizer.text_to_tensor(c) for c in ctxs])
        q_tensor = torch.stack([tensorizer.text_to_tensor(q) for q in questions])
        return BiEncoderBatch(q_tensor, torch.zeros_like(q_tensor), ctx_tensor, torch.zeros_like(ctx_tensor), positives)


def _do_biencoder_fwd_pass(model, input, tensorizer, cfg):
    input = BiEncoderBatch(**move_to_device(input._asdict(), cfg.device))
    q_attn_mask = tensorizer.get_attn_mask(input.question_ids)
    ctx_attn_mask = tensorizer.get_attn_mask(input.context_ids)
    q_vec, ctx_vec = model(input.question_ids, input.question_segments, q_attn_mask,
                           input.context_ids, input.ctx_segments, ctx_attn_mask)
    scores = q_vec @ ctx_vec.t()
    target = torch.tensor(input.is_positive, device=scores.device)
    return F.cross_entropy(scores, target)


def make_samples(n, rng):
    samples = []
    for _ in range(n):
        topic = rng.randrange(1, 10)
        question = [topic * 5 + rng.randrange(5) for _ in range(4)]
        positive = [topic * 5 + rng.randrange(5) for _ in range(6)]
        negatives = [[rng.randrange(1, 50) for _ in range(6)] for _ in range(2)]
        samples.append({"question": question, "positive": positive, "negatives": negatives})
    return samples


class BiEncoderTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.tensorizer = Tensorizer()
        self.biencoder = BiEncoder()
        self.biencoder.to(cfg.device)
        self.optimizer = torch.optim.Adam(self.biencoder.parameters(), lr=1e-2)
        rng = random.Random(0)
        self.train_samples = make_samples(64, rng)
        self.dev_samples = make_samples(16, rng)

    def run_train(self):
        losses = []
        for epoch in range(self.cfg.num_train_epochs):
            losses.extend(self._train_epoch())
            self.validate_average_rank()
        return losses

    def _train_epoch(self):
        self.biencoder.train()
        losses = []
        for i in range(0, len(self.train_samples), self.cfg.batch_size):
            samples_batch = self.train_samples[i : i + self.cfg.batch_size]
            biencoder_batch = BiEncoder.create_biencoder_input(samples_batch, self.tensorizer)
            loss = _do_biencoder_fwd_pass(self.biencoder, biencoder_batch, self.tensorizer, self.cfg)
            loss.backward()
            self.optimizer.step()
            self.biencoder.zero_grad()
            losses.append(loss.item())
        return losses

    def validate_average_rank(self):
        self.biencoder.eval()
        q_represenations, ctx_represenations, positive_idx_per_question = [], [], []
        for i in range(0, len(self.dev_samples), self.cfg.batch_size):
            samples_batch = self.dev_samples[i : i + self.cfg.batch_size]
            biencoder_input = BiEncoder.create_biencoder_input(samples_batch, self.tensorizer)
            total_ctxs = len(ctx_represenations)
            q_ids, q_segments = biencoder_input.question_ids, biencoder_input.question_segments
            ctx_ids, ctx_segments = biencoder_input.context_ids, biencoder_input.ctx_segments
            with torch.no_grad():
                q_dense, ctx_dense = self.biencoder(  # expect: GL116
                    q_ids, q_segments, self.tensorizer.get_attn_mask(q_ids),
                    ctx_ids, ctx_segments, self.tensorizer.get_attn_mask(ctx_ids),
                )
            q_represenations.extend(q_dense.cpu().split(1, dim=0))
            ctx_represenations.extend(ctx_dense.cpu().split(1, dim=0))
            positive_idx_per_question.extend([total_ctxs + v for v in biencoder_input.is_positive])
        scores = torch.cat(q_represenations) @ torch.cat(ctx_represenations).t()
        _, indices = torch.sort(scores, dim=1, descending=True)
        rank = sum((indices[i] == idx).nonzero().item() for i, idx in enumerate(positive_idx_per_question))
        return rank / len(positive_idx_per_question)


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = SimpleNamespace(device=device, batch_size=8, num_train_epochs=6)
    losses = BiEncoderTrainer(cfg).run_train()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
