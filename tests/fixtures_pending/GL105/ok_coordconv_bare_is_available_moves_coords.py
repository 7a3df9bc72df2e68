# source: https://github.com/keonlee9420/Comprehensive-Transformer-TTS/blob/dca252cae50a18464ce2410aa85a21c557c72d7a/model/coordconv.py
# Hard negative (PRECISION27 A1). The project's `AddCoords.forward` (CoordConv, used by the
# reference encoder's first `CoordConv2d`) builds its coordinate channels on the host
# (`torch.ones([1, 1, 1, dim_x], dtype=torch.int32)`, `torch.arange(dim_y, dtype=torch.int32)`,
# `torch.matmul` of the two, `.repeat(...)`), then moves them with
# `if torch.cuda.is_available: input_tensor = input_tensor.cuda(); xx_channel = xx_channel.cuda()`
# before the only `torch.cat` with the input. The test names the function without calling it: a
# function object is always true, so the branch runs on every machine and the coordinates always
# reach the `cat` on the GPU. GL105 reports every factory of the branch ("meets tensors on the
# model's device"): the engine reads the uncalled `torch.cuda.is_available` as an unknown condition
# and follows a path that skips the move. (With `is_available()` called it is silent.) The real
# code's own bug is elsewhere: on a machine without a GPU the always-true test calls `.cuda()` and
# raises, so this file runs under `gpulint run` (emulated CUDA) or on a GPU, not on a CPU-only
# machine: static.
# fixture: static
import json

import torch
import torch.nn as nn
import torch.nn.modules.conv as conv


class AddCoords(nn.Module):
    def __init__(self, rank, with_r=False):
        super(AddCoords, self).__init__()
        self.rank = rank
        self.with_r = with_r

    def forward(self, input_tensor):
        if self.rank == 2:
            batch_size_shape, channel_in_shape, dim_y, dim_x = input_tensor.shape
            xx_ones = torch.ones([1, 1, 1, dim_x], dtype=torch.int32)
            yy_ones = torch.ones([1, 1, 1, dim_y], dtype=torch.int32)

            xx_range = torch.arange(dim_y, dtype=torch.int32)
            yy_range = torch.arange(dim_x, dtype=torch.int32)
            xx_range = xx_range[None, None, :, None]
            yy_range = yy_range[None, None, :, None]

            xx_channel = torch.matmul(xx_range, xx_ones)
            yy_channel = torch.matmul(yy_range, yy_ones).permute(0, 1, 3, 2)

            xx_channel = xx_channel.float() / (dim_y - 1) * 2 - 1
            yy_channel = yy_channel.float() / (dim_x - 1) * 2 - 1
            xx_channel = xx_channel.repeat(batch_size_shape, 1, 1, 1)
            yy_channel = yy_channel.repeat(batch_size_shape, 1, 1, 1)

            if torch.cuda.is_available:
                input_tensor = input_tensor.cuda()
                xx_channel = xx_channel.cuda()
                yy_channel = yy_channel.cuda()
            out = torch.cat([input_tensor, xx_channel, yy_channel], dim=1)
        else:
            raise NotImplementedError
        return out


class CoordConv2d(conv.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size, padding=0):
        super(CoordConv2d, self).__init__(in_channels, out_channels, kernel_size, padding=padding)
        self.rank = 2
        self.addcoords = AddCoords(self.rank)
        self.conv = nn.Conv2d(in_channels + self.rank, out_channels, kernel_size, padding=padding)

    def forward(self, input_tensor):
        return self.conv(self.addcoords(input_tensor))


class ReferenceEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.Sequential(CoordConv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
        self.head = nn.Linear(8, 1)

    def forward(self, mel):
        h = self.convs(mel.unsqueeze(1))
        return self.head(h.mean(dim=(2, 3)))


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
mels = torch.randn(64, 12, 10)
target = mels.mean(dim=(1, 2)).unsqueeze(1) * 3
model = ReferenceEncoder().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(30):
    idx = torch.randint(0, 64, (16,))
    x, y = mels[idx].to(device), target[idx].to(device)
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
