# source: https://github.com/dbolya/yolact/issues/664
# yolact's train.py makes CUDA float tensors the default when --cuda is on
# (`torch.set_default_tensor_type('torch.cuda.FloatTensor')`, the pre-2.0 spelling of
# set_default_device) and builds its DataLoader with shuffle=True; the RandomSampler's CPU
# generator then meets a randperm made on the default CUDA device ("Expected a 'cuda' device type
# for generator but found 'cpu'"; the thread's workaround is shuffle=False).
# fails-on-cuda: Expected a 'cuda' device type for generator but found 'cpu'
import argparse
import json

import torch
import torch.nn as nn
import torch.utils.data as data

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", default=True, type=bool)
parser.add_argument("--batch_size", default=16, type=int)
args = parser.parse_args([])

if torch.cuda.is_available():
    if args.cuda:
        torch.set_default_tensor_type("torch.cuda.FloatTensor")  # expect: GL120
    if not args.cuda:
        torch.set_default_tensor_type("torch.FloatTensor")
else:
    torch.set_default_tensor_type("torch.FloatTensor")


def detection_collate(batch):
    imgs = torch.stack([b[0] for b in batch])
    targets = torch.stack([b[1] for b in batch])
    return imgs, targets


def train():
    torch.manual_seed(0)
    images = torch.randn(128, 3, 4, 4).cpu()
    targets = images.mean(dim=(1, 2, 3)).unsqueeze(1).cpu()
    dataset = data.TensorDataset(images, targets)
    net = nn.Sequential(nn.Flatten(), nn.Linear(48, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    data_loader = data.DataLoader(dataset, args.batch_size, shuffle=True, collate_fn=detection_collate)
    history = []
    for epoch in range(5):
        for imgs, tgts in data_loader:
            imgs, tgts = imgs.to(next(net.parameters()).device), tgts.to(next(net.parameters()).device)
            loss = nn.functional.mse_loss(net(imgs), tgts)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
    return history


history = train()
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:4]) / 4, "last_loss": sum(history[-4:]) / 4, "device": "cuda" if torch.cuda.is_available() else "cpu"}))
