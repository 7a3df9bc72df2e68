# source: https://github.com/matssteinweg/PIXOR/issues/6
# PIXOR's evaluate_model.py: the test loader's PointCloudDataset builds each voxelised point cloud
# with `torch.tensor(..., device=self.device)` (load_dataset(..., device=device, test_set=True)),
# the script builds `pixor = PIXOR()` and loads its weights with map_location=device, and never
# moves it: `model(batch_data)` in evaluate_model fails with "Input type (torch.cuda.FloatTensor)
# and weight type (torch.FloatTensor) should be the same" (the reporter's `.to(device)` went on the
# result of evaluate_model). process_predictions then un-normalises the regression outputs with
# host tensors (`torch.tensor(REG_STD)`), the next crash once the network is on the GPU.
# fails-on-cuda: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
import json
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

REG_MEAN = [0.0, 0.0, 0.5, 0.5, 0.2, 0.3]
REG_STD = [1.0, 1.0, 0.5, 0.5, 0.2, 0.2]


def my_collate_test(batch):
    point_clouds = torch.stack([item[0] for item in batch])
    labels = [item[1] for item in batch]
    return point_clouds, labels


class PointCloudDataset(Dataset):
    def __init__(self, n, split="training", device=torch.device("cpu")):
        self.device = device
        self.split = split
        rng = np.random.RandomState(0 if split == "training" else 1)
        self.voxels = rng.rand(n, 12, 8, 8).astype(np.float32)

    def __len__(self):
        return len(self.voxels)

    def __getitem__(self, index):
        voxel_point_cloud = torch.tensor(self.voxels[index], device=self.device).float()
        occupancy = voxel_point_cloud.mean(dim=0, keepdim=True)
        target = torch.cat([occupancy.repeat(6, 1, 1), (occupancy > 0.5).float()], dim=0)
        if self.split == "training":
            return voxel_point_cloud, target
        return voxel_point_cloud, [("Car", index)]


def load_dataset(batch_size=4, test_set=False, device=torch.device("cpu")):
    if not test_set:
        return DataLoader(PointCloudDataset(32, "training", device), batch_size=batch_size, shuffle=True)
    return DataLoader(PointCloudDataset(8, "testing", device), batch_size=batch_size, shuffle=False,
                      collate_fn=my_collate_test)


class PIXOR(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(12, 16, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.header = nn.Conv2d(16, 7, 1)

    def forward(self, x):
        return self.header(self.backbone(x))


def train_model(path, device):
    model = PIXOR().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for epoch in range(6):
        for batch_data, batch_labels in load_dataset(device=device):
            loss = nn.functional.mse_loss(model(batch_data), batch_labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    torch.save(model.state_dict(), path)
    return losses


def process_predictions(predictions, confidence=0.6):
    classification_prediction = torch.sigmoid(predictions[:, :, :, -1])
    conf_mask = (classification_prediction > confidence).float().unsqueeze(3)
    predictions = predictions * conf_mask
    predictions[:, :, :, :-1] = (predictions[:, :, :, :-1] * torch.tensor(REG_STD).float()) + torch.tensor(REG_MEAN).float()  # expect: GL116
    return predictions


def evaluate_model(model, data_loader):
    model.eval()
    n_detections = 0
    for batch_id, (batch_data, batch_labels) in enumerate(data_loader):
        with torch.set_grad_enabled(False):
            batch_predictions = model(batch_data)  # expect: GL112
            batch_predictions = batch_predictions.permute([0, 2, 3, 1])
            output = process_predictions(batch_predictions)
            n_detections += int((output[..., -1] > 0).sum())
    return n_detections


torch.manual_seed(0)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
ckpt = os.path.join(tempfile.mkdtemp(), "PIXOR_Epoch_15.pt")
losses = train_model(ckpt, device)
data_loader = load_dataset(batch_size=4, device=device, test_set=True)
pixor = PIXOR()
pixor.load_state_dict(torch.load(ckpt, map_location=device, weights_only=True))
print("detections", evaluate_model(pixor, data_loader))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
