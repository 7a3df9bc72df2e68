# fixture: static (removed API: `torch.distributed.deprecated` is gone since torch 1.1, the module
# fails at import)
# source: https://github.com/cavalleria/cavaface/issues/63
# cavaface's face-recognition train.py imports `from apex.parallel import DistributedDataParallel as
# DDP`; the apex build the reporter had binds `ReduceOp = torch.distributed.deprecated.reduce_op` at
# import time, so training stops before it starts: "AttributeError: module 'torch.distributed' has
# no attribute 'deprecated'". The DDP wrapper (backbone all-reducing its gradients with
# ReduceOp.SUM after backward) and the ArcFace-style head are rebuilt below, in the file.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

# --- apex.parallel, as the reporter's apex build had it ---
ReduceOp = torch.distributed.deprecated.reduce_op  # expect: GL306


class DistributedDataParallel(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module
        for p in self.module.state_dict().values():
            dist.broadcast(p, 0)

    def forward(self, *inputs):
        return self.module(*inputs)

    def allreduce_grads(self):
        world = dist.get_world_size()
        for p in self.module.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad, op=ReduceOp.SUM)
                p.grad /= world


DDP = DistributedDataParallel


# --- train.py ---
class Backbone(nn.Module):
    def __init__(self, emb=16):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 64), nn.PReLU(), nn.Linear(64, emb))

    def forward(self, x):
        return F.normalize(self.body(x))


class ArcFace(nn.Module):
    def __init__(self, emb=16, n_classes=10, s=16.0, m=0.3):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_classes, emb) * 0.01)
        self.s, self.m = s, m

    def forward(self, emb, labels):
        cos = F.linear(emb, F.normalize(self.weight)).clamp(-1 + 1e-7, 1 - 1e-7)
        target = torch.cos(torch.acos(cos) + self.m)
        onehot = F.one_hot(labels, cos.shape[1]).bool()
        return self.s * torch.where(onehot, target, cos)


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group(backend="nccl", init_method="env://")
    torch.cuda.set_device(local_rank)
    backbone = DDP(Backbone().cuda())
    head = ArcFace().cuda()
    optimizer = torch.optim.SGD(list(backbone.parameters()) + list(head.parameters()), lr=0.1, momentum=0.9)
    images = torch.randn(256, 3, 8, 8)
    labels = images.mean(dim=(1, 2, 3)).mul(40).long().clamp(-5, 4) + 5
    for epoch in range(5):
        for i in range(0, 256, 32):
            x, y = images[i : i + 32].cuda(non_blocking=True), labels[i : i + 32].cuda(non_blocking=True)
            loss = F.cross_entropy(head(backbone(x), y), y)
            optimizer.zero_grad()
            loss.backward()
            backbone.allreduce_grads()
            optimizer.step()
        if local_rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
