# source: https://github.com/deepinsight/insightface/blob/7fadd420c2351d0ffa8cac403421c1a3ed733365/recognition/arcface_torch/train_v2.py
# fixture: torchrun 2
# Hard negative (P48-2, engine): arcface_torch's trainer moves the backbone, then wraps it as
# `DistributedDataParallel(module=backbone, ...)` (the wrapped module passed by keyword), moves the
# partial-FC head with `module_partial_fc.train().cuda()`, and feeds the backbone's embeddings to
# the head. The embeddings are on the backbone's device, which is the head's: GL116 must stay
# silent. On the base the engine reads only a positional wrapped module, so the keyword form is a
# fresh module on the host and its output "on the CPU". Own code in the trainer's shape (a small
# backbone, a cosine-margin head over all classes, a DataLoader subclass that moves the batch).
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def get_model(num_features=16):
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, num_features))


class PartialFC(nn.Module):
    def __init__(self, embedding_size, num_classes, scale=8.0, margin=0.2):
        super().__init__()
        self.weight = nn.Parameter(torch.normal(0, 0.01, (num_classes, embedding_size)))
        self.scale, self.margin = scale, margin

    def forward(self, embeddings, labels):
        logits = F.linear(F.normalize(embeddings), F.normalize(self.weight))
        logits = logits - self.margin * F.one_hot(labels, logits.size(1))
        return F.cross_entropy(self.scale * logits, labels)


class DataLoaderX(DataLoader):
    """Moves every batch to the training device ahead of use, as arcface_torch's DataLoaderX (which
    does it on a side CUDA stream from a background thread)."""

    def __init__(self, device, **kwargs):
        super().__init__(**kwargs)
        self.device = device

    def __iter__(self):
        self.iter = super().__iter__()
        self.preload()
        return self

    def preload(self):
        self.batch = next(self.iter, None)
        if self.batch is None:
            return
        for k in range(len(self.batch)):
            self.batch[k] = self.batch[k].to(device=self.device, non_blocking=True)

    def __next__(self):
        batch = self.batch
        if batch is None:
            raise StopIteration
        self.preload()
        return batch


def main():
    for key, value in (("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("MASTER_ADDR", "127.0.0.1"),
                       ("MASTER_PORT", "29513")):
        os.environ.setdefault(key, value)
    dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    torch.manual_seed(0)
    images = torch.randn(96, 3, 4, 4)
    labels = (images[:, 0].mean(dim=(1, 2)) > 0).long() + 2 * (images[:, 1].mean(dim=(1, 2)) > 0).long()
    dataset = TensorDataset(images, labels)
    sampler = DistributedSampler(dataset)
    train_loader = DataLoaderX(device, dataset=dataset, batch_size=16, sampler=sampler)

    backbone = get_model().to(device)
    backbone = torch.nn.parallel.DistributedDataParallel(
        module=backbone, broadcast_buffers=False, device_ids=[local_rank] if device.type == "cuda" else None)
    backbone.train()
    module_partial_fc = PartialFC(16, 4)
    module_partial_fc.train().to(device)
    opt = torch.optim.SGD(
        params=[{"params": backbone.parameters()}, {"params": module_partial_fc.parameters()}], lr=0.2, momentum=0.9)

    history = []
    for epoch in range(8):
        sampler.set_epoch(epoch)
        for img, local_labels in train_loader:
            local_embeddings = backbone(img)
            loss = module_partial_fc(local_embeddings, local_labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(backbone.parameters(), 5)
            opt.step()
            opt.zero_grad()
            history.append(loss.item())
    if rank == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
