# source: https://github.com/Holmeyoung/crnn-pytorch/blob/master/train.py
# Hard negative (PRECISION21 A1, engine-rooted). crnn-pytorch imports its model module as
# `import models.crnn as net` and builds the module-level `crnn = net_init()`. `val(net, criterion)`
# takes the model as a parameter that is also called `net`, switches it with `net.eval()` and then
# runs the global `crnn` over the validation batches; its only call is `val(crnn, criterion)`, so
# `net` IS `crnn` and the loop runs in eval mode (`train()` calls `crnn.train()` again). GL404
# reports the loop today: ScriptModel.qualname resolves the parameter `net` to the import alias
# (`crnn_models.crnn`), so `net.eval()` counts as a call on a module, not a mode switch.
import json
import os
import sys
import tempfile

import torch
import torch.nn as nn

_pkg = tempfile.mkdtemp()
os.makedirs(os.path.join(_pkg, "crnn_models"))
open(os.path.join(_pkg, "crnn_models", "__init__.py"), "w").close()
with open(os.path.join(_pkg, "crnn_models", "crnn.py"), "w") as f:
    f.write(
        "import torch.nn as nn\n"
        "class CRNN(nn.Module):\n"
        "    def __init__(self, imgH, nc, nclass, nh):\n"
        "        super().__init__()\n"
        "        self.cnn = nn.Sequential(nn.Conv2d(nc, 8, 3, 1, 1), nn.BatchNorm2d(8), nn.ReLU(True),\n"
        "                                 nn.MaxPool2d((imgH, 1)))\n"
        "        self.rnn = nn.LSTM(8, nh, bidirectional=True)\n"
        "        self.embedding = nn.Linear(nh * 2, nclass)\n"
        "    def forward(self, input):\n"
        "        conv = self.cnn(input).squeeze(2).permute(2, 0, 1)\n"
        "        recurrent, _ = self.rnn(conv)\n"
        "        return self.embedding(recurrent).log_softmax(2)\n"
    )
sys.path.insert(0, _pkg)
import crnn_models.crnn as net

torch.manual_seed(0)
imgH, nc, nclass, nh, batchSize, T = 8, 1, 5, 16, 4, 12
train_data = [(torch.randn(batchSize, nc, imgH, T), torch.randint(1, nclass, (batchSize, 3))) for _ in range(6)]
val_data = [(torch.randn(batchSize, nc, imgH, T), torch.randint(1, nclass, (batchSize, 3))) for _ in range(2)]


def net_init():
    crnn = net.CRNN(imgH, nc, nclass, nh)
    return crnn


crnn = net_init()
criterion = nn.CTCLoss(zero_infinity=True)
image = torch.FloatTensor(batchSize, nc, imgH, imgH)
text = torch.LongTensor(batchSize * 3)
length = torch.LongTensor(batchSize)
if torch.cuda.is_available():
    criterion = criterion.cuda()
    image = image.cuda()
    text = text.cuda()
    crnn = crnn.cuda()
optimizer = torch.optim.Adam(crnn.parameters(), lr=0.01)


def loadData(v, data):
    with torch.no_grad():
        v.resize_(data.size()).copy_(data)


def val(net, criterion):
    for p in crnn.parameters():
        p.requires_grad = False
    net.eval()
    total = 0.0
    for cpu_images, cpu_texts in val_data:
        batch_size = cpu_images.size(0)
        loadData(image, cpu_images)
        loadData(text, cpu_texts.reshape(-1))
        loadData(length, torch.full((batch_size,), 3, dtype=torch.long))
        preds = crnn(image)
        preds_size = torch.LongTensor([preds.size(0)] * batch_size)
        cost = criterion(preds, text, preds_size, length) / batch_size
        total += cost.item()
    return total / len(val_data)


def train(net, criterion, optimizer, batch):
    for p in crnn.parameters():
        p.requires_grad = True
    crnn.train()
    cpu_images, cpu_texts = batch
    batch_size = cpu_images.size(0)
    loadData(image, cpu_images)
    loadData(text, cpu_texts.reshape(-1))
    loadData(length, torch.full((batch_size,), 3, dtype=torch.long))
    optimizer.zero_grad()
    preds = crnn(image)
    preds_size = torch.LongTensor([preds.size(0)] * batch_size)
    cost = criterion(preds, text, preds_size, length) / batch_size
    cost.backward()
    optimizer.step()
    return cost


losses = []
for epoch in range(5):
    for i, batch in enumerate(train_data):
        cost = train(crnn, criterion, optimizer, batch)
        losses.append(cost.item())
    val_loss = val(crnn, criterion)

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": image.device.type}))
