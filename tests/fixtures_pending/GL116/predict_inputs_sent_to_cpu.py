# source: https://github.com/InseeFrLab/torchTextClassifiers/pull/94
# The text classifier wrapper trains its model on self.device, but predict() builds the token
# tensors and sends them to "cpu" ("align input tensors to model device in predict instead of
# cpu"), so prediction after GPU training feeds CPU ids to the GPU embedding.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class FastTextModule(nn.Module):
    def __init__(self, vocab=32, dim=16, classes=2):
        super().__init__()
        self.embeddings = nn.EmbeddingBag(vocab, dim)
        self.fc = nn.Linear(dim, classes)

    def forward(self, input_ids):
        return self.fc(self.embeddings(input_ids))


class TextClassifier:
    def __init__(self, device):
        self.device = device
        self.model = FastTextModule().to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-2)

    def tokenize(self, texts):
        return [[ord(c) % 32 for c in t[:8].ljust(8)] for t in texts]

    def train(self, texts, labels, epochs):
        ids = torch.tensor(self.tokenize(texts)).to(self.device)
        y = torch.tensor(labels).to(self.device)
        losses = []
        for epoch in range(epochs):
            loss = nn.functional.cross_entropy(self.model(ids), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())
        return losses

    def predict(self, texts):
        input_ids = torch.tensor(self.tokenize(texts)).to("cpu")
        with torch.no_grad():
            logits = self.model(input_ids)  # expect: GL116
        return logits.argmax(dim=1).tolist()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
texts = ["good movie", "great film", "bad movie", "awful film", "good plot", "bad plot"] * 8
labels = [1, 1, 0, 0, 1, 0] * 8
clf = TextClassifier(device)
losses = clf.train(texts, labels, 40)
print(clf.predict(["good film", "awful movie"]))
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
