# source: https://github.com/microsoft/TRELLIS/issues/162
# microsoft/TRELLIS#162 ("nan in my own training scripts"): a reader fine-tunes the SLat VAE with his
# own loop: `self.encoder = models.from_pretrained(".../slat_enc_swin8_B_64l8_fp16")` and
# `self.decoder_gs = models.from_pretrained(".../slat_dec_gs_swin8_B_64l8gs32_fp16")`, whose
# configs set `use_fp16: true`, so each constructor runs `convert_to_fp16()` on its transformer
# blocks (only the input and output layers stay fp32); then
# `AdamW([{encoder params}, {decoder_gs params}], lr=1e-4)`, `loss.backward()` and
# `optimizer.step()` with no loss scaling and no fp32 master weights: the logged fp16 gradients of
# the blocks are mostly zero and all parameters become NaN after the first update. Shrunk to
# vector features; the checkpoint configs are inlined.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import autograd

FP16_TYPES = (nn.Linear, nn.Conv1d)


def convert_module_to_f16(l):
    if isinstance(l, FP16_TYPES):
        for p in l.parameters():
            p.data = p.data.half()


class SLatEncoder(nn.Module):
    def __init__(self, in_channels=8, model_channels=32, latent_channels=4, num_blocks=2, use_fp16=False):
        super().__init__()
        self.use_fp16 = use_fp16
        self.dtype = torch.float16 if use_fp16 else torch.float32
        self.input_layer = nn.Linear(in_channels, model_channels)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(model_channels, model_channels), nn.GELU()) for _ in range(num_blocks)])
        self.out_layer = nn.Linear(model_channels, 2 * latent_channels)
        if use_fp16:
            self.convert_to_fp16()  # expect: GL206

    def convert_to_fp16(self):
        self.blocks.apply(convert_module_to_f16)

    def forward(self, feats):
        h = self.input_layer(feats).type(self.dtype)
        for block in self.blocks:
            h = h + block(h)
        mean, logvar = self.out_layer(h.type(feats.dtype)).chunk(2, dim=-1)
        return mean


class SLatGaussianDecoder(nn.Module):
    def __init__(self, latent_channels=4, model_channels=32, out_channels=8, num_blocks=2, use_fp16=False):
        super().__init__()
        self.dtype = torch.float16 if use_fp16 else torch.float32
        self.input_layer = nn.Linear(latent_channels, model_channels)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(model_channels, model_channels), nn.GELU()) for _ in range(num_blocks)])
        self.out_layer = nn.Linear(model_channels, out_channels)
        if use_fp16:
            self.convert_to_fp16()  # expect: GL206

    def convert_to_fp16(self):
        self.blocks.apply(convert_module_to_f16)

    def forward(self, z):
        h = self.input_layer(z).type(self.dtype)
        for block in self.blocks:
            h = h + block(h)
        return self.out_layer(h.type(z.dtype))


MODELS = {"SLatEncoder": SLatEncoder, "SLatGaussianDecoder": SLatGaussianDecoder}
PRETRAINED = {
    "JeffreyXiang/TRELLIS-image-large/ckpts/slat_enc_swin8_B_64l8_fp16": {"name": "SLatEncoder", "args": {"use_fp16": True}},
    "JeffreyXiang/TRELLIS-image-large/ckpts/slat_dec_gs_swin8_B_64l8gs32_fp16": {"name": "SLatGaussianDecoder", "args": {"use_fp16": True}},
}


def from_pretrained(path):
    config = PRETRAINED[path]
    return MODELS[config["name"]](**config["args"])


class SLatVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = from_pretrained("JeffreyXiang/TRELLIS-image-large/ckpts/slat_enc_swin8_B_64l8_fp16")
        self.decoder_gs = from_pretrained("JeffreyXiang/TRELLIS-image-large/ckpts/slat_dec_gs_swin8_B_64l8gs32_fp16")

    def forward(self, feats, renders):
        recon = self.decoder_gs(self.encoder(feats))
        return {"loss": F.mse_loss(recon, renders)}


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    feats_all = torch.randn(64, 8)
    renders_all = torch.tanh(feats_all @ torch.randn(8, 8))
    train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(feats_all, renders_all), batch_size=16, shuffle=True)
    model = SLatVAE().to(device)
    lr = 1.0e-4
    epochs = 4
    optimizer = torch.optim.AdamW([{"params": model.encoder.parameters(), "lr": lr}, {"params": model.decoder_gs.parameters(), "lr": lr}])
    losses = []
    for epoch in range(epochs):
        for i, (feats, renders) in enumerate(train_loader):
            with autograd.detect_anomaly(check_nan=False):
                feats = feats.to(device)
                renders = renders.to(device)
                res = model(feats, renders)
                loss = res["loss"]
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))


if __name__ == "__main__":
    main()
