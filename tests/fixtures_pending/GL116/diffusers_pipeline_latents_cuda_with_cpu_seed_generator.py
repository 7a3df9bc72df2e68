# source: https://github.com/huggingface/diffusers/issues/6501
# diffusers "Understanding pipelines, models and schedulers" (the deconstructed Stable Diffusion
# pipeline): the text encoder and the UNet are moved to `torch_device`, the seed is set with
# `generator = torch.manual_seed(0)` - which returns the default CPU generator - and the initial
# latents are drawn with `torch.randn((batch_size, unet.config.in_channels, height // 8, width // 8),
# generator=generator, device=torch_device)`. On a GPU this fails: "Expected a 'cuda' device type for
# generator but found 'cpu'". Here: a small text encoder and a conditional noise predictor trained
# for a few steps with a hand-written DDPM schedule stand in for the pretrained models, then the
# tutorial's denoising loop with classifier-free guidance.
# fails-on-cuda: Expected a 'cuda' device type for generator but found 'cpu'
import json
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

torch_device = "cuda" if torch.cuda.is_available() else "cpu"
VOCAB = {"<pad>": 0, "a": 1, "photograph": 2, "of": 3, "an": 4, "astronaut": 5, "riding": 6, "horse": 7, "cat": 8}


def tokenize(prompts, max_length=8):
    ids = [[VOCAB.get(w, 0) for w in p.lower().split()][:max_length] for p in prompts]
    return SimpleNamespace(input_ids=torch.tensor([row + [0] * (max_length - len(row)) for row in ids]))


class TextEncoder(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.emb = nn.Embedding(len(VOCAB), dim)

    def forward(self, input_ids):
        return (self.emb(input_ids).mean(1),)


class CondNoisePredictor(nn.Module):
    def __init__(self, channels=4, size=8, dim=16):
        super().__init__()
        self.config = SimpleNamespace(in_channels=channels, sample_size=size)
        n = channels * size * size
        self.net = nn.Sequential(nn.Linear(n + dim + 1, 128), nn.SiLU(), nn.Linear(128, n))

    def forward(self, sample, t, encoder_hidden_states):
        b = sample.shape[0]
        t = t.float().expand(b).unsqueeze(1) / 1000.0
        h = torch.cat([sample.flatten(1), encoder_hidden_states, t], 1)
        return SimpleNamespace(sample=self.net(h).view_as(sample))


class DDPMSchedule:
    def __init__(self, steps=1000):
        self.betas = torch.linspace(1e-4, 0.02, steps)
        self.alphas_cumprod = torch.cumprod(1.0 - self.betas, 0)
        self.timesteps = torch.arange(steps - 1, -1, -1)
        self.init_noise_sigma = 1.0

    def set_timesteps(self, n):
        self.timesteps = torch.linspace(len(self.betas) - 1, 0, n).long()

    def add_noise(self, x0, noise, t):
        a = self.alphas_cumprod.to(x0.device)[t].view(-1, 1, 1, 1)
        return a.sqrt() * x0 + (1 - a).sqrt() * noise

    def step(self, eps, t, x):
        a = self.alphas_cumprod[t].item()
        x0 = (x - (1 - a) ** 0.5 * eps) / a ** 0.5
        return SimpleNamespace(prev_sample=x0.clamp(-3, 3) * 0.9 + 0.1 * x)


torch.manual_seed(0)
text_encoder = TextEncoder().to(torch_device)
unet = CondNoisePredictor().to(torch_device)
scheduler = DDPMSchedule()

# a few fine-tuning steps so that the models are trained ones
opt = torch.optim.Adam(list(unet.parameters()) + list(text_encoder.parameters()), lr=2e-3)
prompts = ["a photograph of an astronaut riding a horse", "a photograph of a cat"]
targets = torch.randn(2, 4, 8, 8)
x0 = targets.to(torch_device)
losses = []
for step in range(150):
    ids = tokenize(prompts).input_ids.to(torch_device)
    noise = torch.randn_like(x0)
    t = torch.randint(0, 1000, (2,), device=torch_device)
    noisy = scheduler.add_noise(x0, noise, t)
    pred = unet(noisy, t.float().mean(), encoder_hidden_states=text_encoder(ids)[0]).sample
    loss = F.mse_loss(pred, noise)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())

prompt = ["a photograph of an astronaut riding a horse"]
height = 64  # default height of the tiny model
width = 64
num_inference_steps = 25
guidance_scale = 7.5
generator = torch.manual_seed(0)  # Seed generator to create the initial latent noise
batch_size = len(prompt)

text_input = tokenize(prompt)
with torch.no_grad():
    text_embeddings = text_encoder(text_input.input_ids.to(torch_device))[0]
uncond_input = tokenize([""] * batch_size)
uncond_embeddings = text_encoder(uncond_input.input_ids.to(torch_device))[0]
text_embeddings = torch.cat([uncond_embeddings, text_embeddings])

latents = torch.randn(  # expect: GL116
    (batch_size, unet.config.in_channels, height // 8, width // 8),
    generator=generator,
    device=torch_device,
)
latents = latents * scheduler.init_noise_sigma
scheduler.set_timesteps(num_inference_steps)
for t in scheduler.timesteps:
    latent_model_input = torch.cat([latents] * 2)
    with torch.no_grad():
        noise_pred = unet(latent_model_input, t.to(torch_device), encoder_hidden_states=text_embeddings).sample
    noise_pred_uncond, noise_pred_text = noise_pred.chunk(2)
    noise_pred = noise_pred_uncond + guidance_scale * (noise_pred_text - noise_pred_uncond)
    latents = scheduler.step(noise_pred, t, latents).prev_sample

print("latents", tuple(latents.shape), round(latents.float().std().item(), 3))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": sum(losses[-10:]) / 10, "device": latents.device.type}))
