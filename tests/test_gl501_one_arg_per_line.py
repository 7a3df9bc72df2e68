"""GL501's fix gives the factory `device=`: in a call laid out one argument per line with a
trailing comma, the new argument gets a line of its own at the arguments' indentation (diffusers'
train_dreambooth_lora_sd15_advanced.py, fixes11 corpus audit: `torch.randn(\\n len(ids),\\n
(...).config.hidden_size,\\n)\\n.to(device=self.device)` became `...hidden_size, device=self.device,`
on the last argument's line). A one-line call keeps the inline form."""

from __future__ import annotations

from fixture_support import fix

TEXT = '''import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
for step in range(3):
    mask = (
        torch.ones(
            8,
            4,
        )
        .to(device=device)
        .float()
    )
    flat = torch.zeros(8, 4,).to(device)
    print(model(mask + flat).sum().item())
'''


def test_new_keyword_gets_its_own_line_in_a_one_argument_per_line_call():
    out = fix(TEXT, {"GL501"}, unsafe=False).text
    assert "        torch.ones(\n            8,\n            4,\n            device=device,\n        )\n        .float()\n" in out, out
    assert "flat = torch.zeros(8, 4, device=device,)\n" in out, out
    compile(out, "fixed.py", "exec")
    assert fix(out, {"GL501"}, unsafe=False).text == out


NO_TRAILING_COMMA = '''import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
for step in range(3):
    mask = torch.ones(
        8,
        4
    ).to(device)
    print(model(mask).sum().item())
'''


def test_one_argument_per_line_without_trailing_comma():
    out = fix(NO_TRAILING_COMMA, {"GL501"}, unsafe=False).text
    assert "    mask = torch.ones(\n        8,\n        4,\n        device=device\n    )\n" in out, out
    assert fix(out, {"GL501"}, unsafe=False).text == out
