# source: https://github.com/yhenon/pytorch-retinanet/pull/220
# A RetinaNet-style FocalLoss module walks the batch image by image and collects one
# classification and one regression loss per image, then stacks the two lists. For an image
# without any box (all annotation rows padded with -1) the CUDA branch appends a regression loss
# made with `torch.tensor(0).float()`, which stays on the host, while every other image appends a
# loss on the GPU: `torch.stack(regression_losses)` then fails on a GPU as soon as one image of a
# batch has no box. The PR added the missing `.cuda()` to that branch.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def calc_iou(a, b):
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    iw = torch.min(a[:, 2:3], b[:, 2]) - torch.max(a[:, 0:1], b[:, 0])
    ih = torch.min(a[:, 3:4], b[:, 3]) - torch.max(a[:, 1:2], b[:, 1])
    inter = iw.clamp(min=0) * ih.clamp(min=0)
    union = ((a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])).unsqueeze(1) + area - inter
    return inter / union.clamp(min=1e-8)


class FocalLoss(nn.Module):
    def forward(self, classifications, regressions, anchors, annotations, alpha=0.25, gamma=2.0):
        classification_losses = []
        regression_losses = []
        for j in range(classifications.shape[0]):
            classification = classifications[j].clamp(1e-4, 1.0 - 1e-4)
            regression = regressions[j]
            bbox_annotation = annotations[j]
            bbox_annotation = bbox_annotation[bbox_annotation[:, 4] != -1]

            if bbox_annotation.shape[0] == 0:
                if torch.cuda.is_available():
                    alpha_factor = torch.ones(classification.shape).cuda() * alpha
                    focal_weight = (1.0 - alpha_factor) * classification.pow(gamma)
                    bce = -torch.log(1.0 - classification)
                    classification_losses.append((focal_weight * bce).sum())
                    regression_losses.append(torch.tensor(0).float())  # expect: GL105
                else:
                    alpha_factor = torch.ones(classification.shape) * alpha
                    focal_weight = (1.0 - alpha_factor) * classification.pow(gamma)
                    bce = -torch.log(1.0 - classification)
                    classification_losses.append((focal_weight * bce).sum())
                    regression_losses.append(torch.tensor(0).float())
                continue

            iou = calc_iou(anchors, bbox_annotation[:, :4])
            iou_max, iou_argmax = iou.max(dim=1)
            targets = torch.full_like(classification, -1.0)
            targets[iou_max < 0.4, :] = 0
            positive = iou_max >= 0.5
            num_positive = positive.sum().clamp(min=1).float()
            assigned = bbox_annotation[iou_argmax]
            targets[positive, :] = 0
            targets[positive, assigned[positive, 4].long()] = 1

            alpha_factor = torch.where(targets == 1.0, alpha, 1.0 - alpha)
            focal_weight = torch.where(targets == 1.0, 1.0 - classification, classification)
            focal_weight = alpha_factor * focal_weight.pow(gamma)
            bce = -(targets * torch.log(classification) + (1.0 - targets) * torch.log(1.0 - classification))
            cls_loss = torch.where(targets != -1.0, focal_weight * bce, torch.zeros_like(bce))
            classification_losses.append(cls_loss.sum() / num_positive)

            if positive.sum() > 0:
                box_targets = assigned[positive, :4] - anchors[positive]
                diff = (box_targets - regression[positive]).abs()
                regression_losses.append(torch.where(diff <= 1.0 / 9.0, 4.5 * diff.pow(2), diff - 0.5 / 9.0).mean())
            else:
                regression_losses.append(torch.zeros((), device=regression.device))

        return torch.stack(classification_losses).mean(), torch.stack(regression_losses).mean()


class TinyRetinaHead(nn.Module):
    def __init__(self, in_features=6, num_classes=2):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(in_features, 32), nn.ReLU())
        self.cls = nn.Linear(32, num_classes)
        self.reg = nn.Linear(32, 4)

    def forward(self, feats):
        h = self.body(feats)
        return torch.sigmoid(self.cls(h)), self.reg(h)


torch.manual_seed(0)
grid = torch.arange(4, dtype=torch.float32)
cy, cx = torch.meshgrid(grid, grid, indexing="ij")
anchors = torch.stack([cx.flatten(), cy.flatten(), cx.flatten() + 1.5, cy.flatten() + 1.5], dim=1)
num_images, num_anchors = 12, anchors.shape[0]
annotations = torch.full((num_images, 2, 5), -1.0)
for i in range(num_images):
    if i % 4 == 3:
        continue  # an image without any box
    k = i % num_anchors
    annotations[i, 0] = torch.tensor([anchors[k, 0], anchors[k, 1], anchors[k, 2], anchors[k, 3], float(i % 2)])
feats = torch.randn(num_images, num_anchors, 6)
for i in range(num_images):
    feats[i, :, 0] += 2.0 * (annotations[i, 0, 4] >= 0).float()

model = TinyRetinaHead().to(device)
criterion = FocalLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
anchors = anchors.to(device)
losses = []
for step in range(30):
    for start in range(0, num_images, 4):
        x = feats[start:start + 4].to(device)
        ann = annotations[start:start + 4].to(device)
        classification, regression = model(x)
        cls_loss, reg_loss = criterion(classification, regression, anchors, ann)
        loss = cls_loss + reg_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
