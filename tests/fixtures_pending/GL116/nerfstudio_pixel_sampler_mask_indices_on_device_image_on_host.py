# source: https://github.com/nerfstudio-project/nerfstudio/pull/1061
# nerfstudio's pixel sampler: collate_image_dataset_batch(batch, num_rays_per_batch) draws the ray
# indices from `torch.nonzero(batch["mask"][..., 0])` when the batch has a mask, then gathers every
# entry with `{key: value[c, y, x] for key, value in batch.items() if key != "image_idx"}`. The
# image batch comes from a cached data loader that moves each key to the device except the images
# (kept on the host); the reporter's batch had `image_idx` and `mask` on cuda:0 and `image` on the
# CPU, so indexing the host image with the device indices fails ("indices should be either on cpu
# or on the same device as the indexed tensor (cpu)"; the PR moves the mask to the image's device).
# Here: a tiny coordinate MLP fitted to the masked pixels of synthetic images.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
import json
import random

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_cached_images(num_images=4, height=12, width=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    ys, xs = torch.meshgrid(torch.linspace(0, 1, height), torch.linspace(0, 1, width), indexing="ij")
    images, masks = [], []
    for i in range(num_images):
        phase = float(torch.rand(1, generator=g)) * 3
        rgb = torch.stack([torch.sin(3 * xs + phase), torch.cos(3 * ys + phase), xs * ys], dim=-1) * 0.5 + 0.5
        images.append(rgb)
        masks.append(((xs - 0.5) ** 2 + (ys - 0.5) ** 2 < 0.2).unsqueeze(-1))
    return {"image": torch.stack(images), "mask": torch.stack(masks), "image_idx": torch.arange(num_images)}


def to_device(batch, device, exclude_batch_keys_from_device=("image",)):
    return {key: value if key in exclude_batch_keys_from_device else value.to(device) for key, value in batch.items()}


def collate_image_dataset_batch(batch, num_rays_per_batch):
    device = batch["image"].device
    num_images, image_height, image_width, _ = batch["image"].shape
    if "mask" in batch:
        nonzero_indices = torch.nonzero(batch["mask"][..., 0], as_tuple=False)
        chosen_indices = random.sample(range(len(nonzero_indices)), k=num_rays_per_batch)
        indices = nonzero_indices[chosen_indices]
    else:
        indices = torch.floor(
            torch.rand((num_rays_per_batch, 3), device=device)
            * torch.tensor([num_images, image_height, image_width], device=device)
        ).long()
    c, y, x = (i.flatten() for i in torch.split(indices, 1, dim=-1))
    collated_batch = {key: value[c, y, x] for key, value in batch.items() if key != "image_idx" and value is not None}  # expect: GL116
    collated_batch["indices"] = indices
    return collated_batch


class CoordinateField(nn.Module):
    def __init__(self, num_images=4, hidden=64):
        super().__init__()
        self.embedding = nn.Embedding(num_images, 8)
        self.mlp = nn.Sequential(nn.Linear(10, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 3))

    def forward(self, indices, height=12, width=12):
        c, y, x = indices[:, 0], indices[:, 1], indices[:, 2]
        coords = torch.stack([y.float() / (height - 1), x.float() / (width - 1)], dim=-1)
        return torch.sigmoid(self.mlp(torch.cat([self.embedding(c), coords], dim=-1)))


random.seed(0)
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
image_batch = to_device(make_cached_images(), device)
model = CoordinateField().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for step in range(80):
    ray_batch = collate_image_dataset_batch(image_batch, num_rays_per_batch=64)
    rgb = model(ray_batch["indices"].to(device))
    loss = F.mse_loss(rgb, ray_batch["image"].to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
