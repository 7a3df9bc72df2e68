# source: https://github.com/bubbliiiing/faster-rcnn-pytorch/issues/27
# Hard negative, the fix given in the thread: `fit_ont_epoch()` adds numbers to its running sums
# (`total_loss += total.item()`, ...), so no step's graph outlives the step. The validation sum
# (under `torch.no_grad()`) is kept as a tensor, as in the repository.
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class FasterRCNN(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.extractor = nn.Sequential(nn.Linear(12, 16), nn.ReLU())
        self.rpn = nn.Linear(16, 4 + 2)
        self.head = nn.Linear(16, 4 + num_classes)

    def forward(self, x):
        h = self.extractor(x)
        return self.rpn(h), self.head(h)


class FasterRCNNTrainer(nn.Module):
    def __init__(self, faster_rcnn, optimizer):
        super().__init__()
        self.faster_rcnn = faster_rcnn
        self.optimizer = optimizer

    def forward(self, imgs, bboxes, labels, scale):
        rpn_out, roi_out = self.faster_rcnn(imgs * scale)
        rpn_loc_loss = F.smooth_l1_loss(rpn_out[:, :4], bboxes)
        rpn_cls_loss = F.cross_entropy(rpn_out[:, 4:], (labels > 0).long())
        roi_loc_loss = F.smooth_l1_loss(roi_out[:, :4], bboxes)
        roi_cls_loss = F.cross_entropy(roi_out[:, 4:], labels)
        losses = [rpn_loc_loss, rpn_cls_loss, roi_loc_loss, roi_cls_loss]
        losses = losses + [sum(losses)]
        return losses

    def train_step(self, imgs, bboxes, labels, scale):
        self.optimizer.zero_grad()
        losses = self.forward(imgs, bboxes, labels, scale)
        losses[-1].backward()
        self.optimizer.step()
        return losses


def make_gen(rng, n_batches):
    for _ in range(n_batches):
        imgs = rng.standard_normal((8, 12)).astype(np.float32)
        boxes = np.tanh(imgs[:, :4]).astype(np.float32)
        labels = (imgs[:, 4] > 0).astype(np.int64) + (imgs[:, 5] > 0.5).astype(np.int64)
        yield imgs, boxes, labels


def fit_ont_epoch(net, epoch, epoch_size, epoch_size_val, gen, genval, Epoch, cuda):
    total_loss = 0
    rpn_loc_loss = 0
    rpn_cls_loss = 0
    roi_loc_loss = 0
    roi_cls_loss = 0
    val_toal_loss = 0
    for iteration, batch in enumerate(gen):
        if iteration >= epoch_size:
            break
        imgs, boxes, labels = batch[0], batch[1], batch[2]
        with torch.no_grad():
            imgs = torch.from_numpy(imgs).type(torch.FloatTensor)
            boxes = torch.from_numpy(boxes)
            labels = torch.from_numpy(labels)
            if cuda:
                imgs, boxes, labels = imgs.cuda(), boxes.cuda(), labels.cuda()
        losses = train_util.train_step(imgs, boxes, labels, 1)
        rpn_loc, rpn_cls, roi_loc, roi_cls, total = losses
        total_loss += total.item()
        rpn_loc_loss += rpn_loc.item()
        rpn_cls_loss += rpn_cls.item()
        roi_loc_loss += roi_loc.item()
        roi_cls_loss += roi_cls.item()
    print("Epoch:%d/%d total %.4f" % (epoch + 1, Epoch, total_loss / (iteration + 1)))

    for iteration, batch in enumerate(genval):
        if iteration >= epoch_size_val:
            break
        imgs, boxes, labels = batch[0], batch[1], batch[2]
        with torch.no_grad():
            imgs = torch.from_numpy(imgs).type(torch.FloatTensor)
            boxes = torch.from_numpy(boxes)
            labels = torch.from_numpy(labels)
            if cuda:
                imgs, boxes, labels = imgs.cuda(), boxes.cuda(), labels.cuda()
            train_util.optimizer.zero_grad()
            losses = train_util.forward(imgs, boxes, labels, 1)
            _, _, _, _, val_total = losses
            val_toal_loss += val_total
    return total_loss / (iteration + 1), val_toal_loss.item() / (iteration + 1)


if __name__ == "__main__":
    torch.manual_seed(0)
    Cuda = torch.cuda.is_available()
    model = FasterRCNN(num_classes=3)
    net = model.train()
    if Cuda:
        net = net.cuda()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
    train_util = FasterRCNNTrainer(model, optimizer)
    epoch_losses = []
    for epoch in range(4):
        rng = np.random.default_rng(0)
        gen = make_gen(rng, 6)
        genval = make_gen(np.random.default_rng(1), 2)
        train_loss, val_loss = fit_ont_epoch(net, epoch, 6, 2, gen, genval, 4, Cuda)
        epoch_losses.append(train_loss)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": epoch_losses[0], "last_loss": epoch_losses[-1], "device": "cuda" if Cuda else "cpu"}))
