# Hard negative (pending: GL105 reports it today, PRECISION17 A1): a YOLOv3 loss layer that builds
# its targets on the CPU on purpose ("it works faster on CPU than on GPU"). forward() moves the
# predicted boxes to the host through a helper, `convert2cpu(x)` =
# `torch.FloatTensor(x.size()).copy_(x)`, so `cur_ious = torch.zeros(n)` in build_targets meets only
# host tensors; the masks it returns are moved back with `.to(self.device)`. GL105 reads the
# helper's result as "where its input is" (the device) and reports `torch.zeros(n)`.
# source: https://github.com/ZQPei/deep_sort_pytorch (detector/YOLOv3/yolo_layer.py, yolo_utils.py)
import json

import torch
import torch.nn as nn


def convert2cpu(gpu_matrix):
    return torch.FloatTensor(gpu_matrix.size()).copy_(gpu_matrix)


def box_ious(boxes, gt):
    lo = torch.max(boxes[:2] - boxes[2:] / 2, gt[:2] - gt[2:] / 2)
    hi = torch.min(boxes[:2] + boxes[2:] / 2, gt[:2] + gt[2:] / 2)
    inter = (hi - lo).clamp(min=0).prod(0)
    return inter / (boxes[2:].prod(0) + gt[2:].prod(0) - inter)


class YoloLayer(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device
        self.ignore_thresh = 0.5
        self.head = nn.Linear(8, 5)

    def build_targets(self, pred_boxes, target, n):
        cur_ious = torch.zeros(n)  # GL105 reports this line today (A1)
        tbox = target.view(-1, 4).to("cpu")
        for t in range(tbox.size(0)):
            gt = tbox[t].repeat(n, 1).t()
            cur_ious = torch.max(cur_ious, box_ious(pred_boxes.t(), gt))
        conf_mask = torch.ones(n)
        conf_mask[cur_ious > self.ignore_thresh] = 0
        return conf_mask

    def forward(self, feats, target):
        output = self.head(feats)
        n = output.size(0)
        pred_boxes = torch.sigmoid(output[:, :4]) + 0.1
        conf = torch.sigmoid(output[:, 4])
        host_boxes = convert2cpu(pred_boxes.detach())
        conf_mask = self.build_targets(host_boxes, target.detach(), n).to(self.device)
        return ((conf * conf_mask) ** 2).sum() / n + ((pred_boxes - 0.5) ** 2).mean()


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
layer = YoloLayer(device).to(device)
optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
losses = []
for step in range(5):
    feats = torch.randn(32, 8, device=device)
    target = torch.rand(2, 4, device=device) * 0.5 + 0.25
    loss = layer(feats, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": layer.head.weight.device.type}))
