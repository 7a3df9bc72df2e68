# source: https://github.com/Novartis/torchsurv/issues/113
# A Kaplan-Meier estimator keeps the sorted times and survival estimates of its inputs on `self`
# (CUDA here: the event/time labels of a survival model trained on the GPU); its predict() method
# prepends `-inf` and `1.0` to them with `torch.tensor([inf])` / `torch.ones(1)` made on the host,
# so `torch.cat` meets a host and a CUDA tensor. The report's patch: `device=self.device` on both.
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class KaplanMeierEstimator:
    def __call__(self, event, time, censoring_dist=False):
        order = torch.argsort(time)
        self.time = time[order]
        observed = (1 - event[order]) if censoring_dist else event[order]
        n = time.shape[0]
        at_risk = n - torch.arange(n, device=time.device)
        self.km_est = torch.cumprod(1.0 - observed.float() / at_risk.float(), dim=0)
        self.device = time.device

    def predict(self, new_time):
        ref_time = torch.cat((-torch.tensor([float("inf")]), self.time), dim=0)  # expect: GL116
        km_est_ = torch.cat((torch.ones(1), self.km_est))  # expect: GL116
        idx = torch.searchsorted(ref_time, new_time, right=True) - 1
        return km_est_[idx]


def get_ipcw(event, time):
    km = KaplanMeierEstimator()
    km(event, time, censoring_dist=True)
    ct = km.predict(time).clamp(min=1e-3)
    return 1.0 / ct


def cox_loss(log_hz, event, time, weight):
    order = torch.argsort(time, descending=True)
    log_hz, event, weight = log_hz[order], event[order].float(), weight[order]
    log_cumsum = torch.logcumsumexp(log_hz, dim=0)
    return -(weight * event * (log_hz - log_cumsum)).sum() / event.sum().clamp(min=1.0)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(256, 6)
risk = x[:, 0] - 0.5 * x[:, 1]
time = torch.distributions.Exponential(torch.exp(risk)).sample()
event = (torch.rand(256) < 0.7).long()
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(30):
    idx = torch.randint(0, 256, (64,))
    xb, eb, tb = x[idx].to(device), event[idx].to(device), time[idx].to(device)
    weight = get_ipcw(eb, tb)
    loss = cox_loss(model(xb).squeeze(1), eb, tb, weight)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
