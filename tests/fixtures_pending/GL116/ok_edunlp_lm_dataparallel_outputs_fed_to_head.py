# source: https://github.com/bigdata-ustc/EduNLP/pull/110
# Pending hard negative (GL116 false positive at `head(tokens)`, line 86): the same script as
# tests/fixtures/GL105/ok_edunlp_lm_h0_on_input_device.py, the PR's fix (`torch.zeros(...)
# .to(seq_idx.device)` in `LM.forward`). EduNLP's `RNNModel` puts its `LM` module on the device
# with the helper `set_device()` (DataParallel + `.cuda()` when the device is a GPU), which
# scatters the CPU index tensors `__call__` passes to the GPU: the token states come back on the
# GPU and meet `head` there. gpulint reads the module call's result as a CPU tensor (its input is).
import json

import torch
from torch import nn
from torch.nn import DataParallel


def set_device(_net, ctx, *args, **kwargs):
    """code from longling v1.3.26"""
    if ctx == "cpu":
        return _net.cpu()
    elif ctx in ["cuda", "gpu"]:
        if not isinstance(_net, DataParallel):
            _net = DataParallel(_net)
        return _net.cuda()
    raise TypeError("the equipment should be 'cpu', 'cuda' or 'gpu', now is %s" % ctx)


class LM(nn.Module):
    def __init__(self, rnn_type, vocab_size, embedding_dim, hidden_size, num_layers=1, bidirectional=False):
        super(LM, self).__init__()
        rnn_type = rnn_type.upper()
        self.embedding = torch.nn.Embedding(vocab_size, embedding_dim)
        self.c = False
        if rnn_type == "RNN":
            self.rnn = torch.nn.RNN(embedding_dim, hidden_size, num_layers, bidirectional=bidirectional, batch_first=True)
        elif rnn_type == "LSTM":
            self.rnn = torch.nn.LSTM(embedding_dim, hidden_size, num_layers, bidirectional=bidirectional, batch_first=True)
            self.c = True
        else:
            raise TypeError("Unknown rnn_type %s" % rnn_type)
        self.num_layers = num_layers
        self.bidirectional = bidirectional
        if bidirectional is True:
            self.num_layers *= 2
        self.hidden_size = hidden_size

    def forward(self, seq_idx):
        seq = self.embedding(seq_idx)
        h0 = torch.zeros(self.num_layers, seq.shape[0], self.hidden_size).to(seq_idx.device)
        if self.c is True:
            c0 = torch.zeros(self.num_layers, seq.shape[0], self.hidden_size).to(seq_idx.device)
            output, (hn, _) = self.rnn(seq, (h0, c0))
        else:
            output, hn = self.rnn(seq, h0)
        return output, hn


class RNNModel(object):
    def __init__(self, rnn_type, hidden_size, vocab_size, embedding_dim, device=None):
        self.rnn = LM(rnn_type, vocab_size, embedding_dim, hidden_size=hidden_size)
        self.hidden_size = hidden_size
        if device is not None:
            self.set_device(device)

    def __call__(self, seq_idx):
        tokens, item = self.rnn(torch.LongTensor(seq_idx))
        return tokens, item

    def set_device(self, device):
        self.rnn = set_device(self.rnn, device)

    def parameters(self):
        return self.rnn.parameters()


def main():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    vocab = 12
    model = RNNModel("LSTM", hidden_size=16, vocab_size=vocab, embedding_dim=8, device=device)
    head = nn.Linear(16, vocab).to(device)
    optimizer = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=0.02)
    seqs = [[(s + i) % vocab for i in range(6)] for s in range(8)]
    losses = []
    for step in range(30):
        tokens, _ = model([q[:-1] for q in seqs])
        target = torch.LongTensor([q[1:] for q in seqs]).to(device)
        loss = nn.functional.cross_entropy(head(tokens).reshape(-1, vocab), target.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:3]) / 3, "last_loss": sum(losses[-3:]) / 3, "device": torch.device(device).type}))


if __name__ == "__main__":
    main()
