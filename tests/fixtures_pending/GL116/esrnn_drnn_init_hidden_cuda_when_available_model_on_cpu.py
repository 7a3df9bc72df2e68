# source: https://github.com/kdgutier/esrnn_torch/issues/14
# ESRNN (esrnn_torch): the user asks for `ESRNN(..., device='cpu')`, and the model and its
# inputs stay on the CPU, but the dilated RNN it uses (utils/DRNN.py) decides on its own where its
# hidden states live: `init_hidden()` (and the padding in `_pad_inputs()`) call `.cuda()` whenever
# the module-level `use_cuda = torch.cuda.is_available()` is true. On a machine with a GPU the
# fit fails in the first recurrent cell ("Input and hidden tensors are not at the same device,
# found input tensor at cpu and hidden tensor at cuda:0"). (M4 data replaced by synthetic series;
# the ES/holt-winters part by a linear level; DRNN and the fit loop keep the package's layout.)
# fails-on-cuda: Input and hidden tensors are not at the same device
import json

import torch
import torch.autograd as autograd
import torch.nn as nn

use_cuda = torch.cuda.is_available()


class DRNN(nn.Module):
    def __init__(self, n_input, n_hidden, n_layers, dilations, dropout=0, cell_type="GRU", batch_first=False):
        super(DRNN, self).__init__()
        self.dilations = dilations
        self.cell_type = cell_type
        self.batch_first = batch_first
        layers = []
        cell = nn.GRU if self.cell_type == "GRU" else nn.LSTM
        for i in range(n_layers):
            c = cell(n_input if i == 0 else n_hidden, n_hidden, dropout=dropout)
            layers.append(c)
        self.cells = nn.Sequential(*layers)

    def forward(self, inputs):
        if self.batch_first:
            inputs = inputs.transpose(0, 1)
        outputs = []
        for i, (cell, dilation) in enumerate(zip(self.cells, self.dilations)):
            inputs, _ = self.drnn_layer(cell, inputs, dilation)
            outputs.append(inputs[-dilation:])
        if self.batch_first:
            inputs = inputs.transpose(0, 1)
        return inputs, outputs

    def drnn_layer(self, cell, inputs, rate):
        n_steps = len(inputs)
        batch_size = inputs[0].size(0)
        hidden_size = cell.hidden_size
        inputs, dilated_steps = self._pad_inputs(inputs, n_steps, rate)
        dilated_inputs = torch.cat([inputs[j::rate, :, :] for j in range(rate)], 1)
        dilated_outputs, hidden = self._apply_cell(dilated_inputs, cell, batch_size, rate, hidden_size)
        batchsize = dilated_outputs.size(1) // rate
        blocks = [dilated_outputs[:, i * batchsize:(i + 1) * batchsize, :] for i in range(rate)]
        interleaved = torch.stack(blocks).transpose(1, 0).contiguous()
        interleaved = interleaved.view(dilated_outputs.size(0) * rate, batchsize, dilated_outputs.size(2))
        return interleaved[:n_steps], hidden

    def _apply_cell(self, dilated_inputs, cell, batch_size, rate, hidden_size):
        if self.cell_type == "LSTM":
            c, m = self.init_hidden(batch_size * rate, hidden_size)
            hidden = (c.unsqueeze(0), m.unsqueeze(0))
        else:
            hidden = self.init_hidden(batch_size * rate, hidden_size).unsqueeze(0)
        dilated_outputs, hidden = cell(dilated_inputs, hidden)  # expect: GL116
        return dilated_outputs, hidden

    def _pad_inputs(self, inputs, n_steps, rate):
        if (n_steps % rate) != 0:
            dilated_steps = n_steps // rate + 1
            zeros_ = torch.zeros(dilated_steps * rate - inputs.size(0), inputs.size(1), inputs.size(2))
            if use_cuda:
                zeros_ = zeros_.cuda()
            inputs = torch.cat((inputs, autograd.Variable(zeros_)))
        else:
            dilated_steps = n_steps // rate
        return inputs, dilated_steps

    def init_hidden(self, batch_size, hidden_dim):
        hidden = autograd.Variable(torch.zeros(batch_size, hidden_dim))
        if use_cuda:
            hidden = hidden.cuda()
        if self.cell_type == "LSTM":
            memory = autograd.Variable(torch.zeros(batch_size, hidden_dim))
            if use_cuda:
                memory = memory.cuda()
            return hidden, memory
        return hidden


class _ESRNN(nn.Module):
    def __init__(self, mc):
        super(_ESRNN, self).__init__()
        self.mc = mc
        self.level = nn.Linear(mc.input_size, mc.state_hsize)
        self.rnn = DRNN(mc.state_hsize, mc.state_hsize, n_layers=2, dilations=[1, 2], cell_type=mc.cell_type)
        self.adapter = nn.Linear(mc.state_hsize, mc.output_size)

    def forward(self, windows):
        x = torch.tanh(self.level(windows))
        out, _ = self.rnn(x)
        return self.adapter(out)


class ModelConfig:
    def __init__(self, device):
        self.device = device
        self.input_size = 4
        self.output_size = 2
        self.state_hsize = 8
        self.cell_type = "LSTM"
        self.learning_rate = 1e-2
        self.max_epochs = 25


class ESRNN(object):
    def __init__(self, device="cpu"):
        self.mc = ModelConfig(device)
        self.device = device

    def fit(self, series):
        self.esrnn = _ESRNN(self.mc).to(self.mc.device)
        optimizer = torch.optim.Adam(self.esrnn.parameters(), lr=self.mc.learning_rate)
        windows = series[:, :-2].unfold(1, 4, 1).transpose(0, 1).to(self.mc.device)
        targets = series[:, 3:].unfold(1, 2, 1).transpose(0, 1)[: windows.size(0)].to(self.mc.device)
        losses = []
        for epoch in range(self.mc.max_epochs):
            optimizer.zero_grad()
            loss = ((self.esrnn(windows) - targets) ** 2).mean()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses


torch.manual_seed(0)
series = torch.sin(torch.linspace(0, 12, 17))[None].repeat(3, 1) + 0.1 * torch.randn(3, 17)
model = ESRNN(device="cpu")
losses = model.fit(series)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": model.device}))
