# source: https://github.com/SakurajimaMaiii/TSD/issues/6 (the repair, as DeepDG's train.py has it)
# Hard negative for GL112: the algorithm instance is moved where it is built
# (`algorithm_class(args).to(device)`), so its registered network follows. Nothing to report.
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def get_fea(args):
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())


class feat_classifier(nn.Module):
    def __init__(self, class_num, bottleneck_dim=8):
        super().__init__()
        self.fc = nn.Linear(bottleneck_dim, class_num)

    def forward(self, x):
        return self.fc(x)


class Algorithm(nn.Module):
    def __init__(self, args):
        super().__init__()

    def update(self, minibatches, opt, sch):
        raise NotImplementedError

    def predict(self, x):
        raise NotImplementedError


class ERM(Algorithm):
    def __init__(self, args):
        super().__init__(args)
        self.featurizer = get_fea(args)
        self.classifier = feat_classifier(args.num_classes)
        self.network = nn.Sequential(self.featurizer, self.classifier)

    def update(self, minibatches, opt, sch):
        all_x = torch.cat([data[0].to(device).float() for data in minibatches])
        all_y = torch.cat([data[1].to(device).long() for data in minibatches])
        loss = F.cross_entropy(self.predict(all_x), all_y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sch:
            sch.step()
        return {"class": loss.item()}

    def predict(self, x):
        return self.network(x)


ALGORITHMS = {"ERM": ERM}


def get_algorithm_class(name):
    return ALGORITHMS[name]


def make_domain(seed, n=16):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, 8, 8, generator=g)
    y = (x.mean(dim=(1, 2, 3)) > 0).long()
    return x, y


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--algorithm", default="ERM")
    parser.add_argument("--num_classes", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--max_epoch", type=int, default=60)
    args = parser.parse_args([])
    torch.manual_seed(0)
    domains = [make_domain(s) for s in range(3)]
    algorithm_class = get_algorithm_class(args.algorithm)
    algorithm = algorithm_class(args).to(device)
    algorithm.train()
    opt = torch.optim.SGD(algorithm.parameters(), lr=args.lr, momentum=0.9)
    sch = None
    losses = []
    for epoch in range(args.max_epoch):
        minibatches_device = [(x, y) for x, y in domains]
        step_vals = algorithm.update(minibatches_device, opt, sch)
        losses.append(step_vals["class"])
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
