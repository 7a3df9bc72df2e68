# source: https://github.com/marrlab/Med-AL-SSL/issues/17
# Med-AL-SSL's semi-supervised trainers keep their loader settings on the instance,
# `self.kwargs = {'num_workers': 4, 'pin_memory': False, 'drop_last': True}`, and build every loader
# with `DataLoader(dataset=..., batch_size=..., shuffle=True, **self.kwargs)`. FixMatch.train() zips
# the labeled and unlabeled loaders and copies each batch with `.cuda(non_blocking=True)`. The
# issue: "I noticed that you have set pin_memory=False in PyTorch DataLoader" (the run is IO
# heavy); from pageable memory the non_blocking copies are synchronous anyway. (num_workers is 0
# here only to keep the fixture fast on two cores.)
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class ResNetLike(nn.Module):
    def __init__(self, n_in=16, n_classes=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(n_in, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.classifier = nn.Linear(32, n_classes)

    def forward_encoder_classifier(self, x):
        return self.classifier(self.encoder(x))


class FixMatch:
    def __init__(self, args):
        self.args = args
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.kwargs = {'num_workers': 0, 'pin_memory': False, 'drop_last': True}

    def get_datasets_fixmatch(self):
        g = torch.Generator().manual_seed(0)
        w = torch.randn(16, 4, generator=g)
        x_l = torch.randn(64, 16, generator=g)
        y_l = (x_l @ w).argmax(dim=1)
        x_u = torch.randn(128, 16, generator=g)
        weak = x_u + 0.05 * torch.randn(128, 16, generator=g)
        strong = x_u + 0.3 * torch.randn(128, 16, generator=g)
        unlabeled = TensorDataset(weak, strong, torch.zeros(128, dtype=torch.long))
        return TensorDataset(x_l, y_l), unlabeled

    def main(self):
        torch.manual_seed(0)
        labeled_dataset_fix, unlabeled_dataset_fix = self.get_datasets_fixmatch()
        model = ResNetLike().to(self.device)
        optimizer = torch.optim.Adam(model.parameters(), lr=self.args["lr"])

        labeled_loader_fix = DataLoader(dataset=labeled_dataset_fix, batch_size=self.args["batch_size"],
                                        shuffle=True, **self.kwargs)
        unlabeled_loader_fix = DataLoader(dataset=unlabeled_dataset_fix, batch_size=self.args["batch_size"],
                                          shuffle=True, **self.kwargs)
        criterion_labeled = nn.CrossEntropyLoss(reduction='none')
        criterion_unlabeled = nn.CrossEntropyLoss(reduction='none')
        criterions = {'labeled': criterion_labeled, 'unlabeled': criterion_unlabeled}

        losses = []
        for epoch in range(self.args["epochs"]):
            train_loader_fix = zip(labeled_loader_fix, unlabeled_loader_fix)
            losses.extend(self.train(train_loader_fix, model, optimizer, criterions))
        return losses

    def train(self, train_loader, model, optimizer, criterions):
        model.train()
        losses = []
        for i, (data_labeled, data_unlabeled) in enumerate(train_loader):
            data_x, data_y = data_labeled
            data_x, data_y = data_x.to(self.device, non_blocking=True), data_y.to(self.device, non_blocking=True)  # expect: GL503

            data_w, data_s, _ = data_unlabeled
            data_w, data_s = data_w.to(self.device, non_blocking=True), data_s.to(self.device, non_blocking=True)  # expect: GL503

            inputs = torch.cat((data_x, data_w, data_s))
            logits = model.forward_encoder_classifier(inputs)
            logits_labeled = logits[:self.args["batch_size"]]
            logits_unlabeled_w, logits_unlabeled_s = logits[self.args["batch_size"]:].chunk(2)

            loss_labeled = criterions['labeled'](logits_labeled, data_y)
            loss_labeled = torch.sum(loss_labeled) / loss_labeled.size(0)

            pseudo_label = torch.softmax(logits_unlabeled_w.detach(), dim=-1)
            max_probs, data_y_unlabeled = torch.max(pseudo_label, dim=-1)
            mask = max_probs.ge(self.args["threshold"]).float()
            loss_unlabeled = (criterions['unlabeled'](logits_unlabeled_s, data_y_unlabeled) * mask).mean()

            loss = loss_labeled + self.args["lambda_u"] * loss_unlabeled

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss_labeled.item())
        return losses


if __name__ == "__main__":
    args = {"lr": 3e-3, "batch_size": 16, "epochs": 6, "threshold": 0.6, "lambda_u": 1.0}
    trainer = FixMatch(args)
    losses = trainer.main()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": trainer.device.type}))
