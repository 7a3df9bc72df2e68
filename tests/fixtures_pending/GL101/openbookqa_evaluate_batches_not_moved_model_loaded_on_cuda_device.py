# source: https://github.com/allenai/OpenBookQA/pull/5
# evaluate_predictions_qa_mc.py: `evaluate_from_args()` loads the trained model onto
# `--cuda_device` (the archive loader calls `model.cuda(cuda_device)`), then `evaluate(model, ...)`
# iterates the evaluation batches and calls `model(**batch)` without moving them ("the model is set
# up for Cuda but not the input tensors"); training moved its batches with `move_to_device`.
# fails-on-cuda: Expected all tensors to be on the same device
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)


class QAInstances(Dataset):
    def __init__(self, n=128, n_choices=4, dim=12):
        self.question = torch.randn(n, dim)
        self.choices = torch.randn(n, n_choices, dim)
        self.label = torch.randint(0, n_choices, (n,))
        self.choices[torch.arange(n), self.label] += self.question

    def __len__(self):
        return len(self.label)

    def __getitem__(self, i):
        return {"question": self.question[i], "choices": self.choices[i], "label": self.label[i]}


class MultipleChoiceQA(nn.Module):
    def __init__(self, dim=12):
        super().__init__()
        self.q_proj = nn.Linear(dim, dim)
        self.c_proj = nn.Linear(dim, dim)

    def forward(self, question, choices, label=None):
        logits = torch.einsum("bd,bkd->bk", self.q_proj(question), self.c_proj(choices))
        out = {"label_logits": logits}
        if label is not None:
            out["loss"] = F.cross_entropy(logits, label)
        return out


def move_to_device(batch, cuda_device):
    if cuda_device < 0:
        return batch
    return {k: v.cuda(cuda_device) for k, v in batch.items()}


def train(instances, cuda_device, archive_file):
    model = MultipleChoiceQA()
    if cuda_device >= 0:
        model = model.cuda(cuda_device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for epoch in range(3):
        for batch in DataLoader(instances, batch_size=16, shuffle=True):
            batch = move_to_device(batch, cuda_device)
            loss = model(**batch)["loss"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    torch.save(model.state_dict(), archive_file)
    return losses


def load_archive(archive_file, cuda_device):
    model = MultipleChoiceQA()
    model.load_state_dict(torch.load(archive_file, map_location="cpu"))
    if cuda_device >= 0:
        model.cuda(cuda_device)
    return model


def evaluate(model, instances, batch_size=32):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in DataLoader(instances, batch_size=batch_size):
            output_dict = model(**batch)  # expect: GL101
            pred = output_dict["label_logits"].argmax(dim=-1)
            correct += (pred.cpu() == batch["label"]).sum().item()
            total += len(pred)
    return {"accuracy": correct / total}


def evaluate_from_args(archive_file, cuda_device):
    model = load_archive(archive_file, cuda_device=cuda_device)
    dataset = QAInstances(n=64)
    return evaluate(model, dataset)


cuda_device = 0 if torch.cuda.is_available() else -1
with tempfile.TemporaryDirectory() as tmp:
    archive = os.path.join(tmp, "model.th")
    losses = train(QAInstances(), cuda_device, archive)
    metrics = evaluate_from_args(archive, cuda_device)
    print("metrics:", metrics)

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cuda" if cuda_device >= 0 else "cpu"}))
