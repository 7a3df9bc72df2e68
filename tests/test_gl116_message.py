"""GL116 never advises `device=` for a torch function that takes none (`torch.meshgrid`,
`torch.stack`): it says to copy the tensor over."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
feat = torch.randn(1, 2, 4, 4).to(device)
g = torch.meshgrid(torch.arange(4), torch.arange(4), indexing="ij")[0]
print(feat[0, 0] + g)
'''


def test_meshgrid_result_is_copied_not_made_with_device():
    found = [d for d in check(TEXT, {"GL116"}) if d.code == "GL116"]
    assert [d.line for d in found] == [6]
    assert "device=" not in found[0].message
    assert "`.to(feat.device)`" in found[0].message
