# source: https://github.com/meijieru/crnn.pytorch/issues/60
# crnn.pytorch's train.py: the recogniser is wrapped with DataParallel only when --ngpu > 1
# (`if opt.ngpu > 1: crnn = torch.nn.DataParallel(crnn, device_ids=range(opt.ngpu))`) and the
# periodic save is `torch.save(crnn.state_dict(), '{0}/netCRNN_{1}_{2}.pth'.format(...))`; a run
# with two GPUs writes "module."-prefixed keys that the demo's plain model rejects.
import argparse
import json
import os
import tempfile

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--ngpu", type=int, default=2)
parser.add_argument("--expr_dir", default=None)
opt = parser.parse_args()


class CRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.cnn = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((1, 6)))
        self.rnn = nn.GRU(8, 16, batch_first=True)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        f = self.cnn(x).squeeze(2).permute(0, 2, 1)
        out, _ = self.rnn(f)
        return self.fc(out)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
crnn = CRNN()
if opt.ngpu > 1:
    crnn = torch.nn.DataParallel(crnn, device_ids=range(min(opt.ngpu, torch.cuda.device_count())) or None)
crnn = crnn.to(device)
optimizer = torch.optim.Adam(crnn.parameters(), lr=1e-2)
images = torch.randn(64, 1, 8, 24)
labels = (images.mean(dim=(1, 2)).reshape(64, 6, 4).mean(-1) > 0).long()
expr_dir = opt.expr_dir or tempfile.mkdtemp()
history = []
for epoch in range(4):
    for i in range(0, 64, 16):
        x, y = images[i : i + 16].to(device), labels[i : i + 16].to(device)
        preds = crnn(x)
        cost = nn.functional.cross_entropy(preds.reshape(-1, 5), y.reshape(-1))
        optimizer.zero_grad()
        cost.backward()
        optimizer.step()
        history.append(cost.item())
    torch.save(crnn.state_dict(), "{0}/netCRNN_{1}_{2}.pth".format(expr_dir, epoch, i))  # expect: GL304

# demo.py: a plain model loads the last checkpoint
model = CRNN().to(device)
model.load_state_dict(torch.load("{0}/netCRNN_{1}_{2}.pth".format(expr_dir, 3, 48), map_location=device))
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:4]) / 4, "last_loss": sum(history[-4:]) / 4, "device": device.type}))
