# source: https://github.com/Adlik/zen_nas/issues/7
# Zen-NAS: PlainNet builds its blocks with a helper that returns a plain list, keeps that list as
# `self.block_list` and registers the blocks through `self.module_list = nn.ModuleList(...)`;
# the MasterNet subclass then sets `self.module_list = None` in its own __init__ (it is rebuilt
# only in replace_block), which drops the only registration. `model.cuda()` moves the final
# linear layer but not the blocks, and the search script fails with "Input type
# (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same".
# fails-on-cuda: should be the same
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


def create_netblock_list_from_str(plainnet_struct):
    block_list = []
    for in_channels, out_channels, stride in plainnet_struct:
        block_list.append(ConvBlock(in_channels, out_channels, stride))
    return block_list


class PlainNet(nn.Module):
    def __init__(self, num_classes=None, plainnet_struct=None):
        super().__init__()
        self.num_classes = num_classes
        block_list = create_netblock_list_from_str(plainnet_struct)
        self.block_list = block_list  # expect: GL107
        self.module_list = nn.ModuleList(block_list)


class MasterNet(PlainNet):
    def __init__(self, num_classes=None, plainnet_struct=None):
        super().__init__(num_classes=num_classes, plainnet_struct=plainnet_struct)
        self.last_channels = self.block_list[-1].out_channels
        self.fc_linear = nn.Linear(self.last_channels, self.num_classes)
        self.module_list = None

    def forward(self, input_):
        output = input_
        for the_block in self.block_list:
            output = the_block(output)
        output = F.adaptive_avg_pool2d(output, output_size=1)
        output = torch.flatten(output, 1)
        return self.fc_linear(output)

    def replace_block(self, block_id, new_block):
        self.block_list[block_id] = new_block
        self.module_list = nn.ModuleList(self.block_list)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
images = torch.randn(32, 3, 8, 8)
labels = (images.mean(dim=(1, 2, 3)) > 0).long()
model = MasterNet(num_classes=2, plainnet_struct=[(3, 8, 1), (8, 16, 2)])
model = model.to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
losses = []
for step in range(30):
    xb, yb = images.to(device), labels.to(device)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
