# source: https://github.com/ogchen/nanofold/pull/4
# nanofold (a small AlphaFold-style structure module): `StructureModule.forward` starts from the
# identity frames, `Frame(rotations=torch.eye(3).unsqueeze(0).repeat(*batch_dims, 1, 1),
# translations=torch.zeros(*batch_dims, 3))`, made without a device and kept in a plain `Frame`
# object; each `StructureModuleLayer` composes them with its backbone update,
# `Frame.compose(frames, self.backbone_update(single))`, whose rotations come from the (GPU)
# single representation: `a.rotations @ b.rotations` fails on a GPU with "RuntimeError: Expected
# all tensors to be on the same device". The PR ("Fix issues with model and tensors on incorrect
# device when using cuda") passes `device=single.device` to both factories.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
from torch import nn


class Frame:
    def __init__(self, rotations, translations):
        self.rotations = rotations
        self.translations = translations

    @staticmethod
    def compose(a, b):
        rotations = a.rotations @ b.rotations
        translations = Frame.apply(a, b.translations)
        return Frame(rotations, translations)

    @staticmethod
    def apply(frames, vectors):
        result = frames.rotations @ vectors.unsqueeze(-1) + frames.translations.unsqueeze(-1)
        return result.squeeze(-1)


class BackboneUpdate(nn.Module):
    def __init__(self, single_embedding_size):
        super().__init__()
        self.linear = nn.Linear(single_embedding_size, 6)

    def forward(self, single):
        p = self.linear(single)
        b, c, d = p[..., 0], p[..., 1], p[..., 2]
        zero = torch.zeros_like(b)
        skew = torch.stack([zero, -d, c, d, zero, -b, -c, b, zero], dim=-1).view(*b.shape, 3, 3)
        return Frame(torch.linalg.matrix_exp(skew), p[..., 3:])


class StructureModuleLayer(nn.Module):
    def __init__(self, single_embedding_size, pair_embedding_size):
        super().__init__()
        self.attention = nn.Linear(single_embedding_size + pair_embedding_size, single_embedding_size)
        self.backbone_update = BackboneUpdate(single_embedding_size)
        self.layer_norm = nn.LayerNorm(single_embedding_size)

    def forward(self, single, pair, frames):
        single = single + torch.relu(self.attention(torch.cat([single, pair.mean(-2)], dim=-1)))
        single = self.layer_norm(single)
        frames = Frame.compose(frames, self.backbone_update(single))
        return single, frames


class StructureModule(nn.Module):
    def __init__(self, num_layers, single_embedding_size, pair_embedding_size):
        super().__init__()
        self.layers = nn.ModuleList(
            [StructureModuleLayer(single_embedding_size, pair_embedding_size) for _ in range(num_layers)]
        )
        self.single_layer_norm = nn.LayerNorm(single_embedding_size)
        self.pair_layer_norm = nn.LayerNorm(pair_embedding_size)
        self.single_linear = nn.Linear(single_embedding_size, single_embedding_size)

    def forward(self, single, pair, local_coords):
        batch_dims = single.shape[:-1]
        single = self.single_layer_norm(single)
        pair = self.pair_layer_norm(pair)
        single = self.single_linear(single)
        frames = Frame(
            rotations=torch.eye(3).unsqueeze(0).repeat(*batch_dims, 1, 1),  # expect: GL105
            translations=torch.zeros(*batch_dims, 3),  # expect: GL105
        )
        for i, layer in enumerate(self.layers):
            single, frames = layer(single, pair, frames)
            if i < len(self.layers) - 1:
                frames.rotations = frames.rotations.detach()
        batched_frames = Frame(frames.rotations.unsqueeze(-3), frames.translations.unsqueeze(-2))
        return Frame.apply(batched_frames, local_coords)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
residues, single_size, pair_size = 6, 16, 8
target_feat = torch.randn(32, residues, single_size)
local_coords = torch.randn(32, residues, 3, 3)
coords_truth = local_coords + target_feat[..., :3].unsqueeze(-2)

input_embedder = nn.Linear(single_size, pair_size).to(device)
model = StructureModule(num_layers=2, single_embedding_size=single_size, pair_embedding_size=pair_size).to(device)
optimizer = torch.optim.Adam(list(model.parameters()) + list(input_embedder.parameters()), lr=1e-2)

losses = []
for step in range(30):
    idx = torch.randint(0, 32, (8,))
    feat, local, truth = target_feat[idx].to(device), local_coords[idx].to(device), coords_truth[idx].to(device)
    pair_representations = input_embedder(feat).unsqueeze(-2).expand(-1, -1, residues, -1)
    coords = model(feat, pair_representations, local)
    loss = (coords - truth).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
