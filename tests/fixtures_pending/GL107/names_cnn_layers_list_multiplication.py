# source: https://github.com/mikeizbicki/cmc-csci181-deeplearning/issues/7
# names.py (hw6): the CNN model keeps its extra convolution layers in a plain list built by list
# multiplication, `self.cnns = (args.num_layers - 1) * [nn.Conv1d(...)]`, and loops over it in
# forward. The list is not registered: model.parameters() leaves those layers out (the report's
# "optimizer got an empty parameter list" came from `_init_` spelled with single underscores,
# spelled correctly here) and model.to(device) does not move them; the multiplication also
# repeats one layer object.
import argparse
import json

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--hidden_layer_size", type=int, default=16)
parser.add_argument("--num_layers", type=int, default=3)
parser.add_argument("--input_length", type=int, default=8)
parser.add_argument("--batch_size", type=int, default=16)
parser.add_argument("--learning_rate", type=float, default=0.05)
args = parser.parse_args([])

vocabulary = "abcdefghij"
all_categories = ["a", "b", "c"]


class CNNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()
        self.cnn = nn.Conv1d(len(vocabulary), args.hidden_layer_size, 3, padding=1)
        self.cnns = (args.num_layers - 1) * [nn.Conv1d(args.hidden_layer_size, args.hidden_layer_size, 3, padding=1)]  # expect: GL107
        self.fc = nn.Linear(args.hidden_layer_size * args.input_length, len(all_categories))

    def forward(self, x):
        out = torch.einsum("lbv->bvl", x)
        out = self.relu(self.cnn(out))
        for cnn in self.cnns:
            out = self.relu(cnn(out))
        out = out.reshape(out.shape[0], args.hidden_layer_size * args.input_length)
        return self.fc(out)


device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
idx = torch.randint(0, len(vocabulary), (128, args.input_length))
x_all = torch.nn.functional.one_hot(idx, len(vocabulary)).float().permute(1, 0, 2)
y_all = idx[:, 0] % len(all_categories)
model = CNNModel().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=0.9)
criterion = nn.CrossEntropyLoss()
losses = []
for epoch in range(4):
    for i in range(0, 128, args.batch_size):
        x = x_all[:, i:i + args.batch_size].to(device)
        y = y_all[i:i + args.batch_size].to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(device).type}))
