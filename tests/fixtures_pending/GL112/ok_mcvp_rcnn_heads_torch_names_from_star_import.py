# Pending hard negative (real shape: PacktPublishing/Modern-Computer-Vision-with-PyTorch, commit
# 42963ad37c73, Chapter07/Training_RCNN.ipynb cells 2, 11-16): the notebook gets `torch`, `nn`
# and the rest from `from torch_snippets import *` (a helper package that re-exports them) and
# never imports torch itself. A frozen backbone is moved with `vgg_backbone.eval().to(device)`,
# `RCNN(nn.Module)` adds two heads, and `rcnn = RCNN().to(device)` moves the whole model before
# training on batches moved with `.to(device)`. GL112 reports both heads as never moved: with the
# torch names unbound the engine does not see `RCNN().to(device)` move them. (The same star import
# makes GL403 report the greedy decoding loop of `DecoderRNN.predict` in Chapter15/
# Image_captioning.ipynb, a method of an nn.Module whose only caller runs under `@torch.no_grad()`.)
# torch_snippets is not installed here: an equivalent helper module is written to a temporary
# folder and star-imported.
import json
import os
import sys
import tempfile

pkg = tempfile.mkdtemp()
with open(os.path.join(pkg, "snippets_demo.py"), "w") as f:
    f.write("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n")
sys.path.insert(0, pkg)
from snippets_demo import *  # noqa: E402,F403

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"

vgg_backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten())
for param in vgg_backbone.parameters():
    param.requires_grad = False
vgg_backbone.eval().to(device)
label2target = {"background": 0, "bus": 1, "truck": 2}


class RCNN(nn.Module):
    def __init__(self):
        super().__init__()
        feature_dim = 128
        self.backbone = vgg_backbone
        self.cls_score = nn.Linear(feature_dim, len(label2target))
        self.bbox = nn.Sequential(nn.Linear(feature_dim, 32), nn.ReLU(), nn.Linear(32, 4), nn.Tanh())
        self.cel = nn.CrossEntropyLoss()
        self.sl1 = nn.L1Loss()

    def forward(self, input):
        feat = self.backbone(input)
        cls_score = self.cls_score(feat)
        bbox = self.bbox(feat)
        return cls_score, bbox

    def calc_loss(self, probs, _deltas, labels, deltas):
        detection_loss = self.cel(probs, labels)
        ixs, = torch.where(labels != 0)
        regression_loss = self.sl1(_deltas[ixs], deltas[ixs]) if len(ixs) > 0 else 0
        return detection_loss + 10.0 * regression_loss


def train_batch(inputs, model, optimizer, criterion):
    input, clss, deltas = inputs
    model.train()
    optimizer.zero_grad()
    _clss, _deltas = model(input)
    loss = criterion(_clss, _deltas, clss, deltas)
    loss.backward()
    optimizer.step()
    return loss.detach()


train_loader = []
for _ in range(4):
    imgs = torch.randn(8, 3, 16, 16)
    clss = torch.randint(0, 3, (8,))
    imgs[:, 0] += clss[:, None, None].float()
    deltas = torch.rand(8, 4) * 0.2
    train_loader.append((imgs.to(device), clss.to(device), deltas.to(device)))

rcnn = RCNN().to(device)
criterion = rcnn.calc_loss
optimizer = torch.optim.SGD(rcnn.parameters(), lr=1e-2)
losses = []
for epoch in range(5):
    for inputs in train_loader:
        losses.append(train_batch(inputs, rcnn, optimizer, criterion).item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(device).type}))
