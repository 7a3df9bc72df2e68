# source: https://github.com/zoogzog/chexnet/issues/12
# ChexnetTrainer.py: a class of static methods; train() builds a DenseNet121 head, an Adam
# optimizer and a ReduceLROnPlateau scheduler, and per epoch calls ChexnetTrainer.epochTrain(...)
# then `lossVal, losstensor = ChexnetTrainer.epochVal(...)` and `scheduler.step(losstensor...)`.
# epochVal() calls model.eval() and wraps the batch in `Variable(..., volatile=True)` (a no-op
# since PyTorch 0.4: it warns and keeps building the graph), then `losstensorMean += losstensor`:
# the running sum keeps the graph of every validation batch alive until the epoch ends (the
# report: out of memory at the end of the first epoch; the reply: accumulate the value, not the
# tensor). The model call runs outside no_grad: GL403 at it (running it under no_grad is also
# what frees the sum of its graph; GL402 looks at training loops, those with a backward).
import json

import torch
import torch.nn as nn
from torch.autograd import Variable
from torch.utils.data import DataLoader, TensorDataset


class DenseNet121(nn.Module):
    def __init__(self, classCount=14):
        super().__init__()
        self.densenet121 = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, classCount), nn.Sigmoid())

    def forward(self, x):
        return self.densenet121(x)


class ChexnetTrainer:
    @staticmethod
    def train(dataLoaderTrain, dataLoaderVal, nnClassCount, trMaxEpoch, device, history):
        model = DenseNet121(nnClassCount).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=1e-5)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.1, patience=5, mode="min")
        loss = torch.nn.BCELoss(reduction="mean")
        for epochID in range(trMaxEpoch):
            ChexnetTrainer.epochTrain(model, dataLoaderTrain, optimizer, loss, device)
            lossVal, losstensor = ChexnetTrainer.epochVal(model, dataLoaderVal, loss, device)
            scheduler.step(losstensor.item())
            history.append(lossVal)

    @staticmethod
    def epochTrain(model, dataLoader, optimizer, loss, device):
        model.train()
        for batchID, (input, target) in enumerate(dataLoader):
            target = target.to(device)
            varInput = Variable(input.to(device))
            varTarget = Variable(target)
            varOutput = model(varInput)
            lossvalue = loss(varOutput, varTarget)
            optimizer.zero_grad()
            lossvalue.backward()
            optimizer.step()

    @staticmethod
    def epochVal(model, dataLoader, loss, device):
        model.eval()
        lossVal = 0
        lossValNorm = 0
        losstensorMean = 0
        for i, (input, target) in enumerate(dataLoader):
            target = target.to(device)
            varInput = Variable(input.to(device), volatile=True)
            varTarget = Variable(target, volatile=True)
            varOutput = model(varInput)  # expect: GL403
            losstensor = loss(varOutput, varTarget)
            losstensorMean += losstensor
            lossVal += losstensor.item()
            lossValNorm += 1
        outLoss = lossVal / lossValNorm
        losstensorMean = losstensorMean / lossValNorm
        return outLoss, losstensorMean


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(192, 32)
    y = (x[:, :14] > 0).float()
    train_loader = DataLoader(TensorDataset(x[:128], y[:128]), batch_size=16, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[128:], y[128:]), batch_size=16)
    history = []
    ChexnetTrainer.train(train_loader, val_loader, 14, 6, device, history)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
