# source: https://github.com/cherise215/Cooperative_Training_and_Latent_Space_Data_Augmentation/issues/2
# medseg/train_adv_supervised_segmentation_triplet.py: `train_network` loops over epochs and, for
# `i_iter in range(len(train_loader))`, draws a batch with `get_batch(dataiter, ...)`, runs the
# solver's standard training (and, with latent DA on, the hard-example pass), sums the losses,
# `loss.backward()`, `segmentation_solver.optimize_all_params()`, and then calls
# `torch.cuda.empty_cache()` on every iteration, with `gc.collect()` at the top of every
# iteration as well. The issue: GPU utilisation "surprisingly low"; deleting the `gc.collect()`
# and `torch.cuda.empty_cache()` statements "improved significantly". The once-per-epoch calls
# (before the epoch, after the evaluation) are the repository's too. Rebuilt with a tiny
# encoder / segmentation head / image decoder solver on synthetic 8x8 images.
import gc
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class ToySegDataset(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.randn(n, 1, 8, 8, generator=g)
        self.labels = (self.images[:, 0] > 0.3).long()

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return {"image": self.images[i], "label": self.labels[i]}


class TripletSegmentationSolver:
    def __init__(self, device):
        self.encoder = nn.Conv2d(1, 8, 3, padding=1).to(device)
        self.segmentation_decoder = nn.Conv2d(8, 2, 1).to(device)
        self.image_decoder = nn.Conv2d(8, 1, 1).to(device)
        self.optimizers = [
            torch.optim.Adam(m.parameters(), lr=0.01)
            for m in (self.encoder, self.segmentation_decoder, self.image_decoder)
        ]

    def train(self):
        for m in (self.encoder, self.segmentation_decoder, self.image_decoder):
            m.train()

    def reset_all_optimizers(self):
        for opt in self.optimizers:
            opt.zero_grad()

    def optimize_all_params(self):
        for opt in self.optimizers:
            opt.step()

    def standard_training(self, clean_image, label, perturbed_image):
        z = F.relu(self.encoder(perturbed_image))
        seg_loss = F.cross_entropy(self.segmentation_decoder(z), label)
        image_recon_loss = F.mse_loss(self.image_decoder(z), clean_image)
        return seg_loss, image_recon_loss

    def hard_example_training(self, clean_image, label):
        masked = clean_image * (torch.rand_like(clean_image) > 0.2)
        z = F.relu(self.encoder(masked))
        return F.cross_entropy(self.segmentation_decoder(z), label)


def get_batch(dataiter, train_loader, device):
    try:
        batch = next(dataiter)
    except StopIteration:
        dataiter = iter(train_loader)
        batch = next(dataiter)
    return batch["image"].to(device), batch["label"].to(device), dataiter


def train_network(segmentation_solver, train_loader, experiment_opt, device):
    latent_DA = experiment_opt["learning"]["latent_DA"]
    dataiter = iter(train_loader)
    losses = []
    segmentation_solver.reset_all_optimizers()
    segmentation_solver.train()
    for i_epoch in range(experiment_opt["learning"]["n_epochs"]):
        torch.cuda.empty_cache()
        gc.collect()
        total_loss = 0.0
        for i_iter in range(len(train_loader)):
            gc.collect()
            segmentation_solver.train()
            segmentation_solver.reset_all_optimizers()
            clean_image_l, label_l, dataiter = get_batch(dataiter, train_loader, device)
            image_l = (clean_image_l + 0.05 * torch.randn_like(clean_image_l)).detach().clone()
            seg_loss, image_recon_loss = segmentation_solver.standard_training(clean_image_l, label_l, image_l)
            standard_loss = seg_loss + image_recon_loss
            if latent_DA:
                hard_loss = segmentation_solver.hard_example_training(clean_image_l, label_l)
            else:
                hard_loss = torch.tensor(0.0, device=device)
            loss = standard_loss + hard_loss
            segmentation_solver.reset_all_optimizers()
            loss.backward()
            segmentation_solver.optimize_all_params()
            total_loss += loss.item()
            torch.cuda.empty_cache()  # expect: GL505
        losses.append(total_loss / len(train_loader))
        torch.cuda.empty_cache()
    return losses


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    experiment_opt = {"learning": {"latent_DA": True, "n_epochs": 5, "batch_size": 8}}
    train_loader = DataLoader(ToySegDataset(48, seed=0), batch_size=experiment_opt["learning"]["batch_size"], shuffle=True)
    solver = TripletSegmentationSolver(device)
    losses = train_network(solver, train_loader, experiment_opt, device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
