# source: https://github.com/pyannote/pyannote-audio/pull/961
# pyannote.audio's diarization error rate (torchmetrics functional + metric class): the
# _der_update() helper turns a float threshold into `torch.tensor([threshold], dtype=preds.dtype)`,
# on the CPU, then compares the (permutated) speaker activations with it; on a GPU the validation
# step fails with "Expected all tensors to be on the same device" (the PR adds
# `device=preds.device`). The segmentation model is trained on the device and validated with the
# metric object, whose update() calls the helper with its threshold.
# (A plain metric class instead of torchmetrics.Metric, a small convolutional segmentation model on
# synthetic frame features with two speakers, a brute-force permutation helper.)
# fails-on-cuda: Expected all tensors to be on the same device
import itertools
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def permutate(y1, y2):
    """Permutate the speakers of y2 (batch, frames, speakers) to best match y1."""
    num_speakers = y1.shape[-1]
    best, best_cost = None, None
    for perm in itertools.permutations(range(num_speakers)):
        candidate = y2[:, :, list(perm)]
        cost = torch.mean(torch.abs(candidate - y1), dim=(1, 2))
        if best is None:
            best, best_cost = candidate.clone(), cost
        else:
            better = cost < best_cost
            best[better] = candidate[better]
            best_cost = torch.minimum(cost, best_cost)
    return best, best_cost


def _der_update(preds, target, threshold=0.5):
    # preds, target: (batch, speakers, frames) as in pyannote's metric
    preds = preds.transpose(1, 2)
    target = target.transpose(1, 2)
    permutated_preds, _ = permutate(target, preds)
    if isinstance(threshold, float):
        threshold = torch.tensor([threshold], dtype=preds.dtype)
    hypothesis = (permutated_preds.unsqueeze(-1) > threshold).float()  # expect: GL116
    target = target.unsqueeze(-1)
    detection_error = torch.sum(hypothesis, 2) - torch.sum(target, 2)
    false_alarm = torch.maximum(detection_error, torch.zeros_like(detection_error))
    missed_detection = torch.maximum(-detection_error, torch.zeros_like(detection_error))
    speaker_confusion = torch.sum((hypothesis != target) * hypothesis, 2) - false_alarm
    false_alarm = torch.sum(false_alarm, 1)
    missed_detection = torch.sum(missed_detection, 1)
    speaker_confusion = torch.sum(speaker_confusion, 1)
    speech_total = 1.0 * torch.sum(target, (1, 2))
    return false_alarm, missed_detection, speaker_confusion, speech_total


def _der_compute(false_alarm, missed_detection, speaker_confusion, speech_total):
    return (false_alarm + missed_detection + speaker_confusion) / (speech_total + 1e-8)


class DiarizationErrorRate:
    def __init__(self, threshold=0.5):
        self.threshold = threshold
        self.reset()

    def reset(self):
        self.false_alarm = 0.0
        self.missed_detection = 0.0
        self.speaker_confusion = 0.0
        self.speech_total = 0.0

    def update(self, preds, target):
        false_alarm, missed_detection, speaker_confusion, speech_total = _der_update(
            preds, target, threshold=self.threshold
        )
        self.false_alarm += false_alarm.sum().item()
        self.missed_detection += missed_detection.sum().item()
        self.speaker_confusion += speaker_confusion.sum().item()
        self.speech_total += speech_total.sum().item()

    def compute(self):
        return _der_compute(self.false_alarm, self.missed_detection, self.speaker_confusion, self.speech_total)


class SimpleSegmentationModel(nn.Module):
    def __init__(self, n_features=8, hidden=16, n_speakers=2):
        super().__init__()
        self.conv = nn.Conv1d(n_features, hidden, kernel_size=3, padding=1)
        self.classifier = nn.Linear(hidden, n_speakers)

    def forward(self, waveforms):
        output = torch.relu(self.conv(waveforms.transpose(1, 2))).transpose(1, 2)
        return torch.sigmoid(self.classifier(output))


def make_chunks(n, frames, generator):
    activity = (torch.rand(n, frames, 2, generator=generator) > 0.5).float()
    features = torch.cat([activity, activity * 0.5], dim=-1).repeat(1, 1, 2)
    features = features + 0.1 * torch.randn(n, frames, 8, generator=generator)
    return features, activity


def train_and_validate(model, train_set, valid_set, device, epochs=5, batch_size=16):
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    metric = DiarizationErrorRate(threshold=0.5)
    features, targets = train_set
    losses = []
    for epoch in range(epochs):
        model.train()
        for i in range(0, len(features), batch_size):
            X = features[i : i + batch_size].to(device)
            y = targets[i : i + batch_size].to(device)
            y_pred = model(X)
            permutated_y, _ = permutate(y, y_pred)
            loss = F.binary_cross_entropy(permutated_y, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        model.eval()
        metric.reset()
        with torch.no_grad():
            X, y = valid_set[0].to(device), valid_set[1].to(device)
            metric.update(model(X).transpose(1, 2), y.transpose(1, 2))
        print(f"epoch {epoch}: DER {metric.compute():.3f}")
    return losses


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    generator = torch.Generator().manual_seed(0)
    train_set = make_chunks(64, 16, generator)
    valid_set = make_chunks(16, 20, generator)
    model = SimpleSegmentationModel().to(device)
    losses = train_and_validate(model, train_set, valid_set, device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:3]) / 3, "last_loss": sum(losses[-3:]) / 3, "device": device.type}))


if __name__ == "__main__":
    main()
