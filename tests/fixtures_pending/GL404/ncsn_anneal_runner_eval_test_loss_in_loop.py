# source: https://github.com/ermongroup/ncsn/issues/2
# runners/anneal_runner.py: AnnealRunner.train() runs the score network over the data loader and,
# every 100 steps, puts it in eval mode to log the denoising score-matching loss on a test batch
# under torch.no_grad(); it never calls score.train() again, so the model stays in eval mode for
# the rest of training ("Model in eval forever after the first log on validation").
import json

import torch
import torch.nn as nn


def anneal_dsm_score_estimation(scorenet, samples, labels, sigmas):
    used_sigmas = sigmas[labels].view(samples.shape[0], *([1] * len(samples.shape[1:])))
    perturbed_samples = samples + torch.randn_like(samples) * used_sigmas
    target = -(perturbed_samples - samples) / (used_sigmas ** 2)
    scores = scorenet(perturbed_samples, labels)
    loss = 0.5 * ((scores - target) ** 2).sum(dim=-1) * used_sigmas.squeeze(-1) ** 2
    return loss.mean(dim=0)


class CondScoreNet(nn.Module):
    def __init__(self, dim=4, n_sigmas=4):
        super().__init__()
        self.emb = nn.Embedding(n_sigmas, 32)
        self.net = nn.Sequential(nn.Linear(dim, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.1))
        self.out = nn.Linear(32, dim)

    def forward(self, x, labels):
        return self.out(self.net(x) + self.emb(labels))


class AnnealRunner:
    def __init__(self, config):
        self.config = config

    def train(self):
        device = self.config["device"]
        torch.manual_seed(0)
        data = torch.randn(256, 4) @ torch.randn(4, 4) * 0.5
        dataloader = [data[i:i + 32] for i in range(0, 256, 32)]
        test_X = torch.randn(32, 4) @ torch.randn(4, 4) * 0.5
        score = CondScoreNet().to(device)
        optimizer = torch.optim.Adam(score.parameters(), lr=1e-3)
        sigmas = torch.tensor([1.0, 0.5, 0.25, 0.1], device=device)
        step = 0
        losses = []
        score.train()
        for epoch in range(self.config["n_epochs"]):
            for i, X in enumerate(dataloader):
                step += 1
                X = X.to(device)
                labels = torch.randint(0, len(sigmas), (X.shape[0],), device=X.device)
                loss = anneal_dsm_score_estimation(score, X, labels, sigmas)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())

                if step % 10 == 0:
                    score.eval()  # expect: GL404
                    test_X = test_X.to(device)
                    test_labels = torch.randint(0, len(sigmas), (test_X.shape[0],), device=test_X.device)
                    with torch.no_grad():
                        test_dsm_loss = anneal_dsm_score_estimation(score, test_X, test_labels, sigmas)
                    print("step", step, "test_dsm_loss", test_dsm_loss.item())
        return losses


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
losses = AnnealRunner({"device": device, "n_epochs": 4}).train()
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
