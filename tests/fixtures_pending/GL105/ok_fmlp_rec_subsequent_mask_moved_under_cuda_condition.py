# source: https://github.com/Woeee/FMLP-Rec/blob/51acc8cf20e0/models.py
# Hard negative (real shape, benchmarks/PRECISION39.md P39-A1): FMLP-Rec's sequential
# recommender. `main.py` sets `args.cuda_condition = torch.cuda.is_available() and not
# args.no_cuda`; the trainer moves the model with `self.model.cuda()` under the same test and
# the batches with `t.to(self.device)`. `FMLPRecModel.forward` builds the causal mask on the host
# (`torch.triu(torch.ones(attn_shape), diagonal=1)`) and moves it with
# `if self.args.cuda_condition: subsequent_mask = subsequent_mask.cuda()` before it meets the
# attention mask of the input: on a GPU run the mask is on the GPU, on a CPU run everything is
# on the host. GL105 reports the `torch.ones` factory: the engine does not read
# `self.args.cuda_condition` (an options attribute assigned from an availability test and-ed
# with `not args.no_cuda`) as an availability test, so it keeps the unmoved branch.
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class FMLPRecModel(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.item_embeddings = nn.Embedding(args.item_size, args.hidden_size, padding_idx=0)
        self.position_embeddings = nn.Embedding(args.max_seq_length, args.hidden_size)
        self.layer_norm = nn.LayerNorm(args.hidden_size, eps=1e-12)
        self.filter = nn.Linear(args.hidden_size, args.hidden_size)

    def add_position_embedding(self, sequence):
        seq_length = sequence.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long, device=sequence.device)
        position_ids = position_ids.unsqueeze(0).expand_as(sequence)
        sequence_emb = self.item_embeddings(sequence) + self.position_embeddings(position_ids)
        return self.layer_norm(sequence_emb)

    def forward(self, input_ids):
        attention_mask = (input_ids > 0).long()
        extended_attention_mask = attention_mask.unsqueeze(1)  # [B, 1, L]
        max_len = attention_mask.size(-1)
        attn_shape = (1, max_len, max_len)
        subsequent_mask = torch.triu(torch.ones(attn_shape), diagonal=1)
        subsequent_mask = (subsequent_mask == 0).long()

        if self.args.cuda_condition:
            subsequent_mask = subsequent_mask.cuda()
        extended_attention_mask = extended_attention_mask * subsequent_mask  # [B, L, L]
        extended_attention_mask = extended_attention_mask.to(dtype=next(self.parameters()).dtype)

        sequence_emb = self.add_position_embedding(input_ids)
        weights = extended_attention_mask / extended_attention_mask.sum(-1, keepdim=True).clamp(min=1.0)
        return self.filter(torch.bmm(weights, sequence_emb))


class Trainer:
    def __init__(self, model, args):
        self.model = model
        self.args = args
        self.cuda_condition = torch.cuda.is_available() and not self.args.no_cuda
        self.device = torch.device("cuda" if self.cuda_condition else "cpu")
        if self.cuda_condition:
            self.model.cuda()
        self.optim = torch.optim.Adam(self.model.parameters(), lr=0.01)

    def iteration(self, batches):
        losses = []
        for batch in batches:
            batch = tuple(t.to(self.device) for t in batch)
            input_ids, target_pos = batch
            seq_out = self.model(input_ids)[:, -1, :]
            logits = seq_out @ self.model.item_embeddings.weight.t()
            loss = F.cross_entropy(logits, target_pos)
            self.optim.zero_grad()
            loss.backward()
            self.optim.step()
            losses.append(loss.item())
        return losses


parser = argparse.ArgumentParser()
parser.add_argument("--no_cuda", action="store_true")
parser.add_argument("--hidden_size", type=int, default=16)
parser.add_argument("--max_seq_length", type=int, default=6)
args = parser.parse_args([])
args.item_size = 12
args.cuda_condition = torch.cuda.is_available() and not args.no_cuda

model = FMLPRecModel(args)
trainer = Trainer(model, args)
sequences = torch.randint(1, args.item_size, (4, args.max_seq_length))
targets = torch.randint(1, args.item_size, (4,))
batches = [(sequences, targets)] * 30
losses = trainer.iteration(batches)
print('GPULINT-TRAIN {"first_loss": %.4f, "last_loss": %.4f, "device": "%s"}'
      % (losses[0], losses[-1], trainer.device.type))
