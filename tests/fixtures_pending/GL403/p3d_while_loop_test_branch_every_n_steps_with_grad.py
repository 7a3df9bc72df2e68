# source: https://github.com/pytorch/pytorch/issues/4050
# pytorch/pytorch#4050 ("Test without backward the model will run out of memory"): a P3D-199
# video classifier trained with a `while i < step:` loop whose body is an if/else: every 100th
# iteration (`if i % 100 == 0:`) it reads a test batch with `read_batch(test_files, test_labels)`,
# runs `out = model(...)`, takes `torch.max(out, dim=1)` and prints the matches; every other
# iteration it reads a training batch, computes the loss and steps the optimizer. The test branch
# runs with autograd on and no `model.eval()`, so its forward records a graph, and `out` keeps it
# alive into the next iteration: the first training forward after a test step runs out of memory.
# The answers: evaluate under `volatile=True`, today `torch.no_grad()`. Rebuilt with a tiny 3-D conv
# classifier on synthetic clips (the Variable wrappers and `.cuda()` calls become `.to(device)`;
# the test step comes every 20th iteration here).
import json

import torch
import torch.nn as nn


class P3D(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.features = nn.Sequential(nn.Conv3d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool3d(1))
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def read_batch(clips, labels, g, batch_size=8):
    idx = torch.randint(0, len(clips), (batch_size,), generator=g)
    return clips[idx], labels[idx]


def make_clips(n, g, num_classes=4):
    labels = torch.randint(0, num_classes, (n,), generator=g)
    clips = torch.rand(n, 3, 4, 8, 8, generator=g) * 0.5
    clips[torch.arange(n), labels % 3] += 0.5 * (labels // 3 + 1)[:, None, None, None]
    return clips, labels


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(0)
    files, labels = make_clips(256, g)
    test_files, test_labels = make_clips(64, g)
    model = P3D().to(device)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    step = 121
    history = []
    i = 1
    while i < step:
        if i % 20 == 0:
            test_data, test_label = read_batch(test_files, test_labels, g)
            out = model(test_data.float().to(device))  # expect: GL403
            _, predict_label = torch.max(out, dim=1)
            eq = torch.eq(predict_label, test_label.to(device))
            print(i, "test accuracy", eq.float().mean().item())
        else:
            data, data_label = read_batch(files, labels, g)
            out = model(data.float().to(device))
            loss = criterion(out, data_label.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(loss.item())
        i = i + 1
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:5]) / 5, "last_loss": sum(history[-5:]) / 5, "device": device.type}))
