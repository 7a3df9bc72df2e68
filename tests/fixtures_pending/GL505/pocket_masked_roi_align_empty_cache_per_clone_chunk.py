# source: https://github.com/fredzzhang/pocket/issues/10
# pocket ops/masked_roi_align.py (Feb 2020): `masked_roi_align(features, boxes, masks,
# output_size, ..., clone_limit)` clones the feature map once per box (`features[boxes[:, 0]]`),
# multiplies each clone by the box's mask and RoI-aligns it, `clone_limit` boxes at a time; after
# every chunk it calls `torch.cuda.empty_cache()` to hand the clones' memory back. The op runs in
# `MaskedRoIAlign.forward`, inside the interaction head's forward, so the cache is emptied several
# times in every training iteration of the LearningEngine. The author's own issue: "To ensure
# sufficient memory, `torch.cuda.empty_cache()` is called once the operation is finished. This has
# added a significant overhead to training time (30%)" (labelled wontfix then); later versions drop
# the call and bound the clones by a memory limit instead. Rebuilt without torchvision (RoI align
# reduced to an integer crop + adaptive average pooling), with a tiny interaction head on synthetic
# feature maps; the engine keeps pocket's `_on_each_iteration` structure.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def roi_pool(features, boxes, output_size):
    out = []
    for f, b in zip(features, boxes):
        x1, y1, x2, y2 = [int(v) for v in b[1:].tolist()]
        out.append(F.adaptive_avg_pool2d(f[:, y1:y2, x1:x2], output_size))
    return torch.stack(out)


def masked_roi_align(features, boxes, masks, output_size, clone_limit=4):
    num_boxes = len(boxes)
    output = torch.zeros(num_boxes, features.shape[1], *output_size, dtype=features.dtype, device=features.device)
    for start_idx in range(0, num_boxes, clone_limit):
        end_idx = min(start_idx + clone_limit, num_boxes)
        per_instance_features = features[boxes[start_idx:end_idx, 0].long()]
        output[start_idx:end_idx] = roi_pool(per_instance_features * masks[start_idx:end_idx], boxes[start_idx:end_idx], output_size)
        del per_instance_features
        torch.cuda.empty_cache()  # expect: GL505
    return output


class MaskedRoIAlign(nn.Module):
    def __init__(self, output_size, clone_limit):
        super().__init__()
        self.output_size = (output_size, output_size)
        self.clone_limit = clone_limit

    def forward(self, features, boxes, masks):
        return masked_roi_align(features, boxes, masks, self.output_size, self.clone_limit)


class InteractionHead(nn.Module):
    def __init__(self, channels=8, num_classes=3):
        super().__init__()
        self.backbone = nn.Conv2d(3, channels, 3, padding=1)
        self.pool = MaskedRoIAlign(output_size=2, clone_limit=4)
        self.cls = nn.Linear(channels * 4, num_classes)

    def forward(self, images, boxes, masks):
        features = F.relu(self.backbone(images))
        pooled = self.pool(features, boxes, masks)
        return self.cls(pooled.flatten(1))


class LearningEngine:
    def __init__(self, net, criterion, train_loader, optim_params, device):
        self._device = device
        self._net = net.to(device)
        self._criterion = criterion
        self._train_loader = train_loader
        self._optimizer = torch.optim.Adam(net.parameters(), **optim_params)
        self.losses = []

    def __call__(self, n):
        for epoch in range(n):
            self._net.train()
            for batch in self._train_loader:
                self._inputs = [t.to(self._device) for t in batch[:-1]]
                self._targets = batch[-1].to(self._device)
                self._on_each_iteration()

    def _on_each_iteration(self):
        self._optimizer.zero_grad()
        output = self._net(*self._inputs)
        loss = self._criterion(output, self._targets)
        loss.backward()
        self._optimizer.step()
        self.losses.append(loss.item())


def make_batches(n_batches, g, n_img=2, boxes_per_img=5, size=12):
    batches = []
    for _ in range(n_batches):
        images = torch.rand(n_img, 3, size, size, generator=g)
        idx = torch.arange(n_img).repeat_interleave(boxes_per_img).float()
        xy = torch.randint(0, size // 2, (len(idx), 2), generator=g).float()
        boxes = torch.cat([idx[:, None], xy, xy + size // 2], dim=1)
        masks = (torch.rand(len(idx), 1, size, size, generator=g) > 0.2).float()
        crops = torch.stack([images[int(b[0]), :, int(b[2]):int(b[4]), int(b[1]):int(b[3])].mean((1, 2)) for b in boxes])
        labels = crops.argmax(1)
        batches.append((images, boxes, masks, labels))
    return batches


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader = make_batches(12, torch.Generator().manual_seed(0))
    engine = LearningEngine(InteractionHead(), nn.CrossEntropyLoss(), train_loader, {"lr": 1e-2}, device)
    engine(15)
    first = sum(engine.losses[:6]) / 6
    last = sum(engine.losses[-6:]) / 6
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))
