# source: https://github.com/huggingface/transformers/blob/v2.0.0/examples/run_glue.py
# Hard negative: the BERT-fine-tuning loop re-binds the loop variable to the moved batch
# (`batch = tuple(t.to(device) for t in batch)`) and unpacks it into a dict of inputs.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, RandomSampler, TensorDataset


class TinyClassifier(nn.Module):
    def __init__(self, vocab=50, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.cls = nn.Linear(dim, 2)

    def forward(self, input_ids, attention_mask, labels):
        h = (self.emb(input_ids) * attention_mask.unsqueeze(-1)).sum(1) / attention_mask.sum(1, keepdim=True)
        logits = self.cls(h)
        return nn.functional.cross_entropy(logits, labels), logits


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ids = torch.randint(1, 50, (320, 12))
mask = torch.ones_like(ids)
labels = (ids[:, 0] > 25).long()
dataset = TensorDataset(ids, mask, labels)
train_dataloader = DataLoader(dataset, sampler=RandomSampler(dataset), batch_size=32)
model = TinyClassifier()
model.to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.02)
losses = []
for epoch in range(3):
    for step, batch in enumerate(train_dataloader):
        model.train()
        batch = tuple(t.to(device) for t in batch)
        inputs = {"input_ids": batch[0], "attention_mask": batch[1], "labels": batch[2]}
        outputs = model(**inputs)
        loss = outputs[0]
        loss.backward()
        optimizer.step()
        model.zero_grad()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
