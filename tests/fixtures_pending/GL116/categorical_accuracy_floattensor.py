# source: https://github.com/bentrevett/pytorch-pos-tagging/pull/5
# The tutorial's categorical_accuracy() divides the number of correct tags (on the GPU) by
# `torch.FloatTensor([n])`: a one-element CPU tensor (not a 0-dim scalar), so the division
# mixes devices. The PR moves that tensor to the device.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn

TAG_PAD_IDX = 0


def categorical_accuracy(preds, y, tag_pad_idx):
    max_preds = preds.argmax(dim=1, keepdim=True)
    non_pad_elements = (y != tag_pad_idx).nonzero()
    correct = max_preds[non_pad_elements].squeeze(1).eq(y[non_pad_elements])
    return correct.sum() / torch.FloatTensor([y[non_pad_elements].shape[0]])  # expect: GL116


class BiLSTMPOSTagger(nn.Module):
    def __init__(self, vocab=50, emb=16, hidden=32, tags=6):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, bidirectional=True)
        self.fc = nn.Linear(hidden * 2, tags)

    def forward(self, text):
        outputs, _ = self.lstm(self.embedding(text))
        return self.fc(outputs)


def train(model, batches, optimizer, criterion, device):
    epoch_loss, epoch_acc = [], []
    model.train()
    for text, tags in batches:
        text, tags = text.to(device), tags.to(device)
        optimizer.zero_grad()
        predictions = model(text)
        predictions = predictions.view(-1, predictions.shape[-1])
        tags = tags.reshape(-1)
        loss = criterion(predictions, tags)
        acc = categorical_accuracy(predictions, tags, TAG_PAD_IDX)
        loss.backward()
        optimizer.step()
        epoch_loss.append(loss.item())
        epoch_acc.append(acc.item())
    return epoch_loss, epoch_acc


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
text = torch.randint(1, 50, (10, 128))
tags = text % 5 + 1
batches = [(text[:, i : i + 16], tags[:, i : i + 16]) for i in range(0, 128, 16)]
model = BiLSTMPOSTagger().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss(ignore_index=TAG_PAD_IDX)
losses = []
for epoch in range(4):
    epoch_loss, _ = train(model, batches, optimizer, criterion, device)
    losses += epoch_loss
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
