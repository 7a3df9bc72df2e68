# source: https://github.com/asappresearch/dynamic-classification/issues/1
# dynamic-classification's train.py: the episodes of the sampler are moved with
# `batch = tuple(t.to(device) for t in batch)` (device = 'cuda' when available) and passed to
# `model(*batch)`, but the PrototypicalTextClassifier is never moved: on a GPU the first episode
# fails in its embedding lookup ("Expected object of device type cuda but got device type cpu for
# argument #1 'self' in call to _th_index_select"; today's PyTorch words it "Expected all tensors
# to be on the same device"). (flambe's TabularDataset replaced by synthetic token ids, the SRU
# encoder by a GRU; samplers, training and evaluation loops follow train.py.)
# fails-on-cuda: Expected all tensors to be on the same device
import argparse
import json

import torch
import torch.nn as nn
from torch.nn.utils.clip_grad import clip_grad_norm_


class EpisodicSampler:
    def __init__(self, texts, labels, n_support, n_query, n_episodes, seed=0):
        self.texts, self.labels = texts, labels
        self.n_support, self.n_query, self.n_episodes = n_support, n_query, n_episodes
        self.g = torch.Generator().manual_seed(seed)

    def __iter__(self):
        for _ in range(self.n_episodes):
            perm = torch.randperm(len(self.texts), generator=self.g)
            support_idx = torch.cat([perm[self.labels[perm] == c][: self.n_support] for c in range(2)])
            query_idx = perm[: self.n_query]
            yield (self.texts[query_idx], self.labels[query_idx],
                   self.texts[support_idx], self.labels[support_idx])


class BaseSampler:
    def __init__(self, texts, labels, batch_size):
        self.texts, self.labels, self.batch_size = texts, labels, batch_size

    def __iter__(self):
        for i in range(0, len(self.texts), self.batch_size):
            yield self.texts[i:i + self.batch_size], self.labels[i:i + self.batch_size]


class PrototypicalTextClassifier(nn.Module):
    def __init__(self, vocab_size, embedding_dim=16, hidden_dim=16):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.rnn = nn.GRU(embedding_dim, hidden_dim, batch_first=True)

    def embedder(self, text):
        out, _ = self.rnn(self.embedding(text))
        return out.mean(dim=1)

    def compute_prototypes(self, encodings, labels):
        return torch.stack([encodings[labels == c].mean(dim=0) for c in range(2)])

    def forward(self, query, query_label, support=None, support_label=None, prototypes=None):
        if prototypes is None:
            prototypes = self.compute_prototypes(self.embedder(support), support_label)
        dist = torch.cdist(self.embedder(query), prototypes)
        return -dist, query_label


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (n,), generator=g)
    texts = torch.randint(2, 20, (n, 6), generator=g)
    texts[:, 0] = labels
    return texts, labels


def train(args):
    train_texts, train_labels = make_data(64, 0)
    val_texts, val_labels = make_data(32, 1)
    train_sampler = EpisodicSampler(train_texts, train_labels, n_support=4, n_query=16, n_episodes=8)
    train_eval_sampler = BaseSampler(train_texts, train_labels, batch_size=32)
    val_sampler = BaseSampler(val_texts, val_labels, batch_size=32)

    if args.device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    else:
        device = args.device

    model = PrototypicalTextClassifier(vocab_size=20)
    loss_fn = nn.CrossEntropyLoss()
    parameters = (p for p in model.parameters() if p.requires_grad)
    optimizer = torch.optim.Adam(parameters, lr=args.learning_rate)
    losses = []
    for epoch in range(args.num_epochs):
        model.train()
        with torch.enable_grad():
            for batch in train_sampler:
                optimizer.zero_grad()
                batch = tuple(t.to(device) for t in batch)
                pred, target = model(*batch)  # expect: GL112
                loss = loss_fn(pred, target)
                loss.backward()
                if args.max_grad_norm is not None:
                    clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                losses.append(loss.item())
            optimizer.zero_grad()

        model.eval()
        with torch.no_grad():
            encodings, labels = [], []
            for text, label in train_eval_sampler:
                text_encoding = model.embedder(text)
                labels.append(label.cpu())
                encodings.append(text_encoding.cpu())
            encodings = torch.cat(encodings, dim=0)
            labels = torch.cat(labels, dim=0)
            prototypes = model.compute_prototypes(encodings, labels).to(device)
            _preds, _targets = [], []
            for batch in val_sampler:
                batch = tuple(t.to(device) for t in batch)
                pred, target = model(*batch, prototypes=prototypes)  # (the same unmoved model: GL112 reports it once, at its first call)
                _preds.append(pred.cpu())
                _targets.append(target.cpu())
            preds = torch.cat(_preds, dim=0)
            targets = torch.cat(_targets, dim=0)
            val_metric = (preds.argmax(dim=1) == targets).float().mean().item()
        print(f"Validation accuracy: {val_metric}")
    return losses, device


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=str, default=None)
    parser.add_argument("--num_epochs", type=int, default=4)
    parser.add_argument("--learning_rate", type=float, default=0.01)
    parser.add_argument("--max_grad_norm", type=float, default=None)
    args = parser.parse_args()
    torch.manual_seed(0)
    losses, device = train(args)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(device).type}))
