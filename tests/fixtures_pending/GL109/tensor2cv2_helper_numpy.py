# source: https://github.com/chflame163/ComfyUI_FaceSimilarity/issues/10
# A conversion helper `tensor2cv2(image)` calls `image.numpy()`; the caller passes it the
# device output of the model.
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch
import torch.nn as nn


def tensor2cv2(image):
    npimage = image.numpy()  # expect: GL109
    return (np.clip(npimage, 0, 1) * 255).astype(np.uint8)[..., ::-1]


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 3), nn.Sigmoid()).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
losses = []
for step in range(50):
    pixels = torch.rand(64, 3, device=device)
    loss = nn.functional.mse_loss(model(pixels), 1 - pixels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

with torch.no_grad():
    out = model(torch.rand(16, 3, device=device)).reshape(4, 4, 3)
bgr = tensor2cv2(out)
print("bgr", bgr.shape)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
