# source: https://github.com/pytorch/examples/issues/1078
# fixture: torchrun 2
# distributed/ddp-tutorial-series/multigpu_torchrun.py: Trainer.__init__ takes gpu_id from
# LOCAL_RANK, moves the model there, restores `snapshot.pt` when it exists through
# `_load_snapshot`, which calls `torch.load(snapshot_path)` with no map_location, then wraps the
# model in DDP(device_ids=[gpu_id]); rank 0 saves the snapshot every save_every epochs. Resuming,
# every rank deserialises the snapshot onto the GPU it was saved from (GPU 0): "The memory usage
# of GPU0 is significantly higher than other GPUs. It can be solved by adding a parameter
# map_location"; and without weights_only the snapshot is fully unpickled.
import json
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class MyTrainDataset(Dataset):
    def __init__(self, size):
        g = torch.Generator().manual_seed(0)
        self.data = [(x, x.sum(0, keepdim=True)) for x in torch.rand(size, 20, generator=g)]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self.data[index]


def ddp_setup():
    if torch.cuda.is_available():
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")


class Trainer:
    def __init__(self, model, train_data, optimizer, save_every, snapshot_path, history):
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.device = torch.device("cuda", self.gpu_id) if torch.cuda.is_available() else torch.device("cpu")
        self.model = model.to(self.device)
        self.train_data = train_data
        self.optimizer = optimizer
        self.save_every = save_every
        self.epochs_run = 0
        self.snapshot_path = snapshot_path
        self.history = history
        if os.path.exists(snapshot_path):
            self._load_snapshot(snapshot_path)
        self.model = DDP(self.model, device_ids=[self.gpu_id] if torch.cuda.is_available() else None)

    def _load_snapshot(self, snapshot_path):
        snapshot = torch.load(snapshot_path)  # expect: GL110 GL601
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.mse_loss(output, targets)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def _run_epoch(self, epoch):
        self.train_data.sampler.set_epoch(epoch)
        total = 0.0
        for source, targets in self.train_data:
            source = source.to(self.device)
            targets = targets.to(self.device)
            total += self._run_batch(source, targets)
        self.history.append(total / len(self.train_data))

    def _save_snapshot(self, epoch):
        snapshot = {"MODEL_STATE": self.model.module.state_dict(), "EPOCHS_RUN": epoch}
        torch.save(snapshot, self.snapshot_path)

    def train(self, max_epochs):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if self.gpu_id == 0 and epoch % self.save_every == 0:
                self._save_snapshot(epoch)


def load_train_objs():
    train_set = MyTrainDataset(256)
    model = torch.nn.Linear(20, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    return train_set, model, optimizer


def prepare_dataloader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, pin_memory=True, shuffle=False, sampler=DistributedSampler(dataset))


def main(save_every, total_epochs, batch_size, snapshot_path):
    ddp_setup()
    torch.manual_seed(0)
    if int(os.environ["RANK"]) == 0 and os.path.exists(snapshot_path):
        os.remove(snapshot_path)  # a fresh run in this working directory
    dist.barrier()
    history = []
    for stop in (total_epochs // 2, total_epochs):  # a first run, then a resumed one
        dataset, model, optimizer = load_train_objs()
        train_data = prepare_dataloader(dataset, batch_size)
        trainer = Trainer(model, train_data, optimizer, save_every, snapshot_path, history)
        trainer.train(stop)
        dist.barrier()
    if int(os.environ["RANK"]) == 0:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": trainer.device.type}))
    dist.destroy_process_group()


if __name__ == "__main__":
    if "LOCAL_RANK" not in os.environ:
        os.environ.update({"LOCAL_RANK": "0", "RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29573"})
    main(save_every=1, total_epochs=8, batch_size=32, snapshot_path="snapshot.pt")
