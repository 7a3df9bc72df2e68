# source: https://github.com/avinash-mishra/gan-style-transfer/issues/4
# MSG-Net style transfer (experiments/main.py + utils.py): the style and content batches are
# moved with .cuda() under args.cuda, and utils.subtract_imagenet_mean_batch() builds the mean
# image with `tensortype = type(batch.data)` / `tensortype(batch.data.size())`. With PyTorch 0.3
# that was torch.cuda.FloatTensor for a GPU batch; since 0.4 type() of any tensor is torch.Tensor,
# so the mean is a CPU tensor subtracted from the GPU batch ("Expected all tensors to be on the
# same device, but found at least two devices, cuda:0 and cpu!" in subtract_imagenet_mean_batch).
# fails-on-cuda: Expected all tensors to be on the same device
import argparse
import json

import torch
import torch.nn as nn
from torch.autograd import Variable


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    return features.bmm(features_t) / (ch * h * w)


def subtract_imagenet_mean_batch(batch):
    """Subtract ImageNet mean pixel-wise from a BGR image."""
    tensortype = type(batch.data)
    mean = tensortype(batch.data.size())
    mean[:, 0, :, :] = 103.939
    mean[:, 1, :, :] = 116.779
    mean[:, 2, :, :] = 123.680
    return batch - Variable(mean)  # expect: GL116


def preprocess_batch(batch):
    batch = batch.transpose(0, 1)
    (r, g, b) = torch.chunk(batch, 3)
    batch = torch.cat((b, g, r))
    return batch.transpose(0, 1)


class Vgg16(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, X):
        h1 = torch.relu(self.conv1(X / 255.0))
        h2 = torch.relu(self.conv2(h1))
        return [h1, h2]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1))

    def forward(self, x):
        return x + self.model(x / 255.0) * 50.0


def train(args):
    torch.manual_seed(args.seed)
    images = torch.rand(24, 3, 16, 16) * 255.0
    train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, torch.zeros(24)), batch_size=args.batch_size)
    style_model = Net()
    vgg = Vgg16()
    for p in vgg.parameters():
        p.requires_grad = False
    optimizer = torch.optim.Adam(style_model.parameters(), args.lr)
    mse_loss = torch.nn.MSELoss()
    if args.cuda:
        style_model.cuda()
        vgg.cuda()
    style = torch.rand(1, 3, 16, 16) * 255.0
    if args.cuda:
        style = style.cuda()
    style_v = Variable(style)
    style_v = subtract_imagenet_mean_batch(style_v)
    features_style = vgg(style_v)
    gram_style = [gram_matrix(y) for y in features_style]

    losses = []
    for e in range(args.epochs):
        style_model.train()
        for batch_id, (x, _) in enumerate(train_loader):
            n_batch = len(x)
            optimizer.zero_grad()
            x = Variable(preprocess_batch(x))
            if args.cuda:
                x = x.cuda()
            y = style_model(x)
            xc = Variable(x.data.clone())
            y = subtract_imagenet_mean_batch(y)
            xc = subtract_imagenet_mean_batch(xc)
            features_y = vgg(y)
            features_xc = vgg(xc)
            content_loss = args.content_weight * mse_loss(features_y[1], features_xc[1].detach())
            style_loss = 0.0
            for m in range(len(features_y)):
                gram_y = gram_matrix(features_y[m])
                gram_s = Variable(gram_style[m].data, requires_grad=False).repeat(n_batch, 1, 1)
                style_loss += args.style_weight * mse_loss(gram_y, gram_s)
            total_loss = content_loss + style_loss
            total_loss.backward()
            optimizer.step()
            losses.append(total_loss.item())
    return losses


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=8)
parser.add_argument("--batch-size", type=int, default=8)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--content-weight", type=float, default=1.0)
parser.add_argument("--style-weight", type=float, default=50.0)
parser.add_argument("--seed", type=int, default=42)
args = parser.parse_args()
args.cuda = torch.cuda.is_available()
losses = train(args)
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:3]) / 3, "last_loss": sum(losses[-3:]) / 3, "device": "cuda" if args.cuda else "cpu"}))
