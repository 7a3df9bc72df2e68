# source: https://github.com/DataDistillation/DataDAM/issues/9
# utils.py's get_network(model, channel, num_classes, im_size) built the ConvNet and always returned
# `nn.DataParallel(net)` (moved with .cuda()); main_DataDAM.py's attach_hooks(net) unwraps it only
# with several GPUs: `base = net.module if torch.cuda.device_count() > 1 else net`, then reads
# `base.features.named_modules()` to hook every ReLU. On one GPU base is the DataParallel wrapper:
# "AttributeError: 'DataParallel' object has no attribute 'features'". The fix wraps in
# DataParallel only when gpu_num > 1.
# fails-on-cuda: 'DataParallel' object has no attribute 'features'
import argparse
import json

import torch
import torch.nn as nn


class ConvNet(nn.Module):
    def __init__(self, channel, num_classes, net_width=8, net_depth=2, im_size=(8, 8)):
        super().__init__()
        layers = []
        in_c = channel
        for d in range(net_depth):
            layers += [nn.Conv2d(in_c, net_width, 3, padding=1), nn.GroupNorm(net_width, net_width, affine=True), nn.ReLU(inplace=True), nn.AvgPool2d(2)]
            in_c = net_width
        self.features = nn.Sequential(*layers)
        feat = net_width * (im_size[0] // 2 ** net_depth) * (im_size[1] // 2 ** net_depth)
        self.classifier = nn.Linear(feat, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))

    def embed(self, x):
        return self.features(x).flatten(1)


def get_network(model, channel, num_classes, im_size=(8, 8), device="cpu"):
    torch.random.manual_seed(0)
    if model == "ConvNet":
        net = ConvNet(channel=channel, num_classes=num_classes, im_size=im_size)
    else:
        net = None
        exit("unknown model: %s" % model)
    gpu_num = torch.cuda.device_count()
    net = nn.DataParallel(net)
    net = net.to(device)
    return net


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=str, default="ConvNet")
    parser.add_argument("--Iteration", type=int, default=30)
    parser.add_argument("--lr_img", type=float, default=0.5)
    args = parser.parse_args([])
    args.device = "cuda" if torch.cuda.is_available() else "cpu"
    channel, num_classes, im_size = 1, 2, (8, 8)
    torch.manual_seed(0)
    images_all = torch.randn(64, channel, *im_size)
    image_syn = torch.randn(4, channel, *im_size, requires_grad=True, device=args.device)
    optimizer_img = torch.optim.SGD([image_syn], lr=args.lr_img, momentum=0.5)

    activations = {}

    def getActivation(name):
        def hook_func(m, inp, op):
            activations[name] = op.clone()
        return hook_func

    def delete_hooks(hooks):
        for hook in hooks:
            hook.remove()

    def attach_hooks(net):
        hooks = []
        base = net.module if torch.cuda.device_count() > 1 else net
        for module in (base.features.named_modules()):  # expect: GL305
            if isinstance(module[1], nn.ReLU):
                hooks.append(base.features[int(module[0])].register_forward_hook(getActivation("ReLU_" + str(len(hooks)))))
        return hooks

    losses = []
    for it in range(args.Iteration + 1):
        net = get_network(args.model, channel, num_classes, im_size, device=args.device)
        net.train()
        for param in list(net.parameters()):
            param.requires_grad = False
        hooks = attach_hooks(net)
        real = images_all[torch.randperm(64)[:16]].to(args.device)
        net(real)
        act_real = [a.mean(0) for a in activations.values()]
        net(image_syn)
        act_syn = [a.mean(0) for a in activations.values()]
        delete_hooks(hooks)
        loss = sum(((r.detach() - s) ** 2).mean() for r, s in zip(act_real, act_syn))
        optimizer_img.zero_grad()
        loss.backward()
        optimizer_img.step()
        losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(args.device).type}))


if __name__ == "__main__":
    main()
