# source: https://github.com/ebagdasa/federated_adaptation/issues/3
# federated_adaptation's helpers: the base `Helper.__init__` picks `self.device` (CUDA when
# available, else the CPU) and `create_model()` moves both RNN models there, but
# `TextHelper.batchify` (a staticmethod) ends with a bare `return data.cuda()`, and
# `load_data()` calls it in a list comprehension over every participant's token stream. On a
# machine without CUDA, `training.py` stops in `load_data()` with "Torch not compiled with CUDA
# enabled" before any model runs. (Corpus, dictionary and the federated rounds reduced to a
# synthetic token stream per participant and one averaging round; CPU-only crash: no
# fails-on-cuda header, the run trains where CUDA exists.)
import json
import math

import torch
import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp=16, nhid=16, nlayers=1):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input, hidden=None):
        output, hidden = self.rnn(self.encoder(input), hidden)
        return self.decoder(output), hidden


class Helper:
    def __init__(self, params):
        self.params = params
        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
        self.batch_size = params['batch_size']
        self.test_batch_size = params['test_batch_size']
        self.lr = params['lr']
        self.target_model = None
        self.local_model = None


class TextHelper(Helper):
    corpus = None

    @staticmethod
    def batchify(data, bsz):
        nbatch = data.size(0) // bsz
        data = data.narrow(0, 0, nbatch * bsz)
        data = data.view(bsz, -1).t().contiguous()
        return data.cuda()  # expect: GL102

    def get_batch(self, source, i):
        seq_len = min(self.params['bptt'], len(source) - 1 - i)
        data = source[i:i + seq_len]
        target = source[i + 1:i + 1 + seq_len].view(-1)
        return data, target

    def load_data(self, ntokens=20, participants=3, length=240):
        g = torch.Generator().manual_seed(0)
        base = torch.arange(length) % ntokens
        self.corpus = {
            'train': [(base + torch.randint(0, 2, (length,), generator=g)) % ntokens for _ in range(participants)],
            'test': (base + 1) % ntokens,
        }
        self.train_data = [self.batchify(data_chunk, self.batch_size) for data_chunk in
                           self.corpus['train']]
        self.test_data = self.batchify(self.corpus['test'], self.test_batch_size)
        self.n_tokens = ntokens

    def create_model(self):
        local_model = RNNModel(self.n_tokens)
        local_model.to(self.device)
        target_model = RNNModel(self.n_tokens)
        target_model.to(self.device)
        self.local_model = local_model
        self.target_model = target_model


def train(helper, epochs=4):
    criterion = nn.CrossEntropyLoss()
    model = helper.local_model
    model.load_state_dict(helper.target_model.state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=helper.lr, momentum=0.9)
    losses = []
    for _ in range(epochs):
        for train_data in helper.train_data:
            for i in range(0, train_data.size(0) - 1, helper.params['bptt']):
                data, targets = helper.get_batch(train_data, i)
                output, _ = model(data)
                loss = criterion(output.view(-1, helper.n_tokens), targets)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
    helper.target_model.load_state_dict(model.state_dict())
    return losses


torch.manual_seed(0)
helper = TextHelper({'batch_size': 4, 'test_batch_size': 4, 'bptt': 10, 'lr': 0.5})
helper.load_data()
helper.create_model()
losses = train(helper)
with torch.no_grad():
    data, targets = helper.get_batch(helper.test_data, 0)
    output, _ = helper.target_model(data)
    print("test ppl", round(math.exp(nn.functional.cross_entropy(output.view(-1, helper.n_tokens), targets).item()), 3))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": helper.device.type}))
