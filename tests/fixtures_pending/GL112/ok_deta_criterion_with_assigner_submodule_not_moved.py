# source: https://github.com/IDEA-Research/detrex/pull/295 (look-alike of the same code)
# DETA's criterion holds its Stage1Assigner (an nn.Module with no parameter and no buffer, only
# thresholds) and is built beside the model, never moved: it has nothing to move, and with the
# PR's `torch.arange(len(anchors), device=anchors.device)` everything it makes follows the
# anchors. Correct code: the criterion receives the model's outputs on the device and runs there.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def box_iou(boxes1, boxes2):
    area1 = (boxes1[:, 2] - boxes1[:, 0]) * (boxes1[:, 3] - boxes1[:, 1])
    area2 = (boxes2[:, 2] - boxes2[:, 0]) * (boxes2[:, 3] - boxes2[:, 1])
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = area1[:, None] + area2 - inter
    return inter / union, union


def box_cxcywh_to_xyxy(x):
    cx, cy, w, h = x.unbind(-1)
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=-1)


class Stage1Assigner(nn.Module):
    def __init__(self, t_low=0.3, t_high=0.5):
        super().__init__()
        self.t_low = t_low
        self.t_high = t_high

    def anchor_matcher(self, iou):
        matched_vals, matched_idxs = iou.max(dim=0)
        matched_labels = torch.zeros_like(matched_idxs)
        matched_labels[matched_vals >= self.t_high] = 1
        matched_labels[(matched_vals >= self.t_low) & (matched_vals < self.t_high)] = -1
        return matched_idxs, matched_labels

    def forward(self, outputs, targets):
        indices = []
        for b in range(len(targets)):
            anchors = outputs["anchors"][b]
            iou, _ = box_iou(box_cxcywh_to_xyxy(targets[b]["boxes"]), box_cxcywh_to_xyxy(anchors.detach()))
            matched_idxs, matched_labels = self.anchor_matcher(iou)
            all_pr_inds = torch.arange(len(anchors), device=anchors.device)
            pos_pr_inds = all_pr_inds[matched_labels == 1]
            pos_gt_inds = matched_idxs[pos_pr_inds]
            indices.append((pos_pr_inds.to(anchors.device), pos_gt_inds.to(anchors.device)))
        return indices


class ProposalHead(nn.Module):
    def __init__(self, n_anchors=16):
        super().__init__()
        grid = torch.linspace(0.15, 0.85, 4)
        cx, cy = torch.meshgrid(grid, grid, indexing="ij")
        self.register_buffer("base", torch.stack([cx.flatten(), cy.flatten(), torch.full((16,), 0.3), torch.full((16,), 0.3)], 1))
        self.feat = nn.Linear(8, 32)
        self.score = nn.Linear(32, n_anchors)

    def forward(self, x):
        h = F.relu(self.feat(x))
        logits = self.score(h)
        anchors = self.base.unsqueeze(0).expand(x.shape[0], -1, -1)
        return {"pred_logits": logits, "anchors": anchors}


class Criterion(nn.Module):
    def __init__(self):
        super().__init__()
        self.assigner = Stage1Assigner()

    def forward(self, outputs, targets):
        indices = self.assigner(outputs, targets)
        labels = torch.zeros_like(outputs["pred_logits"])
        for b, (pr, _gt) in enumerate(indices):
            labels[b, pr] = 1.0
        return F.binary_cross_entropy_with_logits(outputs["pred_logits"], labels)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = ProposalHead().to(device)
criterion = Criterion()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
feats = torch.randn(4, 8)
targets = [{"boxes": torch.tensor([[0.15 + 0.23 * (i % 4), 0.15 + 0.23 * (i // 4 % 4), 0.3, 0.3]]).to(device)} for i in range(4)]
losses = []
for step in range(8):
    outputs = model(feats.to(device))
    loss = criterion(outputs, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
