# source: https://github.com/ujsyehao/yolov3-multigpu/issues/13
# A YOLOv3 training script whose evaluate() (test.py, run after every epoch by train.py) moves the
# images to the GPU, runs the model and non_max_suppression() there, and hands the device
# detections together with the host targets of the DataLoader to the helper
# get_batch_statistics() (utils.py). The helper compares each predicted label with the host
# target labels (`pred_label not in target_labels`) and computes IoUs against the host target
# boxes; the reporter's run stops there ("output with device cuda:2 doesn't match the desired device
# cpu"). Tiny detector on synthetic 16x16 images with one coloured square each.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __init__(self, n, img_size=16, num_classes=3, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.imgs, self.targets = [], []
        for _ in range(n):
            cls = int(torch.randint(0, num_classes, (1,), generator=g))
            w, h = [int(v) for v in torch.randint(4, 8, (2,), generator=g)]
            x0, y0 = int(torch.randint(0, img_size - w, (1,), generator=g)), int(torch.randint(0, img_size - h, (1,), generator=g))
            img = 0.1 * torch.randn(3, img_size, img_size, generator=g)
            img[cls, y0:y0 + h, x0:x0 + w] += 1.0
            self.imgs.append(img)
            box = torch.tensor([(x0 + w / 2) / img_size, (y0 + h / 2) / img_size, w / img_size, h / img_size])
            self.targets.append(torch.cat([torch.tensor([float(cls)]), box]))

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, i):
        return self.imgs[i], self.targets[i]

    @staticmethod
    def collate_fn(batch):
        imgs = torch.stack([b[0] for b in batch])
        targets = torch.stack([torch.cat([torch.tensor([float(i)]), b[1]]) for i, b in enumerate(batch)])
        return imgs, targets


class TinyYolo(nn.Module):
    def __init__(self, num_preds=4, num_classes=3):
        super().__init__()
        self.num_preds, self.num_classes = num_preds, num_classes
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten())
        self.head = nn.Linear(256, num_preds * (5 + num_classes))

    def forward(self, x):
        out = self.head(self.body(x)).view(x.size(0), self.num_preds, 5 + self.num_classes)
        return torch.cat([torch.sigmoid(out[..., :5]), torch.softmax(out[..., 5:], dim=-1)], dim=-1)


def xywh2xyxy(x):
    y = x.new(x.shape)
    y[..., 0] = x[..., 0] - x[..., 2] / 2
    y[..., 1] = x[..., 1] - x[..., 3] / 2
    y[..., 2] = x[..., 0] + x[..., 2] / 2
    y[..., 3] = x[..., 1] + x[..., 3] / 2
    return y


def bbox_iou(box1, box2):
    inter_x1 = torch.max(box1[:, 0], box2[:, 0])
    inter_y1 = torch.max(box1[:, 1], box2[:, 1])
    inter_x2 = torch.min(box1[:, 2], box2[:, 2])
    inter_y2 = torch.min(box1[:, 3], box2[:, 3])
    inter = torch.clamp(inter_x2 - inter_x1, min=0) * torch.clamp(inter_y2 - inter_y1, min=0)
    area1 = (box1[:, 2] - box1[:, 0]) * (box1[:, 3] - box1[:, 1])
    area2 = (box2[:, 2] - box2[:, 0]) * (box2[:, 3] - box2[:, 1])
    return inter / (area1 + area2 - inter + 1e-16)


def non_max_suppression(prediction, conf_thres=0.5):
    prediction = prediction.clone()
    prediction[..., :4] = xywh2xyxy(prediction[..., :4])
    output = [None for _ in range(len(prediction))]
    for image_i, image_pred in enumerate(prediction):
        image_pred = image_pred[image_pred[:, 4] >= conf_thres]
        if not image_pred.size(0):
            continue
        class_confs, class_preds = image_pred[:, 5:].max(1, keepdim=True)
        output[image_i] = torch.cat((image_pred[:, :5], class_confs, class_preds.float()), 1)
    return output


def get_batch_statistics(outputs, targets, iou_threshold):
    batch_metrics = []
    for sample_i in range(len(outputs)):
        if outputs[sample_i] is None:
            continue
        output = outputs[sample_i]
        pred_boxes, pred_scores, pred_labels = output[:, :4], output[:, 4], output[:, -1]
        true_positives = np.zeros(pred_boxes.shape[0])
        annotations = targets[targets[:, 0] == sample_i][:, 1:]
        target_labels = annotations[:, 0] if len(annotations) else []
        if len(annotations):
            detected_boxes = []
            target_boxes = annotations[:, 1:]
            for pred_i, (pred_box, pred_label) in enumerate(zip(pred_boxes, pred_labels)):
                if len(detected_boxes) == len(annotations):
                    break
                if pred_label not in target_labels:  # expect: GL116
                    continue
                iou, box_index = bbox_iou(pred_box.unsqueeze(0), target_boxes).max(0)  # expect: GL116
                if iou >= iou_threshold and box_index not in detected_boxes:
                    true_positives[pred_i] = 1
                    detected_boxes += [box_index]
        batch_metrics.append([true_positives, pred_scores, pred_labels])
    return batch_metrics


def evaluate(model, dataloader, device, iou_thres, conf_thres, img_size):
    model.eval()
    labels, sample_metrics = [], []
    for batch_i, (imgs, targets) in enumerate(dataloader):
        labels += targets[:, 1].tolist()
        targets[:, 2:] = xywh2xyxy(targets[:, 2:])
        targets[:, 2:] *= img_size
        imgs = imgs.to(device)
        with torch.no_grad():
            outputs = non_max_suppression(model(imgs) * torch.tensor([img_size] * 4 + [1] * 4, device=device), conf_thres)
        sample_metrics += get_batch_statistics(outputs, targets, iou_threshold=iou_thres)
    if not sample_metrics:
        return 0.0
    true_positives = np.concatenate([m[0] for m in sample_metrics], 0)
    model.train()
    return float(true_positives.mean())


def yolo_loss(pred, targets):
    target = targets[:, 1:]
    obj_target = torch.zeros_like(pred[..., 4])
    obj_target[:, 0] = 1.0
    box_loss = F.mse_loss(pred[:, 0, :4], target[:, 1:])
    obj_loss = F.binary_cross_entropy(pred[..., 4], obj_target)
    cls_loss = F.nll_loss(torch.log(pred[:, 0, 5:] + 1e-9), target[:, 0].long())
    return box_loss * 5 + obj_loss + cls_loss


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
train_set, valid_set = Squares(256, seed=0), Squares(32, seed=1)
train_loader = DataLoader(train_set, batch_size=32, shuffle=True, collate_fn=Squares.collate_fn, generator=torch.Generator().manual_seed(0))
valid_loader = DataLoader(valid_set, batch_size=16, shuffle=False, collate_fn=Squares.collate_fn)
model = TinyYolo().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
losses = []
for epoch in range(4):
    for imgs, targets in train_loader:
        imgs, targets = imgs.to(device), targets.to(device)
        loss = yolo_loss(model(imgs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    precision = evaluate(model, valid_loader, device, iou_thres=0.5, conf_thres=0.5, img_size=16)
    print(f"epoch {epoch} loss {losses[-1]:.3f} eval tp-rate {precision:.2f}")
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
