# Pending hard negative (real shape: SingleZombie/DL-Demos, commit 739a21ff90f4,
# dldemos/StyleTransfer/style_transfer.py): Gatys style transfer as in the PyTorch tutorial. The
# images are read with `.to(device, torch.float)`; `get_model_and_losses` starts an empty-ish
# `nn.Sequential(Normalization(...))` (its mean/std made with `.to(device)`), walks the children
# of a feature CNN moved with `.to(device).eval()`, and `add_module`s each layer, computing the
# content/style targets with the partial model on the device images; `ContentLoss(target)` keeps
# `self.target = target.detach()`, a device tensor. The assembled model is never `.to()`-ed
# because every part is already on the device. GL112 reports `model` as never moved (line of
# `target = model(content_img)`), and GL106 reports `self.target` (the target the engine then
# reads as a host tensor).
import json

import torch
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
img_size = (16, 16)


def read_image(seed):
    g = torch.Generator().manual_seed(seed)
    img = torch.rand(1, 3, *img_size, generator=g)
    return img.to(device, torch.float)


style_img = read_image(1)
content_img = read_image(2)
default_content_layers = ["conv_2"]
default_style_layers = ["conv_1", "conv_2", "conv_3"]
style_weight = 1e3
content_weight = 1


class ContentLoss(torch.nn.Module):
    def __init__(self, target: torch.Tensor):
        super().__init__()
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram(x: torch.Tensor):
    n, c, h, w = x.shape
    features = x.reshape(n * c, h * w)
    return torch.mm(features, features.T) / n / c / h / w


class StyleLoss(torch.nn.Module):
    def __init__(self, target: torch.Tensor):
        super().__init__()
        self.target = gram(target.detach()).detach()

    def forward(self, input):
        self.loss = F.mse_loss(gram(input), self.target)
        return input


class Normalization(torch.nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = torch.tensor(mean).to(device).reshape(-1, 1, 1)
        self.std = torch.tensor(std).to(device).reshape(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


def get_model_and_losses(content_img, style_img, content_layers, style_layers):
    num_loss = 0
    expected_num_loss = len(content_layers) + len(style_layers)
    content_losses = []
    style_losses = []
    model = torch.nn.Sequential(Normalization([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]))
    cnn = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU()).to(device).eval()
    i = 0
    for layer in cnn.children():
        if isinstance(layer, torch.nn.Conv2d):
            i += 1
            name = f"conv_{i}"
        elif isinstance(layer, torch.nn.ReLU):
            name = f"relu_{i}"
            layer = torch.nn.ReLU(inplace=False)
        elif isinstance(layer, torch.nn.MaxPool2d):
            name = f"pool_{i}"
        else:
            raise RuntimeError(f"Unrecognized layer: {layer.__class__.__name__}")
        model.add_module(name, layer)
        if name in content_layers:
            target = model(content_img)
            content_loss = ContentLoss(target)
            model.add_module(f"content_loss_{i}", content_loss)
            content_losses.append(content_loss)
            num_loss += 1
        if name in style_layers:
            target_feature = model(style_img)
            style_loss = StyleLoss(target_feature)
            model.add_module(f"style_loss_{i}", style_loss)
            style_losses.append(style_loss)
            num_loss += 1
        if num_loss >= expected_num_loss:
            break
    return model, content_losses, style_losses


input_img = torch.randn(1, 3, *img_size, device=device)
model, content_losses, style_losses = get_model_and_losses(
    content_img, style_img, default_content_layers, default_style_layers)
input_img.requires_grad_(True)
model.requires_grad_(False)
optimizer = optim.Adam([input_img], lr=0.05)
losses = []
for step in range(30):
    with torch.no_grad():
        input_img.clamp_(0, 1)
    optimizer.zero_grad()
    model(input_img)
    content_loss = sum(ls.loss for ls in content_losses)
    style_loss = sum(ls.loss for ls in style_losses)
    loss = content_weight * content_loss + style_weight * style_loss
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
