# source: https://github.com/NVIDIA/DeepLearningExamples/issues/1102
# NVIDIA DeepLearningExamples, PyTorch/LanguageModeling/BERT/run_pretraining.py: the sync-free
# statistics object keeps one device tensor per statistic, and take_training_step() accumulated the
# micro-batch loss into it with `stats.device_stat('average_loss').add_(loss)`. `loss` carries the
# autograd graph, so the in-place add chains every step's graph onto the statistic tensor (the
# `zero_()` at each log step does not cut it): host RAM grew every optimizer step until the job
# died. PR #1104 adds `loss.clone().detach()` instead; today's file adds `loss.detach()`.
# The helper layout (take_training_step / take_optimizer_step / SyncFreeStats, accumulation
# window, GradScaler and warmup scheduler passed around) is kept; the model is a tiny stand-in.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class SyncFreeStats:
    def __init__(self, device):
        self.device = device
        self.host_stats = {}
        self.device_stats = {}

    def register_stat(self, name):
        host = torch.zeros(1, dtype=torch.float32)
        self.host_stats[name] = host.pin_memory() if torch.cuda.is_available() else host
        self.device_stats[name] = torch.zeros(1, dtype=torch.float32, device=self.device)

    def device_stat(self, name):
        return self.device_stats[name]

    def copy_from_device(self):
        for name, host in self.host_stats.items():
            host.copy_(self.device_stats[name].detach(), non_blocking=True)

    def host_stat_value(self, name):
        return self.host_stats[name].item()


class TinyBertForPreTraining(nn.Module):
    def __init__(self, vocab=32, hidden=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.encoder = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU())
        self.mlm = nn.Linear(hidden, vocab)
        self.nsp = nn.Linear(hidden, 2)

    def forward(self, input_ids):
        h = self.encoder(self.embed(input_ids))
        return self.mlm(h), self.nsp(h[:, 0])


class BertPretrainingCriterion(nn.Module):
    def forward(self, prediction_scores, seq_relationship_score, labels, next_sentence_labels):
        mlm = nn.functional.cross_entropy(prediction_scores.float().flatten(0, 1), labels.flatten())
        nsp = nn.functional.cross_entropy(seq_relationship_score.float(), next_sentence_labels)
        return mlm + nsp


def take_training_step(args, grad_scaler, model, criterion, batch, stats):
    input_ids, labels, next_sentence_labels = batch
    with torch.autocast("cuda", enabled=args["fp16"]):
        prediction_scores, seq_relationship_score = model(input_ids)
        loss = criterion(prediction_scores, seq_relationship_score, labels, next_sentence_labels)
    loss = loss / args["gradient_accumulation_steps"]
    stats.device_stat("average_loss").add_(loss)  # expect: GL402
    grad_scaler.scale(loss).backward()


def take_optimizer_step(args, lr_scheduler, optimizer, grad_scaler, stats):
    grad_scaler.step(optimizer)
    lr_scheduler.step()
    stats.copy_from_device()
    grad_scaler.update()
    optimizer.zero_grad(set_to_none=True)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    args = {"fp16": device.type == "cuda", "gradient_accumulation_steps": 2, "log_freq": 4, "epochs": 10}
    model = TinyBertForPreTraining().to(device)
    criterion = BertPretrainingCriterion()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-2)
    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 5))
    grad_scaler = torch.amp.GradScaler("cuda", enabled=args["fp16"])
    stats = SyncFreeStats(device)
    stats.register_stat("average_loss")

    ids = torch.randint(0, 32, (64, 12))
    data = TensorDataset(ids, ids.roll(1, dims=1), (ids[:, 0] % 2))
    loader = DataLoader(data, batch_size=8, shuffle=True)

    global_step = 0
    logged = []
    model.train()
    for epoch in range(args["epochs"]):
        for step, batch in enumerate(loader):
            batch = [t.to(device) for t in batch]
            take_training_step(args, grad_scaler, model, criterion, batch, stats)
            if (step + 1) % args["gradient_accumulation_steps"] == 0:
                take_optimizer_step(args, lr_scheduler, optimizer, grad_scaler, stats)
                global_step += 1
                if global_step % args["log_freq"] == 0:
                    logged.append(stats.host_stat_value("average_loss") / args["log_freq"])
                    stats.device_stat("average_loss").zero_()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": logged[0], "last_loss": logged[-1], "device": device.type}))


if __name__ == "__main__":
    main()
