# source: https://github.com/huggingface/sentence-transformers/issues/26 (also #27; fix: commit 78ccd81a)
# sentence-transformers 0.2.x: `LabelAccuracyEvaluator(dataloader, softmax_model=...)` keeps its own
# `self.device`, moves every batch there with `batch_to_device(batch, self.device)` and calls the
# SoftmaxLoss module it was handed. `fit()` moves its training losses to the device, but a
# SoftmaxLoss built only for evaluation (the reporter swapped it into the STS evaluation script)
# never is: its classifier layer stays on the host while the encoder (which moves itself in its
# constructor, as SentenceTransformer does) and the batch are on the GPU. The fix moved the
# softmax model in the evaluator's constructor (`self.softmax_model.to(self.device)`).
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Encoder(nn.Module):
    """A bag-of-tokens sentence encoder that places itself on a device when built."""

    def __init__(self, vocab=50, dim=16, device=None):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.proj = nn.Linear(dim, dim)
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.to(device)

    def forward(self, features):
        return {"sentence_embedding": torch.tanh(self.proj(self.emb(features["input_ids"])))}


class SoftmaxLoss(nn.Module):
    def __init__(self, model, sentence_embedding_dimension, num_labels):
        super().__init__()
        self.model = model
        self.classifier = nn.Linear(3 * sentence_embedding_dimension, num_labels)

    def forward(self, sentence_features, labels):
        reps = [self.model(f)["sentence_embedding"] for f in sentence_features]
        rep_a, rep_b = reps
        output = self.classifier(torch.cat([rep_a, rep_b, torch.abs(rep_a - rep_b)], 1))
        if labels is not None:
            return nn.CrossEntropyLoss()(output, labels.view(-1))
        return reps, output


class PairDataset(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.a = torch.randint(0, 50, (n, 6), generator=g)
        self.b = torch.randint(0, 50, (n, 6), generator=g)
        # label: 0 if the two sentences share their first token, 1 if they share none, else 2
        same = (self.a[:, 0] == self.b[:, 0]).long()
        overlap = (self.a.unsqueeze(2) == self.b.unsqueeze(1)).any(2).any(1).long()
        self.labels = torch.where(same == 1, torch.zeros_like(same), 2 - overlap)
        self.b[self.labels == 0, 0] = self.a[self.labels == 0, 0]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.a[i], self.b[i], self.labels[i]


def collate(items):
    a, b, y = zip(*items)
    return {"features": [{"input_ids": torch.stack(a)}, {"input_ids": torch.stack(b)}], "labels": torch.stack(y)}


def batch_to_device(batch, target_device):
    features = batch["features"]
    for idx in range(len(features)):
        for name in features[idx]:
            features[idx][name] = features[idx][name].to(target_device)
    labels = batch["labels"].to(target_device)
    return features, labels


class LabelAccuracyEvaluator:
    def __init__(self, dataloader, name="", softmax_model=None):
        self.dataloader = dataloader
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.name = name
        self.softmax_model = softmax_model

    def __call__(self, model):
        model.eval()
        total = 0
        correct = 0
        for batch in self.dataloader:
            features, label_ids = batch_to_device(batch, self.device)
            with torch.no_grad():
                _, prediction = self.softmax_model(features, labels=None)  # expect: GL112
            total += prediction.size(0)
            correct += torch.argmax(prediction, dim=1).eq(label_ids).sum().item()
        return correct / total


def fit(model, loss_model, dataloader, epochs):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loss_model.to(device)
    optimizer = torch.optim.Adam(loss_model.parameters(), lr=1e-2)
    losses = []
    for _ in range(epochs):
        loss_model.train()
        for batch in dataloader:
            features, labels = batch_to_device(batch, model.device)
            loss = loss_model(features, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


torch.manual_seed(0)
train_loader = DataLoader(PairDataset(256, 0), batch_size=32, shuffle=True, collate_fn=collate)
model = Encoder()
train_loss = SoftmaxLoss(model, 16, 3)
losses = fit(model, train_loss, train_loader, epochs=4)

# the evaluation script: a fresh encoder and softmax head with the trained weights
eval_model = Encoder()
eval_model.load_state_dict(model.state_dict())
eval_loss = SoftmaxLoss(eval_model, 16, 3)
eval_loss.classifier.load_state_dict(train_loss.classifier.state_dict())
dev_loader = DataLoader(PairDataset(64, 1), batch_size=32, collate_fn=collate)
evaluator = LabelAccuracyEvaluator(dev_loader, softmax_model=eval_loss)
accuracy = evaluator(eval_model)
print(f"dev accuracy {accuracy:.3f}")
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": model.device.type}))
