"""PyTorch-GAN-style DCGAN/MLP GAN: legacy typed tensors (cuda.FloatTensor), BCELoss, two optimizers."""
import numpy as np
import torch
import torch.nn as nn

cuda = True if torch.cuda.is_available() else False
Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
latent_dim, img_shape = 8, (1, 8, 8)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(latent_dim, 64), nn.LeakyReLU(0.2, inplace=True), nn.Linear(64, int(np.prod(img_shape))), nn.Tanh())

    def forward(self, z):
        return self.model(z).view(z.size(0), *img_shape)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(int(np.prod(img_shape)), 32), nn.LeakyReLU(0.2, inplace=True), nn.Linear(32, 1), nn.Sigmoid())

    def forward(self, img):
        return self.model(img.view(img.size(0), -1))


adversarial_loss = torch.nn.BCELoss()
generator, discriminator = Generator(), Discriminator()
if cuda:
    generator.cuda()
    discriminator.cuda()
    adversarial_loss.cuda()
optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
dataset = [torch.rand(8, *img_shape) * 2 - 1 for _ in range(4)]
for epoch in range(2):
    for i, imgs in enumerate(dataset):
        valid = Tensor(imgs.size(0), 1).fill_(1.0)
        fake = Tensor(imgs.size(0), 1).fill_(0.0)
        real_imgs = imgs.type(Tensor)
        optimizer_G.zero_grad()
        z = Tensor(np.random.normal(0, 1, (imgs.shape[0], latent_dim)))
        gen_imgs = generator(z)
        g_loss = adversarial_loss(discriminator(gen_imgs), valid)
        g_loss.backward()
        optimizer_G.step()
        optimizer_D.zero_grad()
        real_loss = adversarial_loss(discriminator(real_imgs), valid)
        fake_loss = adversarial_loss(discriminator(gen_imgs.detach()), fake)
        d_loss = (real_loss + fake_loss) / 2
        d_loss.backward()
        optimizer_D.step()
    print("[Epoch %d] [D loss: %f] [G loss: %f]" % (epoch, d_loss.item(), g_loss.item()))
