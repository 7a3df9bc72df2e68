# fixture: static (written for a machine with two GPUs: the run uses gpu_ids=[1])
# source: https://github.com/tencent-ailab/DrugOOD/issues/6
# DrugOOD's backbones start their forward with `input = move_to_device(input)`, a shared helper
# whose device defaults to an index-less `torch.device("cuda")`: the batch goes to the current
# device (GPU 0) whatever GPU the runner put the model on, so a run with gpu_ids=[1] fails with
# "Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0".
import torch
import torch.nn as nn
import torch.nn.functional as F


def move_to_device(obj, device=None):
    if device is None:
        device = torch.device("cuda")  # expect: GL102, GL113
    if isinstance(obj, dict):
        return {k: move_to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [move_to_device(v, device) for v in obj]
    if isinstance(obj, (int, float)):
        return obj
    return obj.to(device)


class GIN(nn.Module):
    def __init__(self, in_dim, emb_dim, num_layers=3):
        super().__init__()
        self.node_embedding = nn.Linear(in_dim, emb_dim)
        self.layers = nn.ModuleList([nn.Linear(emb_dim, emb_dim) for _ in range(num_layers)])

    def forward(self, input):
        input = move_to_device(input)
        h = self.node_embedding(input["x"])
        for layer in self.layers:
            h = F.relu(layer(h + input["adj"] @ h))
        return h.mean(dim=1)


class Classifier(nn.Module):
    def __init__(self, backbone, emb_dim, n_classes):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(emb_dim, n_classes)

    def forward(self, input, gt_label):
        logits = self.head(self.backbone(input))
        return F.cross_entropy(logits, gt_label.to(logits.device))


def train_model(model, batches, gpu_ids, steps=20):
    device = torch.device(f"cuda:{gpu_ids[0]}")
    model = model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(steps):
        input, gt_label = batches[step % len(batches)]
        loss = model(input, gt_label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


batches = [
    ({"x": torch.randn(4, 9, 16), "adj": (torch.rand(4, 9, 9) > 0.7).float()}, torch.randint(0, 2, (4,)))
    for _ in range(4)
]
train_model(Classifier(GIN(16, 32), 32, 2), batches, gpu_ids=[1])
