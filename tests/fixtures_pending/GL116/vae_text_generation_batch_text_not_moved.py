# source: https://github.com/rohithreddy024/VAE-Text-Generation/pull/3
# VAE-Text-Generation's main.py: helper_functions.get_cuda(x) moves a tensor or module with
# `.cuda()` when CUDA is available; the script moves the VAE with `vae = get_cuda(vae)` and
# generate_sentences() routes every tensor it makes through get_cuda(), but training() hands
# `x = batch.text` from the (CPU) torchtext iterator straight to create_generator_input() and
# train_batch(), which calls `vae(x, G_inp, None, None)`: the embedding lookup of the CUDA model
# fails on the CPU token ids. The PR wraps the batch in get_cuda().
# (torchtext's BucketIterator replaced by a small iterator of Batch objects with a `.text` field;
# GloVe initialisation and the highway layers dropped; synthetic token sequences.)
# fails-on-cuda: Expected all tensors to be on the same device
import argparse
import json
import math

import numpy as np
import torch as T
import torch.nn as nn
import torch.nn.functional as F


def get_cuda(tensor):
    if T.cuda.is_available():
        tensor = tensor.cuda()
    return tensor


parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=32)
parser.add_argument("--n_vocab", type=int, default=24)
parser.add_argument("--epochs", type=int, default=6)
parser.add_argument("--n_hidden_G", type=int, default=32)
parser.add_argument("--n_layers_G", type=int, default=1)
parser.add_argument("--n_hidden_E", type=int, default=32)
parser.add_argument("--n_z", type=int, default=8)
parser.add_argument("--word_dropout", type=float, default=0.3)
parser.add_argument("--rec_coef", type=float, default=7)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--n_embed", type=int, default=16)
opt = parser.parse_args()

PAD, SOS, EOS, UNK = 0, 1, 2, 3


class Batch:
    def __init__(self, text):
        self.text = text


class BucketIterator:
    def __init__(self, sequences, batch_size, shuffle):
        self.sequences = sequences
        self.batch_size = batch_size
        self.shuffle = shuffle

    def __iter__(self):
        order = T.randperm(len(self.sequences)) if self.shuffle else T.arange(len(self.sequences))
        for i in range(0, len(order), self.batch_size):
            yield Batch(self.sequences[order[i:i + self.batch_size]])


def get_iterators(opt):
    g = T.Generator().manual_seed(0)
    starts = T.randint(4, opt.n_vocab - 6, (160, 1), generator=g)
    body = starts + T.arange(6)
    seqs = T.cat([T.full((160, 1), SOS), body, T.full((160, 1), EOS)], dim=1)
    return BucketIterator(seqs[:128], opt.batch_size, True), BucketIterator(seqs[128:], opt.batch_size, False)


class VAE(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.embedding = nn.Embedding(opt.n_vocab, opt.n_embed)
        self.encoder = nn.LSTM(opt.n_embed, opt.n_hidden_E, batch_first=True)
        self.hidden_to_mu = nn.Linear(opt.n_hidden_E, opt.n_z)
        self.hidden_to_logvar = nn.Linear(opt.n_hidden_E, opt.n_z)
        self.generator = nn.LSTM(opt.n_embed + opt.n_z, opt.n_hidden_G, opt.n_layers_G, batch_first=True)
        self.output = nn.Linear(opt.n_hidden_G, opt.n_vocab)

    def forward(self, x, G_inp, z=None, G_hidden=None):
        kld = None
        if z is None:
            _, (h, _) = self.encoder(self.embedding(x))
            mu, logvar = self.hidden_to_mu(h[-1]), self.hidden_to_logvar(h[-1])
            z = mu + T.randn_like(mu) * T.exp(0.5 * logvar)
            kld = -0.5 * T.sum(logvar - mu.pow(2) - logvar.exp() + 1, 1).mean()
        G_emb = self.embedding(G_inp)
        z_rep = z.unsqueeze(1).expand(-1, G_emb.size(1), -1)
        out, G_hidden = self.generator(T.cat([G_emb, z_rep], dim=2), G_hidden)
        return self.output(out), G_hidden, kld


T.manual_seed(0)
np.random.seed(0)
train_iter, val_iter = get_iterators(opt)
vae = VAE(opt)
vae = get_cuda(vae)
trainer_vae = T.optim.Adam(vae.parameters(), lr=opt.lr)


def create_generator_input(x, train):
    G_inp = x[:, 0:x.size(1) - 1].clone()
    if train == False:
        return G_inp
    r = np.random.rand(G_inp.size(0), G_inp.size(1))
    for i in range(len(G_inp)):
        for j in range(1, G_inp.size(1)):
            if r[i, j] < opt.word_dropout and G_inp[i, j] not in [PAD, EOS]:
                G_inp[i, j] = UNK
    return G_inp


def train_batch(x, G_inp, step, train=True):
    logit, _, kld = vae(x, G_inp, None, None)  # expect: GL116
    logit = logit.view(-1, opt.n_vocab)
    x = x[:, 1:x.size(1)]
    x = x.contiguous().view(-1)
    rec_loss = F.cross_entropy(logit, x)
    kld_coef = (math.tanh((step - 60) / 20) + 1) / 2
    loss = opt.rec_coef * rec_loss + kld_coef * kld
    if train == True:
        trainer_vae.zero_grad()
        loss.backward()
        trainer_vae.step()
    return rec_loss.item(), kld.item()


def training():
    step = 0
    losses = []
    for epoch in range(opt.epochs):
        vae.train()
        train_rec_loss = []
        for batch in train_iter:
            x = batch.text
            G_inp = create_generator_input(x, train=True)
            rec_loss, kl_loss = train_batch(x, G_inp, step, train=True)
            train_rec_loss.append(rec_loss)
            losses.append(rec_loss)
            step += 1
        vae.eval()
        valid_rec_loss = []
        for batch in val_iter:
            x = batch.text
            G_inp = create_generator_input(x, train=False)
            with T.autograd.no_grad():
                rec_loss, kl_loss = train_batch(x, G_inp, step, train=False)
            valid_rec_loss.append(rec_loss)
        print("No.", epoch, "T_rec:", "%.2f" % np.mean(train_rec_loss), "V_rec:", "%.2f" % np.mean(valid_rec_loss))
    return losses


if __name__ == "__main__":
    losses = training()
    device = next(vae.parameters()).device
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
