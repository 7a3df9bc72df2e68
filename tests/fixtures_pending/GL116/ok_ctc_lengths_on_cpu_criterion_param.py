# source: https://github.com/SeanNaren/deepspeech.pytorch/pull/22 (the training loop of its
# train.py, written as a helper that gets the criterion as a parameter)
# Hard negative, pending: GL116 reports `sizes` (CTC input lengths made with torch.full on the
# CPU) meeting the CUDA log-probs in `criterion(out, target, sizes, target_sizes)`. nn.CTCLoss reads
# its length tensors on the host (the cuDNN path even wants them there), so this runs on a GPU;
# with `criterion = nn.CTCLoss()` used at module level instead of a parameter GL116 is silent.
import json

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
model = nn.Linear(8, 5).to(device)
criterion = nn.CTCLoss(blank=0, zero_infinity=True)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)


def finetune(model, criterion, batches):
    losses = []
    for feats, target in batches:
        feats, target = feats.to(device), target.to(device)
        out = model(feats).log_softmax(-1).transpose(0, 1)  # T x N x C
        sizes = torch.full((feats.size(0),), out.size(0), dtype=torch.long)
        target_sizes = torch.full((feats.size(0),), target.size(1), dtype=torch.long)
        loss = criterion(out, target, sizes, target_sizes)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


feats = torch.randn(4, 12, 8)
target = (feats[:, ::4, :4].mean(-1) > 0).long() + 1
losses = finetune(model, criterion, [(feats, target)] * 30)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
