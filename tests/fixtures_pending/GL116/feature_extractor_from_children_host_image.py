# source: https://github.com/ozanciga/self-supervised-histopathology/issues/9
# get_model_ciga() builds the network, loads the checkpoint and returns it moved to the GPU; the
# script then takes `feature_extractor = torch.nn.Sequential(*list(model.children())[:-1])` (its
# children live on the GPU) and feeds it an image converted to a tensor and unsqueezed, never
# moved ("Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the
# same"). The checkpoint is written by a short training run first.
# fails-on-cuda: should be the same
import json
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resnet_like():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2)
    )


def to_tensor(pic):
    return torch.from_numpy(pic).permute(2, 0, 1).float().div(255)


def get_model_ciga(path):
    model = resnet_like()
    state = torch.load(path, map_location=device)
    state_dict = state["state_dict"]
    for key in list(state_dict.keys()):
        state_dict[key.replace("model.", "")] = state_dict.pop(key)
    model.load_state_dict(state_dict)
    return model.to(device)


torch.manual_seed(0)
ckpt = os.path.join(tempfile.mkdtemp(), "tenpercent_resnet18.ckpt")
net = resnet_like().to(device)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
x = torch.rand(64, 3, 8, 8)
y = (x[:, 0].mean((1, 2)) > 0.5).long()
history = []
for step in range(40):
    loss = nn.functional.cross_entropy(net(x.to(device)), y.to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss.item())
torch.save({"state_dict": {"model." + k: v for k, v in net.state_dict().items()}}, ckpt)

model = get_model_ciga(ckpt)
feature_extractor = torch.nn.Sequential(*list(model.children())[:-1])
rgb_img = (np.random.rand(8, 8, 3) * 255).astype(np.uint8)
img = to_tensor(rgb_img).unsqueeze(0)
with torch.no_grad():
    features = feature_extractor(img)  # expect: GL116
print(features.shape)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
