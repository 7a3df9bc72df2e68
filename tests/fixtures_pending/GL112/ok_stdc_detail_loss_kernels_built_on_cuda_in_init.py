# source: https://github.com/MichaelFan01/STDC-Seg/blob/59ff37fbd693/loss/detail_loss.py (PRECISION31 A5)
# Hard negative (GL112, pending on the engine): STDC's boundary loss builds its fixed Laplacian
# kernel and its learnable fuse kernel on the GPU inside `__init__`
# (`.type(torch.cuda.FloatTensor)`, then `nn.Parameter(...)` of that CUDA tensor), and the training
# code calls it on CUDA tensors without moving the module. Nothing in it is on the host; `.cuda()`
# would move nothing. The engine takes an instance of a file module that is never moved for a
# module on the host, whatever its `__init__` placed. Here the placement is chosen at run time
# (`device_type`), so the script also trains on the CPU; the real file hard-codes
# `torch.cuda.FloatTensor` (GL102's, reported apart).
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
device_type = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor


class DetailAggregateLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.laplacian_kernel = torch.tensor(
            [-1, -1, -1, -1, 8, -1, -1, -1, -1], dtype=torch.float32).reshape(1, 1, 3, 3).requires_grad_(False).type(device_type)
        self.fuse_kernel = torch.nn.Parameter(
            torch.tensor([[6.0 / 10], [3.0 / 10], [1.0 / 10]], dtype=torch.float32).reshape(1, 3, 1, 1).type(device_type))

    def forward(self, boundary_logits, gtmasks):
        masks = gtmasks.unsqueeze(1).type(device_type)
        t1 = F.conv2d(masks, self.laplacian_kernel, padding=1).clamp(min=0)
        t2 = F.conv2d(masks, self.laplacian_kernel, stride=2, padding=1).clamp(min=0)
        t4 = F.conv2d(masks, self.laplacian_kernel, stride=4, padding=1).clamp(min=0)
        t2 = F.interpolate(t2, t1.shape[2:], mode="nearest")
        t4 = F.interpolate(t4, t1.shape[2:], mode="nearest")
        pyramid = torch.stack((t1, t2, t4), dim=1).squeeze(2)
        target = (F.conv2d(pyramid, self.fuse_kernel) > 0.1).float()
        return F.binary_cross_entropy_with_logits(boundary_logits, target)


if __name__ == "__main__":
    masks = (torch.rand(2, 16, 16) > 0.5).float()
    head = nn.Conv2d(1, 1, 3, padding=1)
    if torch.cuda.is_available():
        masks = masks.cuda()
        head = head.cuda()
    detailAggregateLoss = DetailAggregateLoss()
    optimizer = torch.optim.SGD(head.parameters(), lr=0.5)
    losses = []
    for step in range(30):
        optimizer.zero_grad()
        loss = detailAggregateLoss(head(masks.unsqueeze(1)), masks)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    device = next(head.parameters()).device.type
    print(f'GPULINT-TRAIN {{"first_loss": {losses[0]:.4f}, "last_loss": {losses[-1]:.4f}, "device": "{device}"}}')
