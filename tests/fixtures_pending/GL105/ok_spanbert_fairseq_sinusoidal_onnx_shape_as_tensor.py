# source: https://github.com/facebookresearch/SpanBERT (pretraining/fairseq/modules/sinusoidal_positional_embedding.py,
# SinusoidalPositionalEmbedding.forward, its ONNX-trace path; PRECISION53)
# `bsz, seq_len = torch.onnx.operators.shape_as_tensor(input)` gives 0-dim long tensors on the
# CPU whatever device `input` is on (torch._shape_as_tensor builds the sizes as a host tensor; it
# returns a CPU tensor even for a meta input), so `torch.cat((bsz.view(1), seq_len.view(1),
# torch.LongTensor([-1])))` joins three host tensors, and reshape_from_tensor_shape takes a host
# shape. GL105 has nothing to report: the engine takes shape_as_tensor's result to be on the
# input's device (P53-1).
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.onnx.operators


class SinusoidalPositionalEmbedding(nn.Module):
    def __init__(self, embedding_dim, padding_idx, init_size=64):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.onnx_trace = True
        self.register_buffer("weights", self.get_embedding(init_size, embedding_dim, padding_idx), persistent=False)

    @staticmethod
    def get_embedding(num_embeddings, embedding_dim, padding_idx):
        half = embedding_dim // 2
        scale = math.log(10000) / (half - 1)
        freqs = torch.exp(torch.arange(half, dtype=torch.float) * -scale)
        table = torch.arange(num_embeddings, dtype=torch.float).unsqueeze(1) * freqs.unsqueeze(0)
        table = torch.cat([torch.sin(table), torch.cos(table)], dim=1)
        table[padding_idx, :] = 0
        return table

    def forward(self, input):
        bsz, seq_len = torch.onnx.operators.shape_as_tensor(input)
        positions = torch.cumsum(input.ne(self.padding_idx).long(), dim=1) * input.ne(self.padding_idx).long()
        positions = positions + self.padding_idx
        if self.onnx_trace:
            flat = self.weights.detach().index_select(0, positions.view(-1))
            shape = torch.cat((bsz.view(1), seq_len.view(1), torch.LongTensor([-1])))
            return torch.onnx.operators.reshape_from_tensor_shape(flat, shape)
        return self.weights.index_select(0, positions.view(-1)).view(input.size(0), input.size(1), -1)


class Encoder(nn.Module):
    def __init__(self, vocab=20, dim=16, padding_idx=1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=padding_idx)
        self.pos = SinusoidalPositionalEmbedding(dim, padding_idx)
        self.out = nn.Linear(dim, 2)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos(tokens)
        return self.out(x.mean(dim=1))


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Encoder().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    tokens = torch.randint(2, 20, (32, 7)).to(device)
    labels = (tokens[:, 0] > 10).long().to(device)
    losses = []
    for step in range(40):
        loss = F.cross_entropy(model(tokens), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
