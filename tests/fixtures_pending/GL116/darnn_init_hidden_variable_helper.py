# source: https://github.com/Seanny123/da-rnn/issues/22
# DA-RNN's encoder: a module-level helper init_hidden(x, hidden_size) returns
# `Variable(torch.zeros(1, x.size(0), hidden_size))` (legacy autograd wrapper, CPU), the encoder's
# forward takes the initial hidden and cell states from it and concatenates them with the input
# batch in its attention step, re-binding them to the LSTM's states inside the time loop. On a GPU
# the first time step fails ("All input tensors must be on the same device. Received cpu and
# cuda:0").
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn
import torch.nn.functional as tf
from torch.autograd import Variable


def init_hidden(x, hidden_size):
    return Variable(torch.zeros(1, x.size(0), hidden_size))


class Encoder(nn.Module):
    def __init__(self, input_size, hidden_size, T):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.T = T
        self.lstm_layer = nn.LSTM(input_size=input_size, hidden_size=hidden_size, num_layers=1)
        self.attn_linear = nn.Linear(2 * hidden_size + T - 1, 1)

    def forward(self, input_data):
        hidden = init_hidden(input_data, self.hidden_size)
        cell = init_hidden(input_data, self.hidden_size)
        outputs = []
        for t in range(self.T - 1):
            x = torch.cat(  # expect: GL116
                (
                    hidden.repeat(self.input_size, 1, 1).permute(1, 0, 2),
                    cell.repeat(self.input_size, 1, 1).permute(1, 0, 2),
                    input_data.permute(0, 2, 1),
                ),
                dim=2,
            )
            x = self.attn_linear(x.view(-1, self.hidden_size * 2 + self.T - 1))
            attn_weights = tf.softmax(x.view(-1, self.input_size), dim=1)
            weighted_input = torch.mul(attn_weights, input_data[:, t, :])
            _, lstm_states = self.lstm_layer(weighted_input.unsqueeze(0), (hidden, cell))
            hidden = lstm_states[0]
            cell = lstm_states[1]
            outputs.append(hidden[0])
        return torch.stack(outputs, dim=1)


class DARNN(nn.Module):
    def __init__(self, input_size=4, hidden_size=16, T=6):
        super().__init__()
        self.encoder = Encoder(input_size, hidden_size, T)
        self.head = nn.Linear(hidden_size, 1)

    def forward(self, x):
        return self.head(self.encoder(x)[:, -1])


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
series = torch.sin(torch.linspace(0, 20, 400))[:, None] * torch.tensor([1.0, 0.5, -0.3, 0.8])
X = torch.stack([series[i : i + 5] for i in range(380)])
y = series[5:385, :1]
model = DARNN().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
history = []
for epoch in range(5):
    for i in range(0, 380, 38):
        xb, yb = X[i : i + 38].to(device), y[i : i + 38].to(device)
        loss = nn.functional.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:5]) / 5, "last_loss": sum(history[-5:]) / 5, "device": device.type}))
