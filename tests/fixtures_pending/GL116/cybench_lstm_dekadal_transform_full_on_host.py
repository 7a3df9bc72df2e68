# source: https://github.com/WUR-AI/AgML-CY-Bench/pull/236
# AgML CY-Bench (crop-yield benchmark), `ExampleLSTM`: the model keeps a list of input transforms
# (`self._transforms`, plain functions of the project) and applies them first in `forward`. The
# trainer method `train_model` moves the model (`self.to(device)`) and every tensor of each dict
# batch to the device, normalises them and calls `self(inputs)`. The dekadal transform aggregates
# each daily time series into a new tensor made with `torch.full(..., dtype=value.dtype)` (no
# `device=`, so on the host) and fills it slice by slice from the GPU values; the stacking transform
# concatenates those host series, and `self._lstm(x_ts)` receives a CPU input. The PR ("Fix for use
# with CUDA", "Propagated input in forward() to GPU") moves `x_ts` to the model's device there.
# (Synthetic weather series and yields; dates are day numbers; two time-series and two static
# predictors. `type(value) == torch.Tensor` is written `isinstance(...)`: under `gpulint run` an
# emulated CUDA tensor is a subclass.)
# fails-on-cuda: Input and parameter tensors are not at the same device
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader

KEY_LOC, KEY_YEAR, KEY_TARGET, KEY_DATES = "loc", "year", "yield", "dates"
TIME_SERIES_PREDICTORS = ["tmax", "prec"]
STATIC_PREDICTORS = ["awc", "bulk_density"]


def dekad_from_date(date):
    return int(date) // 10 + 1


def _transform_ts_input_to_dekadal(ts_key, value, dates, min_date, max_date):
    min_dekad = dekad_from_date(min_date)
    max_dekad = dekad_from_date(max_date)
    dekads = list(range(0, max_dekad - min_dekad + 1))
    value_dekads = torch.tensor([dekad_from_date(date) for date in dates], device=value.device)
    value_dekads -= 1
    new_value = torch.full((value.shape[0], len(dekads)), float("inf"), dtype=value.dtype)
    for d in dekads:
        mask = value_dekads == d
        if value[:, mask].shape[1] == 0:
            new_value[:, d] = 0.0
        elif ts_key in ["tmax"]:
            new_value[:, d] = value[:, mask].max(dim=1).values
        else:
            new_value[:, d] = torch.mean(value[:, mask], dim=1)
    return new_value


def transform_ts_inputs_to_dekadal(batch_dict, min_date, max_date):
    out_dict = {}
    dates = batch_dict[KEY_DATES]
    for key, value in batch_dict.items():
        if isinstance(value, torch.Tensor) and len(value.shape) == 2:
            out_dict[key] = _transform_ts_input_to_dekadal(key, value, dates[key], min_date, max_date)
        else:
            out_dict[key] = value
    return out_dict


def transform_stack_ts_static_inputs(batch_dict, min_date, max_date):
    ts, static, other = {}, {}, {}
    for key, value in batch_dict.items():
        if not isinstance(value, torch.Tensor):
            other[key] = value
        elif len(value.shape) == 1:
            static[key] = value
        else:
            ts[key] = value
    ts = torch.cat([v.unsqueeze(2) for k, v in ts.items()], dim=2)
    static = torch.cat([v.unsqueeze(1) for k, v in static.items()], dim=1)
    return {"ts": ts, "static": static, "other": other}


def make_samples(n, n_days=60):
    g = torch.Generator().manual_seed(0)
    samples = []
    for i in range(n):
        tmax = 20 + 5 * torch.randn(n_days, generator=g)
        prec = torch.rand(n_days, generator=g)
        awc, bulk = torch.rand(2, generator=g)
        y = 0.1 * tmax.mean() + 3.0 * prec.mean() + awc - 0.5 * bulk
        samples.append({"tmax": tmax, "prec": prec, "awc": awc, "bulk_density": bulk, KEY_TARGET: y,
                        KEY_DATES: {"tmax": list(range(n_days)), "prec": list(range(n_days))}})
    return samples


def collate_fn(items):
    out = {}
    for key in items[0]:
        if key == KEY_DATES:
            out[key] = items[0][key]
        else:
            out[key] = torch.stack([it[key] for it in items])
    return out


class BaseNNModel(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self._min_date, self._max_date = 0, 59
        self.feature_means, self.feature_sds = {}, {}

    def train_model(self, train_samples, num_epochs=1, batch_size=16, lr=1e-2, device=None):
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.to(device)
        train_loader = DataLoader(train_samples, batch_size=batch_size, shuffle=True, collate_fn=collate_fn)
        optimizer = torch.optim.Adam(self.parameters(), lr=lr)
        loss_fn = nn.functional.mse_loss
        all_train_samples = collate_fn(train_samples)
        for key, inputs in all_train_samples.items():
            if key not in [KEY_TARGET, KEY_LOC, KEY_YEAR, KEY_DATES]:
                self.feature_means[key] = inputs.mean()
                self.feature_sds[key] = inputs.std()
        all_train_losses = []
        for epoch in range(num_epochs):
            losses = []
            self.train()
            for batch in train_loader:
                optimizer.zero_grad()
                for key in batch:
                    if isinstance(batch[key], torch.Tensor):
                        batch[key] = batch[key].to(device)
                inputs = {k: v for k, v in batch.items() if k != KEY_TARGET}
                for key in inputs:
                    if key not in [KEY_LOC, KEY_YEAR, KEY_DATES]:
                        inputs[key] = (inputs[key] - self.feature_means[key]) / self.feature_sds[key]
                predictions = self(inputs)
                if predictions.dim() > 1:
                    predictions = predictions.squeeze(-1)
                loss = loss_fn(predictions, batch[KEY_TARGET])
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            all_train_losses.append(sum(losses) / len(losses))
        return all_train_losses, device


class ExampleLSTM(BaseNNModel):
    def __init__(self, hidden_size, num_layers, output_size=1,
                 transforms=[transform_ts_inputs_to_dekadal, transform_stack_ts_static_inputs], **kwargs):
        n_ts_inputs = len(TIME_SERIES_PREDICTORS)
        n_static_inputs = len(STATIC_PREDICTORS)
        super().__init__(**kwargs)
        self._lstm = nn.LSTM(n_ts_inputs, hidden_size, num_layers, batch_first=True)
        self._fc = nn.Linear(hidden_size + n_static_inputs, output_size)
        self._transforms = transforms

    def forward(self, x):
        for transform in self._transforms:
            x = transform(x, self._min_date, self._max_date)
        x_ts = x["ts"]
        x_static = x["static"]
        x_ts, _ = self._lstm(x_ts)  # expect: GL116
        x = torch.cat([x_ts[:, -1, :], x_static], dim=1)
        return self._fc(x)


def main():
    torch.manual_seed(0)
    model = ExampleLSTM(hidden_size=16, num_layers=1)
    losses, device = model.train_model(make_samples(96), num_epochs=8)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(device).type}))


if __name__ == "__main__":
    main()
