# source: https://github.com/Fraunhofer-IIS/prosper_nn/issues/13 (fixed by PR #18)
# prosper_nn's HCNN (historical consistent neural network) for time series: the cell keeps its
# observation matrix as a plain tensor, `self.eye = torch.eye(n_features_Y, n_state_neurons,
# requires_grad=False)`, so `model.to(device)` leaves it on the host ("If the model is moved to gpu
# these parameters stay at cpu"), and HCNN.forward collects the cell outputs in
# `torch.zeros(self.past_horizon, batchsize, n_features_Y)` buffers made without a device, which it
# returns to the loss. PR #18 wraps the matrix in `nn.Parameter(..., requires_grad=False)` and makes
# the buffers with `device=self.init_state.device`.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class HCNNCell(nn.Module):
    def __init__(self, n_state_neurons, n_features_Y, activation=torch.tanh, teacher_forcing=1.0):
        super().__init__()
        self.n_state_neurons = n_state_neurons
        self.n_features_Y = n_features_Y
        self.activation = activation
        self.teacher_forcing = teacher_forcing
        self.A = nn.Linear(in_features=n_state_neurons, out_features=n_state_neurons, bias=False)
        self.eye = torch.eye(self.n_features_Y, self.n_state_neurons, requires_grad=False)  # expect: GL106
        self.ptf_dropout = nn.Dropout(1 - self.teacher_forcing)

    def forward(self, state, observation=None):
        expectation = torch.mm(state, self.eye.T)
        if observation is not None:
            output = expectation - observation
            teacher_forcing = torch.mm(self.ptf_dropout(output), self.eye)
            state = self.activation(state - teacher_forcing)
        else:
            output = expectation
            state = self.activation(state)
        state = self.A(state)
        return state, output


class HCNN(nn.Module):
    def __init__(self, n_state_neurons, n_features_Y, past_horizon, forecast_horizon):
        super().__init__()
        self.n_state_neurons = n_state_neurons
        self.n_features_Y = n_features_Y
        self.past_horizon = past_horizon
        self.forecast_horizon = forecast_horizon
        self.state = [torch.tensor for _ in range(past_horizon + forecast_horizon + 1)]
        self.init_state = nn.Parameter(torch.randn(1, n_state_neurons) * 0.1, requires_grad=True)
        self.HCNNCell = HCNNCell(n_state_neurons, n_features_Y)

    def forward(self, Y):
        self.state[0] = self.init_state
        batchsize = Y.shape[1]
        past_error = torch.zeros(self.past_horizon, batchsize, self.n_features_Y)  # expect: GL105
        forecast = torch.zeros(self.forecast_horizon, batchsize, self.n_features_Y)  # expect: GL105
        for t in range(self.past_horizon):
            if t == 0:
                self.state[t + 1], past_error[t] = self.HCNNCell(self.state[t].repeat(batchsize, 1), Y[t])
            else:
                self.state[t + 1], past_error[t] = self.HCNNCell(self.state[t], Y[t])
        for t in range(self.past_horizon, self.past_horizon + self.forecast_horizon):
            self.state[t + 1], forecast[t - self.past_horizon] = self.HCNNCell(self.state[t])
        return torch.cat([past_error, forecast], dim=0)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
past_horizon, forecast_horizon, batchsize, n_features_Y = 8, 2, 4, 2
t = torch.arange(past_horizon * batchsize, dtype=torch.float32).reshape(past_horizon, batchsize, 1)
Y_batches = torch.cat([torch.sin(0.3 * t), torch.cos(0.3 * t)], dim=2).to(device)
model = HCNN(6, n_features_Y, past_horizon, forecast_horizon).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
loss_function = nn.MSELoss()
targets = torch.zeros((past_horizon, batchsize, n_features_Y), device=device)
losses = []
for epoch in range(40):
    model.zero_grad()
    output = model(Y_batches)
    past_errors, forecasts = torch.split(output, past_horizon)
    loss = loss_function(past_errors, targets)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
