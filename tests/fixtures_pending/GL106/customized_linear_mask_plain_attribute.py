# source: https://github.com/uchida-takumi/CustomizedLinear/pull/1
# CustomizedLinear (a Linear layer whose connections are masked) keeps its connection mask as a
# plain tensor attribute, `self.mask = mask.type(torch.float).t()` (or `torch.tensor(mask, ...)` for
# a list), and hands it to its autograd Function in forward. `model.to(device)` moves the weight but
# not the mask, so `weight * mask` fails on a GPU. The PR registers the mask with
# `nn.Parameter(self.mask, requires_grad=False)`, so the module moves it.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class CustomizedLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None, mask=None):
        if mask is not None:
            weight = weight * mask
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        ctx.save_for_backward(input, weight, bias, mask)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias, mask = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
            if mask is not None:
                grad_weight = grad_weight * mask
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias, None


class CustomizedLinear(nn.Module):
    def __init__(self, mask, bias=True):
        super().__init__()
        self.input_features = mask.shape[0]
        self.output_features = mask.shape[1]
        if isinstance(mask, torch.Tensor):
            self.mask = mask.type(torch.float).t()  # expect: GL106
        else:
            self.mask = torch.tensor(mask, dtype=torch.float).t()  # expect: GL106
        self.weight = nn.Parameter(torch.Tensor(self.output_features, self.input_features))
        if bias:
            self.bias = nn.Parameter(torch.Tensor(self.output_features))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        self.weight.data = self.weight.data * self.mask

    def reset_parameters(self):
        stdv = 1.0 / self.weight.size(1) ** 0.5
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input):
        return CustomizedLinearFunction.apply(input, self.weight, self.bias, self.mask)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
mask = (torch.rand(8, 4) > 0.4).long()
model = nn.Sequential(CustomizedLinear(mask), nn.ReLU(), nn.Linear(4, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(64, 8).to(device)
y = x[:, :1] * 0.5 - x[:, 1:2]
losses = []
for step in range(40):
    loss = (model(x) - y).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
