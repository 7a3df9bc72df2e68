# source: https://github.com/hcnoh/knowledge-tracing-collection-pytorch/issues/1
# Knowledge tracing (DKT): train.py makes CUDA float tensors the default tensor type when a GPU is
# there, then splits the response sequences with `random_split`, which draws its permutation with
# the default CPU generator; the model class trains itself in `train_model()`. Pending variant: the
# training loader does not shuffle, so `random_split` is the only consumer of the CPU generator
# (G57-1: GL120 looks at shuffling loaders and samplers only).
# fails-on-cuda: Expected a 'cuda' device type for generator but found 'cpu'
import json
import random

import torch
import torch.nn as nn
from torch.nn.functional import binary_cross_entropy, one_hot
from torch.utils.data import DataLoader, Dataset, random_split

torch.manual_seed(0)
if torch.cuda.is_available():
    torch.set_default_tensor_type(torch.cuda.FloatTensor)  # expect: GL120
    device = "cuda"
else:
    device = "cpu"


class ResponseSequences(Dataset):
    def __init__(self, num_q=6, num_users=48, seq_len=12):
        rng = random.Random(1)
        self.num_q = num_q
        self.q_seqs = [[rng.randrange(num_q) for _ in range(seq_len)] for _ in range(num_users)]
        skill = [rng.random() for _ in range(num_q)]
        self.r_seqs = [[int(skill[q] > 0.5) for q in qs] for qs in self.q_seqs]

    def __len__(self):
        return len(self.q_seqs)

    def __getitem__(self, index):
        return self.q_seqs[index], self.r_seqs[index]


def collate_fn(batch):
    q = torch.tensor([b[0] for b in batch], dtype=torch.long, device=device)
    r = torch.tensor([b[1] for b in batch], dtype=torch.long, device=device)
    return q[:, :-1], r[:, :-1], q[:, 1:], r[:, 1:]


class DKT(nn.Module):
    def __init__(self, num_q, emb_size=16, hidden_size=16):
        super().__init__()
        self.num_q = num_q
        self.interaction_emb = nn.Embedding(self.num_q * 2, emb_size)
        self.lstm_layer = nn.LSTM(emb_size, hidden_size, batch_first=True)
        self.out_layer = nn.Linear(hidden_size, self.num_q)

    def forward(self, q, r):
        x = q + self.num_q * r
        h, _ = self.lstm_layer(self.interaction_emb(x))
        return torch.sigmoid(self.out_layer(h))

    def train_model(self, train_loader, num_epochs, opt):
        losses = []
        for _ in range(num_epochs):
            for q, r, qshft, rshft in train_loader:
                self.train()
                y = (self(q, r) * one_hot(qshft, self.num_q)).sum(-1)
                opt.zero_grad()
                loss = binary_cross_entropy(y, rshft.float())
                loss.backward()
                opt.step()
                losses.append(loss.item())
        return losses


def main():
    dataset = ResponseSequences()
    train_size = int(len(dataset) * 0.75)
    test_size = len(dataset) - train_size
    train_dataset, test_dataset = random_split(dataset, [train_size, test_size])

    train_loader = DataLoader(train_dataset, batch_size=8, shuffle=False, collate_fn=collate_fn)
    model = DKT(dataset.num_q).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    losses = model.train_model(train_loader, 20, opt)
    print("GPULINT-TRAIN " + json.dumps({
        "first_loss": losses[0], "last_loss": losses[-1],
        "device": next(model.parameters()).device.type,
    }))


if __name__ == "__main__":
    main()
