"""The editor server names another cell's line in a notebook message as `gpulint check` does: the
cell's number in the notebook (markdown cells counted), not `code cell #K` of the joined script
(PRECISION17.md N3, eighteenth pass)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_support import LspClient


@pytest.fixture
def client(tmp_path: Path):
    c = LspClient(cwd=tmp_path)
    c.initialize(tmp_path)
    yield c
    c.close()


def test_a_line_in_another_cell_is_named_by_the_notebook_cell_number(client, tmp_path):
    cells = [
        ("code", "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.Adagrad(model.parameters(), lr=0.1)\n"),
        ("markdown", "# move the model\n"),
        ("code", "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nmodel.to(device)\n"),
    ]
    _nb, (a, _md, _c) = client.open_notebook(tmp_path / "train.ipynb", cells)
    got = client.diagnostics(a, 1)
    msgs = [d["message"] for d in got if d.get("code") == "GL118"]
    assert msgs and "is moved to `device` on cell 3, line 2;" in msgs[0], msgs
    assert "code cell #" not in msgs[0]
