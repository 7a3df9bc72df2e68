# source: https://github.com/pytorch/ignite/issues/750
# fails-on-cuda: Missing key(s) in state_dict
# ignite's Checkpoint/ModelCheckpoint handler (before PR #1086): the handler keeps the objects to
# save in `self.to_save` and, when fired at the end of an epoch, writes
# `{name: obj.state_dict() for name, obj in self.to_save.items()}` with torch.save. With the model
# wrapped in DataParallel/DistributedDataParallel the saved keys all carry the wrapper's "module."
# prefix, so the checkpoint cannot be loaded into the bare model for inference. The issue: "avoid
# saving DDP wrapped model ... save instead its base model"; PR #1086 saves `obj.module` for DP/DDP.
# (A tiny engine with an EPOCH_COMPLETED hook, the model wrapped in nn.DataParallel, which adds the
# prefix on any machine; the inference load at the end fails as reported.)
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class Checkpoint:
    def __init__(self, to_save, dirname, filename_prefix):
        self.to_save = to_save
        self.dirname = dirname
        self.filename_prefix = filename_prefix
        self.last_path = None

    def __call__(self, engine):
        path = os.path.join(self.dirname, "%s_checkpoint_%d.pt" % (self.filename_prefix, engine.epoch))
        torch.save({name: obj.state_dict() for name, obj in self.to_save.items()}, path)  # expect: GL304
        self.last_path = path


class Engine:
    def __init__(self, process_function):
        self.process_function = process_function
        self.handlers = []
        self.epoch = 0
        self.outputs = []

    def add_epoch_completed_handler(self, handler):
        self.handlers.append(handler)

    def run(self, data, max_epochs):
        for epoch in range(1, max_epochs + 1):
            self.epoch = epoch
            for batch in data:
                self.outputs.append(self.process_function(self, batch))
            for handler in self.handlers:
                handler(self)


def build_model():
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(192, 10, generator=g)
    y = x[:, :3].argmax(dim=1)
    data = [(x[i:i + 32], y[i:i + 32]) for i in range(0, 192, 32)]
    model = nn.DataParallel(build_model().to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def update(engine, batch):
        model.train()
        inputs, targets = batch[0].to(device), batch[1].to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss.item()

    trainer = Engine(update)
    handler = Checkpoint({"model": model, "optimizer": optimizer}, tempfile.mkdtemp(), "mnist")
    trainer.add_epoch_completed_handler(handler)
    trainer.run(data, max_epochs=4)

    # inference script: the bare network loads the saved weights
    net = build_model()
    net.load_state_dict(torch.load(handler.last_path, map_location="cpu", weights_only=True)["model"])
    losses = trainer.outputs
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:3]) / 3, "last_loss": sum(losses[-3:]) / 3, "device": device.type}))


if __name__ == "__main__":
    main()
