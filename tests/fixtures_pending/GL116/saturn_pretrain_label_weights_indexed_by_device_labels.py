# source: https://github.com/snap-stanford/SATURN/issues/57
# SATURN's train-saturn.py: pretrain_saturn(model, pretrain_loader, optimizer, device, nepochs,
# sorted_species_names, balance=False, ...) counts the cell labels of the whole loader under
# `if balance:` (labels brought back with `.cpu()`), turns the counts into capped inverse
# frequencies `label_weights` (a CPU tensor), and in the epoch loop, for each species of the
# multi-species batch dict, moves `data, labels, refs` to the device, runs the model and, again
# under `if balance:`, looks the per-cell weights up with `label_weights[labels].to(device)`:
# "indices should be either on cpu or on the same device as the indexed tensor (cpu)" once the
# run uses --balance_pretrain. The reporter's fix: `label_weights = label_weights.to(device)` first.
# (A small per-species autoencoder on synthetic expression counts; the real loss_vae is a ZINB
# likelihood, here a weighted MSE.)
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
import json

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class MultiSpeciesDataset(Dataset):
    def __init__(self, species_to_counts, species_to_labels):
        self.items = []
        for species, counts in species_to_counts.items():
            labels = species_to_labels[species]
            for i in range(counts.shape[0]):
                self.items.append((species, counts[i], labels[i]))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return self.items[idx]


def multi_species_collate_fn(batch):
    batch_dict = {}
    for species in sorted({item[0] for item in batch}):
        rows = [item for item in batch if item[0] == species]
        data = torch.stack([r[1] for r in rows])
        labels = torch.stack([r[2] for r in rows])
        batch_dict[species] = (data, labels, labels.clone(), None)
    return batch_dict


class SATURNPretrainModel(nn.Module):
    def __init__(self, species_to_genes, hidden_dim=32, embed_dim=8, l1_penalty=1e-4):
        super().__init__()
        self.vae = False
        self.l1_penalty = l1_penalty
        self.p_weights = nn.Parameter(torch.zeros(16, 16))
        self.encoders = nn.ModuleDict({s: nn.Linear(g, 16) for s, g in species_to_genes.items()})
        self.decoders = nn.ModuleDict({s: nn.Linear(embed_dim, g) for s, g in species_to_genes.items()})
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(16, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, embed_dim))

    def forward(self, data, species):
        encoder_input = self.encoders[species](data)
        encoder_input = encoder_input @ self.p_weights.exp() / 16
        encoded = self.body(encoder_input)
        px_rate = self.decoders[species](encoded)
        return encoder_input, encoded, None, None, px_rate

    def loss_vae(self, data, px_rates, weights=None):
        per_cell = ((px_rates - data) ** 2).mean(dim=1)
        if weights is not None:
            per_cell = per_cell * weights
        return {"loss": per_cell.sum()}

    def lasso_loss(self, weights):
        return weights.abs().sum()


def pretrain_saturn(model, pretrain_loader, optimizer, device, nepochs, sorted_species_names, balance=False):
    print("Pretraining...")
    model.train()
    if balance:
        all_labels = []
        for batch_idx, batch_dict in enumerate(pretrain_loader):
            for species in sorted_species_names:
                (_, labels, _, _) = batch_dict[species]
                if labels is None:
                    continue
                labels = labels.cpu()
                all_labels.append(labels)
        all_labels = torch.cat(all_labels)
        unique_labels, label_counts = torch.unique(all_labels, return_counts=True)
        label_weights = label_counts / torch.sum(label_counts)
        label_weights = 1 / label_weights
        max_weight = torch.tensor(unique_labels.shape[0])
        label_weights = torch.min(max_weight, label_weights) / max_weight
        label_weights = label_weights[unique_labels]

    losses = []
    for epoch in range(1, nepochs + 1):
        model.train()
        for batch_idx, batch_dict in enumerate(pretrain_loader):
            optimizer.zero_grad()
            batch_loss = 0
            for species in np.random.choice(sorted_species_names, size=len(sorted_species_names), replace=False):
                (data, labels, refs, batch_labels) = batch_dict[species]
                if data is None:
                    continue
                data, labels, refs = data.to(device), labels.to(device), refs.to(device)
                encoder_input, encoded, mus, log_vars, px_rates = model(data, species)
                if balance:
                    batch_weights = label_weights[labels].to(device)  # expect: GL116
                    l = model.loss_vae(data, px_rates, batch_weights)
                else:
                    l = model.loss_vae(data, px_rates)
                batch_loss += l["loss"] / data.shape[0]
            l1_loss = model.l1_penalty * model.lasso_loss(model.p_weights.exp())
            batch_loss += l1_loss
            batch_loss.backward()
            optimizer.step()
            losses.append(batch_loss.item())
    return model, losses


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    species_to_genes = {"human": 24, "mouse": 20}
    g = torch.Generator().manual_seed(0)
    counts, cell_labels = {}, {}
    for species, n_genes in species_to_genes.items():
        labels = torch.randint(0, 4, (96,), generator=g)
        programs = torch.rand(4, n_genes, generator=g) * 3
        counts[species] = programs[labels] + 0.1 * torch.rand(96, n_genes, generator=g)
        cell_labels[species] = labels
    dataset = MultiSpeciesDataset(counts, cell_labels)
    pretrain_loader = DataLoader(dataset, batch_size=64, shuffle=True, collate_fn=multi_species_collate_fn)
    model = SATURNPretrainModel(species_to_genes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    sorted_species_names = sorted(species_to_genes)
    model, losses = pretrain_saturn(model, pretrain_loader, optimizer, device, 8, sorted_species_names, balance=True)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:3]) / 3, "last_loss": sum(losses[-3:]) / 3, "device": device.type}))


if __name__ == "__main__":
    main()
