# source: https://github.com/OML-Team/open-metric-learning/pull/372
# open-metric-learning's NHardTripletsMiner (issue #369, "Pass device to torch.arange"):
# _sample() computes the distance matrix of the batch's features with the pairwise_dist() helper,
# _sample_from_distmat() makes the anchor mask on the distance matrix's device and then indexes
# `torch.arange(len(labels))`, made on the CPU, with it; on a GPU the first training step fails in
# the miner, called from TripletLossWithMiner.forward(). The miner is a plain class behind the
# ITripletsMinerInBatch interface (sample() -> _sample()), as in OML.
# (Fewer options than OML; a small embedding network on synthetic class clusters, P x K batches.)
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor (cpu)
import json
from typing import Any, List, Optional, Tuple, Union

import torch
import torch.nn as nn
from torch import Tensor

TTripletsIds = Tuple[List[int], List[int], List[int]]


def pairwise_dist(x1: Tensor, x2: Tensor, p: int = 2) -> Tensor:
    return torch.cdist(x1, x2, p=p)


def take_2d(x: Tensor, indices: Tensor) -> Tensor:
    assert x.shape[0] == indices.shape[0]
    return x.gather(1, indices)


class ITripletsMinerInBatch:
    def sample(self, features: Tensor, labels: Tensor, **kwargs: Any) -> TTripletsIds:
        ids_a, ids_p, ids_n = self._sample(features, labels, **kwargs)
        return ids_a, ids_p, ids_n

    def _sample(self, features: Tensor, labels: Tensor, **kwargs: Any) -> TTripletsIds:
        raise NotImplementedError


class NHardTripletsMiner(ITripletsMinerInBatch):
    def __init__(self, n_positive: Union[Tuple[int, int], int] = 1, n_negative: Union[Tuple[int, int], int] = 1):
        self.positive_slice = slice(*self._parse_input_arg(n_positive))
        self.negative_slice = slice(*self._parse_input_arg(n_negative))

    @staticmethod
    def _parse_input_arg(n):
        if isinstance(n, int):
            return [0, n]
        return [n[0] - 1, n[1]]

    def _sample(self, features: Tensor, labels: Tensor, *_: Any,
                ignore_anchor_mask: Optional[Tensor] = None) -> TTripletsIds:
        assert features.shape[0] == len(labels)
        dist_mat = pairwise_dist(x1=features, x2=features, p=2)
        return self._sample_from_distmat(distmat=dist_mat, labels=labels, ignore_anchor_mask=ignore_anchor_mask)

    def _sample_from_distmat(self, distmat: Tensor, labels: Tensor, *_: Any,
                             ignore_anchor_mask: Optional[Tensor] = None) -> TTripletsIds:
        if ignore_anchor_mask is None:
            ignore_anchor_mask = torch.zeros(len(distmat), dtype=torch.bool, device=distmat.device)

        all_ids_reduced = torch.arange(len(labels))[torch.logical_not(ignore_anchor_mask)]  # expect: GL116
        distmat_reduced = distmat[torch.logical_not(ignore_anchor_mask)]

        ids_highest_distance = torch.argsort(distmat_reduced, descending=True, dim=1)
        mask_same_label = labels[:, None] == labels[None, :]
        mask_same_label.fill_diagonal_(False)
        mask_same_label = mask_same_label[torch.logical_not(ignore_anchor_mask)]
        same_sorted = take_2d(mask_same_label, ids_highest_distance)
        idx_anch_pos_reduced, idx_pos_sorted = torch.nonzero(same_sorted, as_tuple=True)
        hardest_positive = ids_highest_distance[idx_anch_pos_reduced, idx_pos_sorted]
        idx_anch_pos = all_ids_reduced[idx_anch_pos_reduced]

        ids_smallest_distance = torch.flip(ids_highest_distance, dims=(1,))
        mask_diff_label = labels[:, None] != labels[None, :]
        mask_diff_label = mask_diff_label[torch.logical_not(ignore_anchor_mask)]
        diff_sorted = take_2d(mask_diff_label, ids_smallest_distance)
        idx_anch_neg_reduced, idx_neg_sorted = torch.nonzero(diff_sorted, as_tuple=True)
        hardest_negative = ids_smallest_distance[idx_anch_neg_reduced, idx_neg_sorted]
        idx_anch_neg = all_ids_reduced[idx_anch_neg_reduced]

        ids_a, ids_p, ids_n = [], [], []
        for idx_anch in all_ids_reduced:
            positives = hardest_positive[idx_anch_pos == idx_anch][self.positive_slice]
            negatives = hardest_negative[idx_anch_neg == idx_anch][self.negative_slice]
            i_pos, i_neg = list(zip(*torch.cartesian_prod(positives, negatives).tolist()))
            ids_a.extend([idx_anch.item()] * len(i_pos))
            ids_p.extend(i_pos)
            ids_n.extend(i_neg)
        return ids_a, ids_p, ids_n


class TripletLossWithMiner(nn.Module):
    def __init__(self, margin: float, miner: ITripletsMinerInBatch):
        super().__init__()
        self.margin = margin
        self.miner = miner

    def forward(self, features: Tensor, labels: Tensor) -> Tensor:
        ids_a, ids_p, ids_n = self.miner.sample(features=features, labels=labels)
        anchor, positive, negative = features[ids_a], features[ids_p], features[ids_n]
        d_ap = (anchor - positive).norm(dim=1)
        d_an = (anchor - negative).norm(dim=1)
        return torch.relu(d_ap - d_an + self.margin).mean()


class Extractor(nn.Module):
    def __init__(self, dim_in=8, dim_out=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim_in, 16), nn.ReLU(), nn.Linear(16, dim_out))

    def forward(self, x):
        return self.net(x)


def make_batches(n_batches, n_labels, n_instances, generator):
    centers = torch.randn(n_labels, 8, generator=generator) * 2
    batches = []
    for _ in range(n_batches):
        labels = torch.arange(n_labels).repeat_interleave(n_instances)
        x = centers[labels] + torch.randn(len(labels), 8, generator=generator)
        batches.append((x, labels))
    return batches


def train(model, criterion, batches, device, epochs=4):
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for epoch in range(epochs):
        for x, labels in batches:
            x, labels = x.to(device), labels.to(device)
            loss = criterion(model(x), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    generator = torch.Generator().manual_seed(0)
    batches = make_batches(8, n_labels=4, n_instances=4, generator=generator)
    model = Extractor().to(device)
    criterion = TripletLossWithMiner(margin=0.5, miner=NHardTripletsMiner(n_positive=2, n_negative=2))
    losses = train(model, criterion, batches, device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))


if __name__ == "__main__":
    main()
