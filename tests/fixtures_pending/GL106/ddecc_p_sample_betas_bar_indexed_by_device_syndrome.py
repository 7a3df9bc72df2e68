# source: https://github.com/yoniLc/DDECC/pull/2
# DDECC (denoising diffusion error-correction codes): the DDECCT module keeps its noise schedule
# as plain tensor attributes (`self.betas`, `self.betas_bar = torch.cumsum(...)`, made in
# __init__, never registered as buffers), while the parity-check matrix is a buffer. Training
# (`loss`) draws its timesteps with `torch.randint` on the CPU, so indexing the schedule works.
# The reverse sampler `p_sample` takes the syndrome weight as the timestep: it is computed from
# `yt.to(self.device)` and the device `pc_matrix`, so `t` lives on the GPU, and
# `self.betas_bar[t]` fails: "RuntimeError: indices should be either on cpu or on the same device
# as the indexed tensor (cpu)" (the PR's report).
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


def sign_to_bin(x):
    return 0.5 * (1 - x)


def bin_to_sign(x):
    return 1 - 2 * x


class Code:
    def __init__(self):
        self.n, self.k = 7, 4
        self.pc_matrix = torch.tensor([[1, 1, 0, 1, 1, 0, 0],
                                       [1, 0, 1, 1, 0, 1, 0],
                                       [0, 1, 1, 1, 0, 0, 1]], dtype=torch.float32)


class DDECCT(nn.Module):
    def __init__(self, code, n_steps, sigma, device, d_model=32):
        super().__init__()
        self.n_steps = n_steps
        self.register_buffer("pc_matrix", code.pc_matrix.transpose(0, 1).float())
        self.device = device
        betas = torch.linspace(1e-3, 1e-2, n_steps)
        betas = betas * 0 + sigma
        self.betas = betas.view(-1, 1)  # expect: GL106
        self.betas_bar = torch.cumsum(self.betas, 0).view(-1, 1)  # expect: GL106
        self.time_embed = nn.Embedding(n_steps, d_model)
        self.src = nn.Linear(code.n + code.pc_matrix.size(0), d_model)
        self.out_fc = nn.Linear(d_model, code.n)

    def forward(self, y, time_step):
        magnitude = torch.abs(y)
        syndrome = torch.matmul(sign_to_bin(torch.sign(y)).long().float(), self.pc_matrix) % 2
        syndrome = bin_to_sign(syndrome)
        emb = self.src(torch.cat([magnitude, syndrome], -1))
        emb = F.gelu(emb * self.time_embed(time_step))
        return self.out_fc(emb)

    def p_sample(self, yt):
        sum_syndrome = (torch.matmul(sign_to_bin(torch.sign(yt.to(self.device))), self.pc_matrix) % 2).round().long().sum(-1)
        t = sum_syndrome
        noise_mul_pred = self(yt.to(self.device), sum_syndrome.to(self.device)).cpu()
        noise_add_pred = yt - torch.sign(-noise_mul_pred * torch.sign(yt))
        factor = torch.sqrt(self.betas_bar[t]) * self.betas[t] / (self.betas_bar[t] + self.betas[t])
        yt_1 = yt - noise_add_pred * factor
        yt_1[t == 0] = yt[t == 0]  # expect: GL116
        return yt_1, t

    def p_sample_loop(self, cur_y):
        for it in range(self.pc_matrix.shape[1]):
            cur_y, curr_synd = self.p_sample(cur_y)
        return cur_y

    def loss(self, x_0):
        t = torch.randint(0, self.n_steps, size=(x_0.shape[0] // 2 + 1,))
        t = torch.cat([t, self.n_steps - t - 1], dim=0)[:x_0.shape[0]].long()
        e = torch.randn_like(x_0)
        noise_factor = torch.sqrt(self.betas_bar[t]).to(x_0.device)
        yt = x_0 + e * noise_factor
        sum_syndrome = (torch.matmul(sign_to_bin(torch.sign(yt.to(self.device))), self.pc_matrix) % 2).sum(-1).long()
        output = self(yt.to(self.device), sum_syndrome.to(self.device))
        z_mul = yt * x_0
        return F.binary_cross_entropy_with_logits(output, sign_to_bin(torch.sign(z_mul.to(self.device))))


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    code = Code()
    model = DDECCT(code, n_steps=code.n - code.k + 1, sigma=0.05, device=device).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = last = None
    for step in range(40):
        x_0 = torch.ones(64, code.n, device=device)
        loss = model.loss(x_0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        first = loss.item() if first is None else first
        last = loss.item()
    model.eval()
    with torch.no_grad():
        y = torch.ones(16, code.n) + 0.5 * torch.randn(16, code.n)
        decoded = model.p_sample_loop(y)
        print("decoded bits", int((torch.sign(decoded) < 0).sum()))
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": device.type}))


if __name__ == "__main__":
    main()
