# source: https://github.com/ai2cm/ace/issues/120
# A FourCastNet-style `Trainer` (fme/fcn_training/train.py): `__init__` builds the model, wraps it
# in DistributedDataParallel when `params.world_size > 1`, and calls `self.restore_checkpoint(...)`
# when resuming; `save_checkpoint()` writes `{"model_state": self.model.state_dict(), ...}` from
# the wrapper, so a multi-GPU checkpoint has every key prefixed with "module.". An earlier fix
# stripped the prefix in `_restore_checkpoint`, which then broke restarting on several GPUs
# ("multi-GPU training restart broken"): the stripped keys no longer match the DDP wrapper that a
# multi-GPU restart loads them into (Missing key(s) "module.encoder.weight", ...), and whether the
# saved keys carry the prefix depends on how the run that saved them was launched, not on the
# restart. Saving the unwrapped model's keys avoids both. Here one process trains, saves, and a
# second Trainer resumes (under torchrun --nproc_per_node=2 the resume fails as reported).
import json
import os
import tempfile
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel


class FourierNetStandIn(nn.Module):
    def __init__(self, channels=4, hidden=16):
        super().__init__()
        self.encoder = nn.Conv2d(channels, hidden, 1)
        self.mixer = nn.Conv2d(hidden, hidden, 3, padding=1)
        self.decoder = nn.Conv2d(hidden, channels, 1)

    def forward(self, x):
        return x + self.decoder(torch.tanh(self.mixer(torch.relu(self.encoder(x)))))


def _restore_checkpoint(trainer, checkpoint_path):
    checkpoint = torch.load(checkpoint_path, map_location=trainer.device, weights_only=True)
    state = checkpoint["model_state"]
    # the earlier fix (full-model#114): drop the DDP prefix so a multi-GPU checkpoint loads on one GPU
    new_state = {}
    for key, val in state.items():
        name = key[7:] if key.startswith("module.") else key
        new_state[name] = val
    trainer.model.load_state_dict(new_state)
    trainer.iters = checkpoint["iters"]
    trainer.startEpoch = checkpoint["epoch"]
    trainer.optimizer.load_state_dict(checkpoint["optimizer_state_dict"])


class Trainer:
    def __init__(self, params, world_rank):
        self.params = params
        self.world_rank = world_rank
        torch.manual_seed(0)
        self.device = torch.device("cuda", params.local_rank) if torch.cuda.is_available() else torch.device("cpu")
        self.model = FourierNetStandIn().to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=params.lr)
        if params.world_size > 1:
            ids = [params.local_rank] if self.device.type == "cuda" else None
            self.model = DistributedDataParallel(self.model, device_ids=ids, output_device=params.local_rank if ids else None)
        self.iters = 0
        self.startEpoch = 0
        if params.resuming:
            self.restore_checkpoint(params.checkpoint_path)
        torch.manual_seed(0)
        self.inputs = torch.randn(16, 4, 8, 8, device=self.device)
        self.targets = torch.roll(self.inputs, shifts=1, dims=3)

    def train_one_epoch(self):
        self.model.train()
        losses = []
        for i in range(0, self.inputs.size(0), 4):
            inp, tar = self.inputs[i:i + 4], self.targets[i:i + 4]
            self.optimizer.zero_grad()
            loss = nn.functional.mse_loss(self.model(inp), tar)
            loss.backward()
            self.optimizer.step()
            self.iters += 1
            losses.append(loss.detach())
        return torch.stack(losses).mean().item()

    def train(self):
        logs = []
        for epoch in range(self.startEpoch, self.startEpoch + self.params.max_epochs):
            logs.append(self.train_one_epoch())
            if self.world_rank == 0:
                self.save_checkpoint(self.params.checkpoint_path, epoch + 1)
        return logs

    def save_checkpoint(self, checkpoint_path, epoch, model=None):
        if not model:
            model = self.model
        torch.save(  # expect: GL304
            {
                "iters": self.iters,
                "epoch": epoch,
                "model_state": model.state_dict(),
                "optimizer_state_dict": self.optimizer.state_dict(),
            },
            checkpoint_path,
        )

    def restore_checkpoint(self, checkpoint_path):
        _restore_checkpoint(self, checkpoint_path)


def main():
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if world_size > 1:
        dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
    world_rank = dist.get_rank() if world_size > 1 else 0
    ckpt_dir = os.path.join(tempfile.gettempdir(), f"fcn_ckpt_{os.getppid() if world_size > 1 else os.getpid()}")
    os.makedirs(ckpt_dir, exist_ok=True)
    ckpt = os.path.join(ckpt_dir, "ckpt.tar")
    params = SimpleNamespace(world_size=world_size, local_rank=local_rank, lr=5e-3, max_epochs=4, checkpoint_path=ckpt, resuming=False)
    first = Trainer(params, world_rank).train()
    if world_size > 1:
        dist.barrier()
    params.resuming = True
    second = Trainer(params, world_rank).train()
    if world_size > 1:
        dist.destroy_process_group()
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first[0], "last_loss": second[-1], "device": "cuda" if torch.cuda.is_available() else "cpu"}))


if __name__ == "__main__":
    main()
