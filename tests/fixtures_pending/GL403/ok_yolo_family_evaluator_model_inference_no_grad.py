# source: https://github.com/yjh0410/PyTorch_YOLO-Family/blob/e46bef06c4a3/evaluator/vocapi_evaluator.py (PRECISION31 A6)
# Hard negative (GL403, pending): the detector's `forward` runs `inference_single_image`, decorated
# `@torch.no_grad()`, whenever `trainable` is False, and the training script sets
# `model_eval.trainable = False` (eval.py builds the model with `trainable=False`) before
# `evaluator.evaluate(model_eval)`. The evaluator's loop over the test images therefore records no
# graph, though it has no `no_grad` of its own. In the project the model classes live in
# models/yolo/*.py and the evaluator sees only its parameter `net`; this one-file version (model,
# evaluator and training loop together) is reported too: GL403 does not read a forward that picks
# its own grad mode.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class YOLOv2(nn.Module):
    def __init__(self, device, num_classes=2, trainable=False):
        super().__init__()
        self.device = device
        self.trainable = trainable
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.pred = nn.Conv2d(8, 1 + num_classes, 1)

    @torch.no_grad()
    def inference_single_image(self, x):
        out = self.pred(self.backbone(x))[0]
        scores = out[0].sigmoid().flatten()
        cls_inds = out[1:].argmax(dim=0).flatten()
        keep = scores > 0.5
        return scores[keep].cpu().numpy(), scores[keep].cpu().numpy(), cls_inds[keep].cpu().numpy()

    def forward(self, x, targets=None):
        if not self.trainable:
            return self.inference_single_image(x)
        out = self.pred(self.backbone(x))
        return F.binary_cross_entropy_with_logits(out[:, 0], targets)


class VOCAPIEvaluator:
    def __init__(self, device, images):
        self.device = device
        self.images = images
        self.all_boxes = []

    def evaluate(self, net):
        net.eval()
        num_images = len(self.images)
        for i in range(num_images):
            x = self.images[i:i + 1].to(self.device)
            bboxes, scores, cls_inds = net(x)
            self.all_boxes.append((bboxes, scores, cls_inds))
        self.map = sum(len(s) for _, s, _ in self.all_boxes) / num_images


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
images = torch.randn(16, 3, 8, 8)
targets = (images[:, 0, ::2, ::2] > 0).float()
model = YOLOv2(device, trainable=True).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
evaluator = VOCAPIEvaluator(device, images[:4])
losses = []
for epoch in range(3):
    model.trainable = True
    model.train()
    for it in range(10):
        optimizer.zero_grad()
        loss = model(images.to(device), targets.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model_eval = model
    model_eval.trainable = False
    model_eval.eval()
    evaluator.evaluate(model_eval)
    print("epoch", epoch, "detections per image", evaluator.map)
print(f'GPULINT-TRAIN {{"first_loss": {losses[0]:.4f}, "last_loss": {losses[-1]:.4f}, "device": "{device.type}"}}')
