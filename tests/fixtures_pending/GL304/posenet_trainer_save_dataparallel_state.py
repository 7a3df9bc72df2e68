# source: https://github.com/mks0601/3DMPPE_POSENET_RELEASE/issues/41
# main/base.py: Trainer._make_model() wraps the pose network in DataParallel and save_model(state,
# epoch) writes {'epoch', 'network': self.model.state_dict(), 'optimizer'} with torch.save; the
# keys of the wrapper's state dict start with "module.", so loading the released checkpoint into a
# plain get_pose_net(...) model, as the reporter's modelLoader() does, fails with unexpected keys
# "module.head...." (the reporter strips the prefix by hand).
# fails-on-cuda: Unexpected key(s) in state_dict
import json
import os
import tempfile

import torch
import torch.nn as nn
from torch.nn.parallel.data_parallel import DataParallel


class PoseNet(nn.Module):
    def __init__(self, joint_num=4):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(12, 32), nn.ReLU())
        self.head = nn.Linear(32, joint_num * 3)

    def forward(self, x):
        return self.head(self.backbone(x))


def get_pose_net(joint_num):
    return PoseNet(joint_num)


class Trainer:
    def __init__(self, model_dir):
        self.model_dir = model_dir
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def _make_model(self):
        model = get_pose_net(4)
        model = DataParallel(model).to(self.device)
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        self.model = model

    def save_model(self, state, epoch):
        file_path = os.path.join(self.model_dir, "snapshot_{}.pth.tar".format(str(epoch)))
        torch.save(state, file_path)  # expect: GL304
        return file_path

    def train(self, inputs, targets, end_epoch):
        losses = []
        for epoch in range(end_epoch):
            for i in range(0, len(inputs), 16):
                x, y = inputs[i:i + 16].to(self.device), targets[i:i + 16].to(self.device)
                loss = nn.functional.l1_loss(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                losses.append(loss.item())
            path = self.save_model({
                "epoch": epoch,
                "network": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
            }, epoch)
        return losses, path


def modelLoader(modelpath, joint_num):
    model = get_pose_net(joint_num)
    ckpt = torch.load(modelpath, map_location="cpu")
    model.load_state_dict(ckpt["network"])
    model.eval()
    return model


torch.manual_seed(0)
inputs = torch.randn(64, 12)
targets = inputs.repeat(1, 1)[:, :12] * 0.5
with tempfile.TemporaryDirectory() as model_dir:
    trainer = Trainer(model_dir)
    trainer._make_model()
    losses, path = trainer.train(inputs, targets, end_epoch=5)
    tester = modelLoader(path, 4)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": trainer.device.type}))
