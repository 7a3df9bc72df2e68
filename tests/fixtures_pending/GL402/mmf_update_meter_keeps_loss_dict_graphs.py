# source: https://github.com/facebookresearch/mmf/pull/560
# MMF's trainer (mmf/trainers/core/reporting.py, training_loop.py, utils/logger.py, 2020): after
# each batch the training loop calls `self.update_meter(report, self.meter)`. update_meter() reduces
# `report.losses` across workers, sums them into a float total loss, then, inside `torch.no_grad()`,
# does `meter_update_dict.update(reduced_loss_dict)` and `meter.update(meter_update_dict,
# report.batch_size)`. The per-loss tensors still carry the batch's autograd graph (no_grad does not
# detach what was computed before it), and the Meter's SmoothedValue keeps each value in a deque
# and adds it to a running `total`, so every step's graph stays alive: host and GPU memory grow
# until OOM. PR #560 stores `reduced_loss_dict[key].item()` instead. The Report/Meter/SmoothedValue
# classes, the reporting mixin and the trainer loop are kept (single process, so reduce_dict returns
# its input); the multimodal model is a small fusion MLP with two losses on synthetic features.
import json
from collections import defaultdict, deque

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


def get_world_size():
    return 1


def reduce_dict(dictionary):
    if get_world_size() < 2:
        return dictionary
    raise NotImplementedError


class SmoothedValue:
    def __init__(self, window_size=20):
        self.deque = deque(maxlen=window_size)
        self.total = 0.0
        self.count = 0

    def update(self, value, batch_size):
        self.deque.append(value * batch_size)
        self.count += batch_size
        self.total += value * batch_size

    @property
    def global_avg(self):
        return self.total / max(self.count, 1)


class Meter:
    def __init__(self):
        self.meters = defaultdict(SmoothedValue)

    def update(self, update_dict, batch_size):
        for k, v in update_dict.items():
            if isinstance(v, torch.Tensor) and v.dim() != 0:
                v = v.mean()
            self.meters[k].update(v, batch_size)


class Report(dict):
    def __init__(self, batch_size, dataset_type, losses):
        super().__init__(losses=losses)
        self.batch_size = batch_size
        self.dataset_type = dataset_type
        self.losses = losses


class TrainerReportingMixin:
    def update_meter(self, report, meter=None):
        if meter is None:
            meter = self.meter
        loss_dict = report.losses
        reduced_loss_dict = reduce_dict(loss_dict)
        with torch.no_grad():
            meter_update_dict = {}
            total_loss_key = report.dataset_type + "/total_loss"
            reduced_loss = sum([loss.mean() for loss in reduced_loss_dict.values()])
            if hasattr(reduced_loss, "item"):
                reduced_loss = reduced_loss.item()
            meter_update_dict.update({total_loss_key: reduced_loss})
            meter_update_dict.update(reduced_loss_dict)  # expect: GL402
            meter.update(meter_update_dict, report.batch_size)


class FusionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.image_enc = nn.Linear(32, 64)
        self.text_enc = nn.Linear(16, 64)
        self.classifier = nn.Linear(64, 5)
        self.aux = nn.Linear(64, 1)

    def forward(self, image, text, answer, score):
        fused = torch.relu(self.image_enc(image)) * torch.relu(self.text_enc(text))
        return {
            "losses": {
                "train/vqa/logit_bce": F.cross_entropy(self.classifier(fused), answer),
                "train/vqa/score_mse": F.mse_loss(self.aux(fused).squeeze(1), score),
            }
        }


class MMFTrainer(TrainerReportingMixin):
    def __init__(self, max_epochs=6):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = FusionModel().to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=3e-3)
        self.meter = Meter()
        self.max_epochs = max_epochs
        image, text = torch.randn(256, 32), torch.randn(256, 16)
        answer = (image[:, :5] + text[:, :5]).argmax(dim=1)
        score = image[:, 0] * text[:, 0]
        self.train_loader = DataLoader(TensorDataset(image, text, answer, score), batch_size=32, shuffle=True)
        self.epoch_losses = []

    def _backward(self, loss):
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

    def run_training_batch(self, batch):
        image, text, answer, score = (t.to(self.device) for t in batch)
        model_output = self.model(image, text, answer, score)
        loss = sum(model_output["losses"].values())
        self._backward(loss)
        return Report(image.size(0), "train", model_output["losses"])

    def training_loop(self):
        self.model.train()
        for epoch in range(self.max_epochs):
            self.meter = Meter()
            for batch in self.train_loader:
                report = self.run_training_batch(batch)
                self.update_meter(report, self.meter)
            self.epoch_losses.append(self.meter.meters["train/total_loss"].global_avg)
            print(f"epoch {epoch}: total_loss {self.epoch_losses[-1]:.4f}")


def main():
    trainer = MMFTrainer()
    trainer.training_loop()
    losses = trainer.epoch_losses
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": trainer.device.type}))


if __name__ == "__main__":
    main()
