"""GL404's safe fix (`model.eval()` before an evaluation loop, `model.train()` after it) changes
what the loop computes: batch norm switches from batch statistics to running ones. It is right for
an evaluation, known by its function's name, by following the training loop, or by the loss or
accuracy it computes. SwAV's main_deepclusterv2.py `init_memory` (fixes11 corpus audit) is none of
these: a `no_grad` pass that fills the memory bank with the embeddings training mode gives, the
same mode the training loop later refreshes them in; with the fix, the first epoch's clusters
would come from batch norm's initial running statistics. Such a loop is still reported, without
the fix; a `no_grad` loop that measures an accuracy keeps it."""

from __future__ import annotations

from fixture_support import fix, rules_for
from gpulint.engine import Options, run_text

MEMORY_BANK = '''import torch
import torch.nn as nn


def init_memory(dataloader, model):
    memory = torch.zeros(12, 3)
    with torch.no_grad():
        for index, inputs in dataloader:
            emb = model(inputs)
            memory[index] = emb
    return memory


def train(loader, model, opt, memory):
    model.train()
    for index, inputs in loader:
        loss = (model(inputs) - memory[index]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def main():
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = [(torch.arange(4) + 4 * i, torch.randn(4, 4)) for i in range(3)]
    memory = init_memory(loader, model)
    for epoch in range(2):
        train(loader, model, opt, memory)


if __name__ == "__main__":
    main()
'''

ACCURACY = MEMORY_BANK.replace(
    "            emb = model(inputs)\n            memory[index] = emb\n",
    "            emb = model(inputs)\n            memory[index] = (emb.argmax(1) == index % 3).float()[:, None]\n",
)


def _gl404(text):
    return [d for d in run_text("t.py", text, rules_for({"GL404"}), Options()).diagnostics if d.code == "GL404"]


def test_memory_bank_pass_is_reported_without_the_fix():
    found = _gl404(MEMORY_BANK)
    assert len(found) == 1 and found[0].fix is None
    assert fix(MEMORY_BANK, {"GL404"}, unsafe=True).text == MEMORY_BANK


def test_no_grad_loop_measuring_an_accuracy_keeps_the_fix():
    assert ACCURACY != MEMORY_BANK
    found = _gl404(ACCURACY)
    assert len(found) == 1 and found[0].fix is not None
    out = fix(ACCURACY, {"GL404"}, unsafe=False).text
    assert "        model.eval()\n        for index, inputs in dataloader:" in out
    assert "        model.train()\n    return memory" in out
