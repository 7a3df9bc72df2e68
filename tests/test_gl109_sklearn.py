"""GL109 on scikit-learn's metrics given device tensors (Lightning-AI/pytorch-lightning#1429's
`accuracy_score(y, y_hat)` in a validation step; samet-akcay/ganomaly#26's
`roc_curve(labels, scores)`): they call `np.asarray` on their inputs, which fails on CUDA tensors
with "can't convert cuda:0 device type tensor to numpy"."""

from __future__ import annotations

from fixture_support import check

HEAD = """
import torch
import torch.nn as nn
from sklearn import metrics
from sklearn.metrics import accuracy_score

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 3).to(device)
x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
with torch.no_grad():
    scores = model(x.to(device))
    preds = scores.argmax(dim=1)
"""


def lines(tail: str) -> list[int]:
    return [d.line for d in check(HEAD + tail, {"GL109"}) if d.code == "GL109"]


def test_a_metric_given_device_predictions_is_reported():
    assert lines("acc = accuracy_score(y, preds)\n") == [13]
    assert lines("fpr, tpr, _ = metrics.roc_curve(y, scores[:, 0])\n") == [13]


def test_host_copies_are_silent():
    assert lines("acc = accuracy_score(y, preds.cpu())\n") == []
    assert lines("acc = accuracy_score(y.numpy(), preds.detach().cpu().numpy())\n") == []


def test_array_api_dispatch_takes_tensors_where_they_are():
    tail = "import sklearn\nsklearn.set_config(array_api_dispatch=True)\nacc = accuracy_score(y.to(device), preds)\n"
    assert lines(tail) == []


def test_pandas_constructors_convert_too():
    assert lines("import pandas as pd\ndf = pd.DataFrame(scores)\n") == [14]
    assert lines("import pandas as pd\ndf = pd.DataFrame(scores.cpu())\n") == []
