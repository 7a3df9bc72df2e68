# source: https://github.com/lasso-net/lassonet/issues/71
# LassoNet's sklearn-style estimator keeps its network on `self.device` and converts predictions
# to NumPy only when X is an ndarray (`if isinstance(X, np.ndarray): ans = ans.cpu().numpy()`).
# The reporter scored on a DataFrame (here: a list of rows), so `score()` hands the CUDA tensor to
# the R^2 helper, whose `np.asarray` fails.
# fails-on-cuda: can't convert cuda:0 device type tensor to numpy
import json

import numpy as np
import torch
import torch.nn as nn


def r2_score(y_true, y_pred):
    y_true = np.asarray(y_true, dtype=np.float64).reshape(-1)
    y_pred = np.asarray(y_pred, dtype=np.float64).reshape(-1)  # expect: GL109
    ss_res = ((y_true - y_pred) ** 2).sum()
    ss_tot = ((y_true - y_true.mean()) ** 2).sum()
    return 1.0 - ss_res / ss_tot


class LassoNet(nn.Module):
    def __init__(self, *dims):
        super().__init__()
        self.skip = nn.Linear(dims[0], dims[-1], bias=False)
        self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:])])

    def forward(self, x):
        result = self.skip(x)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return result + x


class LassoNetRegressor:
    def __init__(self, hidden_dims=(16,), lr=1e-2, n_iters=200, device=None):
        self.hidden_dims = hidden_dims
        self.lr = lr
        self.n_iters = n_iters
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = None

    def _cast_input(self, X):
        return torch.as_tensor(X, dtype=torch.float32).to(self.device)

    def _convert_y(self, y):
        y = torch.FloatTensor(y).to(self.device)
        return y.view(-1, 1) if len(y.shape) == 1 else y

    def fit(self, X, y):
        X, y = self._cast_input(X), self._convert_y(y)
        self.model = LassoNet(X.shape[1], *self.hidden_dims, y.shape[1]).to(self.device)
        optimizer = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        criterion = nn.MSELoss()
        self.losses_ = []
        for _ in range(self.n_iters):
            loss = criterion(self.model(X), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            self.losses_.append(loss.item())
        return self

    def predict(self, X):
        with torch.no_grad():
            ans = self.model(self._cast_input(X))
        if isinstance(X, np.ndarray):
            ans = ans.cpu().numpy()
        return ans

    def score(self, X, y):
        return r2_score(y, self.predict(X))


def main():
    torch.manual_seed(0)
    rng = np.random.RandomState(0)
    X = rng.randn(300, 6).astype(np.float32)
    y = X[:, 0] * 2.0 - X[:, 1] + 0.1 * rng.randn(300)
    model = LassoNetRegressor().fit(X[:200], y[:200])
    test_rows = X[200:].tolist()
    print("R^2:", model.score(test_rows, y[200:]))
    losses = model.losses_
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": model.device.type}))


if __name__ == "__main__":
    main()
