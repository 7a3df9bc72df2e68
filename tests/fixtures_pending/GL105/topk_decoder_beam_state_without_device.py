# source: https://github.com/IBM/pytorch-seq2seq/pull/123
# pytorch-seq2seq's TopKDecoder (beam search over a DecoderRNN): its forward builds the beam
# bookkeeping with host constructors, `self.pos_index = torch.LongTensor(range(batch_size)) * k`,
# `sequence_scores = torch.Tensor(batch_size * k, 1)` and the start symbols
# `torch.LongTensor([[SOS] * batch_size * k])`, none with a device. With the seq2seq model on the
# GPU, the start symbols reach the decoder's embedding on the host and the scores meet the GPU
# log-probabilities (issues #102/#120; the PR adds `.cuda()`, the review asks for a device
# instead). Training uses teacher forcing; the beam decoder runs at the end, on held-out sources.
# (A toy copy task replaces the reverse-sequence data.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class DecoderRNN(nn.Module):
    def __init__(self, vocab_size=12, hidden_size=32, sos_id=0, eos_id=1, max_length=5):
        super().__init__()
        self.output_size = vocab_size
        self.hidden_size = hidden_size
        self.sos_id, self.eos_id, self.max_length = sos_id, eos_id, max_length
        self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.rnn = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, vocab_size)

    def forward_step(self, input_var, hidden):
        output, hidden = self.rnn(self.embedding(input_var), hidden)
        return F.log_softmax(self.out(output), dim=-1), hidden

    def forward(self, targets, encoder_hidden):
        # teacher forcing: feed <sos> + targets[:, :-1]
        sos = torch.full_like(targets[:, :1], self.sos_id)
        inputs = torch.cat([sos, targets[:, :-1]], dim=1)
        log_probs, _ = self.forward_step(inputs, encoder_hidden)
        return log_probs


class EncoderRNN(nn.Module):
    def __init__(self, vocab_size=12, hidden_size=32):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.rnn = nn.GRU(hidden_size, hidden_size, batch_first=True)

    def forward(self, src):
        return self.rnn(self.embedding(src))


class TopKDecoder(nn.Module):
    def __init__(self, decoder_rnn, k):
        super().__init__()
        self.rnn = decoder_rnn
        self.k = k
        self.V = decoder_rnn.output_size
        self.SOS = decoder_rnn.sos_id

    def forward(self, encoder_hidden):
        batch_size = encoder_hidden.size(1)
        self.pos_index = (torch.LongTensor(range(batch_size)) * self.k).view(-1, 1)  # expect: GL105
        hidden = encoder_hidden.repeat_interleave(self.k, dim=1)

        sequence_scores = torch.Tensor(batch_size * self.k, 1)  # expect: GL105
        sequence_scores.fill_(-float("inf"))
        sequence_scores.index_fill_(0, torch.LongTensor([i * self.k for i in range(batch_size)]), 0.0)
        input_var = torch.transpose(torch.LongTensor([[self.SOS] * batch_size * self.k]), 0, 1)  # expect: GL105

        symbols = []
        for _ in range(self.rnn.max_length):
            log_probs, hidden = self.rnn.forward_step(input_var, hidden)
            sequence_scores = sequence_scores.repeat(1, self.V) + log_probs.squeeze(1)
            scores, candidates = sequence_scores.view(batch_size, -1).topk(self.k, dim=1)
            input_var = (candidates % self.V).view(batch_size * self.k, 1)
            sequence_scores = scores.view(batch_size * self.k, 1)
            predecessors = (candidates // self.V + self.pos_index.expand_as(candidates)).view(-1)
            hidden = hidden.index_select(1, predecessors)
            symbols.append(input_var)
        best = torch.cat(symbols, dim=1).view(batch_size, self.k, -1)[:, 0, :]
        return best, sequence_scores.view(batch_size, self.k)


class Seq2seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, src, tgt):
        _, hidden = self.encoder(src)
        return self.decoder(tgt, hidden)


def make_batch(g, n=32, length=5, vocab=12):
    src = torch.randint(2, vocab, (n, length), generator=g)
    return src, src.clone()


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
decoder = DecoderRNN()
seq2seq = Seq2seq(EncoderRNN(), decoder).to(device)
optimizer = torch.optim.Adam(seq2seq.parameters(), lr=0.01)
losses = []
for step in range(40):
    src, tgt = make_batch(g)
    src, tgt = src.to(device), tgt.to(device)
    log_probs = seq2seq(src, tgt)
    loss = F.nll_loss(log_probs.reshape(-1, decoder.output_size), tgt.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

beam = TopKDecoder(decoder, k=3)
seq2seq.eval()
with torch.no_grad():
    src, tgt = make_batch(g, n=8)
    src, tgt = src.to(device), tgt.to(device)
    _, encoder_hidden = seq2seq.encoder(src)
    best, _ = beam(encoder_hidden)
    print("beam accuracy", (best == tgt).float().mean().item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
