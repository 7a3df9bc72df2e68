# source: https://github.com/rishikksh20/VocGAN/pull/24
# utils/train.py `train(...)`: per batch the generator step (multi-resolution STFT loss, plus the
# adversarial loss once `step > discriminator_train_start_steps`), then `rep_discriminator`
# discriminator steps. For the progress bar's averages the loop appends `loss_g.item()`,
# `loss_d_avg` (a float after `.item()`) and `adv_loss` to lists; `adv_loss` starts each step as
# the float 0.0 and becomes a tensor with its graph once the discriminator is on, so from then on
# every step's graph stays alive in `avg_adv_loss` until the epoch ends ("severe memory
# accumulation"). The PR appends `adv_loss.item()`.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Generator(nn.Module):
    def __init__(self, n_mel=8, hop=4):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(n_mel, 16, 3, padding=1), nn.Tanh(), nn.Conv1d(16, hop, 3, padding=1))

    def forward(self, mel):
        out = self.net(mel)  # (B, hop, frames)
        return out.transpose(1, 2).reshape(mel.size(0), 1, -1)


class MultiScaleDiscriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.discs = nn.ModuleList([nn.Sequential(nn.Conv1d(1, 8, 5, padding=2), nn.LeakyReLU(0.2), nn.Conv1d(8, 1, 3, padding=1)) for _ in range(2)])
        self.pool = nn.AvgPool1d(2)

    def forward(self, x):
        out = []
        for i, d in enumerate(self.discs):
            if i > 0:
                x = self.pool(x)
            feats = d[0](x)
            out.append((feats, d(x)))
        return out


class PairDataset(Dataset):
    """Each item is a (mel, audio) pair for the generator and another for the discriminator."""

    def __init__(self, mel, audio):
        self.mel, self.audio = mel, audio

    def __len__(self):
        return len(self.mel)

    def __getitem__(self, i):
        j = (i * 7 + 3) % len(self.mel)
        return (self.mel[i], self.audio[i]), (self.mel[j], self.audio[j])


def stft_loss(fake, real):
    f, r = torch.stft(fake, 16, return_complex=True).abs(), torch.stft(real, 16, return_complex=True).abs()
    sc_loss = torch.norm(r - f) / torch.norm(r)
    mag_loss = torch.mean(torch.abs(torch.log(r + 1e-5) - torch.log(f + 1e-5)))
    return sc_loss, mag_loss


def train(trainloader, model_g, model_d, optim_g, optim_d, epochs, start_steps, rep_discriminator, lambda_adv, device):
    criterion = torch.nn.MSELoss()
    step = 0
    history = []
    model_g.train()
    model_d.train()
    for epoch in range(epochs):
        avg_g_loss = []
        avg_d_loss = []
        avg_adv_loss = []
        for (melG, audioG), (melD, audioD) in trainloader:
            melG, audioG = melG.to(device), audioG.to(device)
            melD, audioD = melD.to(device), audioD.to(device)
            # generator
            optim_g.zero_grad()
            fake_audio = model_g(melG)
            sc_loss, mag_loss = stft_loss(fake_audio.squeeze(1), audioG.squeeze(1))
            loss_g = sc_loss + mag_loss
            adv_loss = 0.0
            if step > start_steps:
                disc_fake = model_d(fake_audio)
                for feats_fake, score_fake in disc_fake:
                    adv_loss += criterion(score_fake, torch.ones_like(score_fake))
                adv_loss = adv_loss / len(disc_fake)
                loss_g += lambda_adv * adv_loss
            loss_g.backward()
            optim_g.step()

            # discriminator
            loss_d_avg = 0.0
            if step > start_steps:
                fake_audio = model_g(melD).detach()
                loss_d_sum = 0.0
                for _ in range(rep_discriminator):
                    optim_d.zero_grad()
                    disc_fake = model_d(fake_audio)
                    disc_real = model_d(audioD)
                    loss_d_real = 0.0
                    loss_d_fake = 0.0
                    for (_, score_fake), (_, score_real) in zip(disc_fake, disc_real):
                        loss_d_real += criterion(score_real, torch.ones_like(score_real))
                        loss_d_fake += criterion(score_fake, torch.zeros_like(score_fake))
                    loss_d = loss_d_real / len(disc_real) + loss_d_fake / len(disc_fake)
                    loss_d.backward()
                    optim_d.step()
                    loss_d_sum += loss_d
                loss_d_avg = loss_d_sum / rep_discriminator
                loss_d_avg = loss_d_avg.item()

            step += 1
            # logging
            loss_g = loss_g.item()
            avg_g_loss.append(loss_g)
            avg_d_loss.append(loss_d_avg)
            avg_adv_loss.append(adv_loss)  # expect: GL402
            history.append(sc_loss.item() + mag_loss.item())
        print("Avg : g %.04f d %.04f ad %.04f| step %d" % (
            sum(avg_g_loss) / len(avg_g_loss), sum(avg_d_loss) / len(avg_d_loss),
            float(sum(avg_adv_loss)) / len(avg_adv_loss), step))
    return history


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    mel = torch.randn(96, 8, 16)
    audio = torch.sin(torch.linspace(0, 60, 64)).repeat(96, 1, 1) * (1 + 0.1 * mel.mean(dim=(1, 2))).view(-1, 1, 1)
    trainloader = DataLoader(PairDataset(mel, audio), batch_size=16, shuffle=True)
    model_g = Generator().to(device)
    model_d = MultiScaleDiscriminator().to(device)
    optim_g = torch.optim.Adam(model_g.parameters(), lr=2e-3, betas=(0.5, 0.9))
    optim_d = torch.optim.Adam(model_d.parameters(), lr=1e-3, betas=(0.5, 0.9))
    history = train(trainloader, model_g, model_d, optim_g, optim_d, epochs=5, start_steps=8,
                    rep_discriminator=2, lambda_adv=0.1, device=device)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
