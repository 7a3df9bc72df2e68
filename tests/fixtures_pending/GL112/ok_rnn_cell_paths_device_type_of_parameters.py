# Hard negative, pending (engine-rooted; PRECISION20 A2). Real shape: dvgodoy/PyTorchStepByStep,
# plots/chapter8.py `disassemble_rnn` / `build_paths` / `paths_clock_and_counter`,
# https://github.com/dvgodoy/PyTorchStepByStep/blob/d837dec7250dae20d247634c4aba63791bd89b2f/plots/chapter8.py
# A trained `nn.RNN` is taken apart into two plain `nn.Linear` layers (its weights copied with
# `.to('cpu')`), and `build_paths(linear_hidden, linear_input)` replays the recurrence by hand,
# moving every input to `device = list(linear_input.parameters())[0].device.type`: the device the
# layers themselves are on. The analysis takes the `.type` string of a parameter's device as an
# accelerator and reports both layers as never moved (GL112 at the two `.to(device)` calls);
# written with `next(linear_input.parameters()).device` it is silent.
import json

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(19)
np.random.seed(19)
device = 'cuda' if torch.cuda.is_available() else 'cpu'


class SquareModel(nn.Module):
    def __init__(self, n_features, hidden_dim, n_outputs):
        super().__init__()
        self.basic_rnn = nn.RNN(n_features, hidden_dim, batch_first=True)
        self.classifier = nn.Linear(hidden_dim, n_outputs)

    def forward(self, X):
        batch_first_output, self.hidden = self.basic_rnn(X)
        return self.classifier(batch_first_output[:, -1])


def generate_sequences(n=128):
    basic_corners = np.array([[-1, -1], [-1, 1], [1, 1], [1, -1]])
    bases = np.random.randint(4, size=n)
    directions = np.random.randint(2, size=n)
    points = [basic_corners[[(b + i) % 4 for i in range(4)]][::d * 2 - 1] for b, d in zip(bases, directions)]
    return np.array(points, dtype=np.float32), directions


def disassemble_rnn(rnn_model, layer=''):
    hidden_size = rnn_model.hidden_size
    input_size = rnn_model.input_size
    linear_hidden = nn.Linear(hidden_size, hidden_size)
    linear_input = nn.Linear(input_size, hidden_size)
    rnn_state = rnn_model.state_dict()
    with torch.no_grad():
        linear_hidden.weight.copy_(rnn_state[f'weight_hh_l0{layer}'].to('cpu'))
        linear_hidden.bias.copy_(rnn_state[f'bias_hh_l0{layer}'].to('cpu'))
        linear_input.weight.copy_(rnn_state[f'weight_ih_l0{layer}'].to('cpu'))
        linear_input.bias.copy_(rnn_state[f'bias_ih_l0{layer}'].to('cpu'))
    return linear_hidden, linear_input


def build_paths(linear_hidden, linear_input, b=0, basic_corners=None):
    device = list(linear_input.parameters())[0].device.type
    if basic_corners is None:
        basic_corners = np.array([[-1, -1], [-1, 1], [1, 1], [1, -1]])
    corners = np.concatenate([basic_corners[b:], basic_corners[:b]])
    corners_clock = torch.as_tensor(corners[:]).float()
    corners_anti = torch.as_tensor(np.concatenate([corners[:1], corners[1:][::-1]])).float()
    activations = []
    for inputs in [corners_clock, corners_anti]:
        activations.append([])
        hidden = torch.zeros(1, 1, linear_hidden.in_features)
        with torch.no_grad():
            for i in range(len(inputs)):
                lh = linear_hidden(hidden.to(device))
                li = linear_input(inputs[i].to(device))
                lo = lh + li
                hidden = torch.tanh(lo)
                activations[-1].append(hidden.squeeze().tolist())
    return activations


def paths_clock_and_counter(linear_hidden, linear_input, b=0):
    return build_paths(linear_hidden, linear_input, b=b)


points, directions = generate_sequences()
X = torch.as_tensor(points)
y = torch.as_tensor(directions).float().view(-1, 1)
model = SquareModel(n_features=2, hidden_dim=2, n_outputs=1).to(device)
loss_fn = nn.BCEWithLogitsLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
X, y = X.to(device), y.to(device)
losses = []
for epoch in range(60):
    model.train()
    yhat = model(X)
    loss = loss_fn(yhat, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    losses.append(loss.item())

linear_hidden, linear_input = disassemble_rnn(model.basic_rnn)
paths = paths_clock_and_counter(linear_hidden, linear_input, b=1)
print(json.dumps({"clockwise_last_hidden": paths[0][-1]}))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(device).type}))
