"""GL406 moves an early `scheduler.step()` below the optimizer step. On weihua916/powerful-gnns
main.py (fixes13 corpus audit) the step opened the epoch loop's body and was followed by a blank
line; the move left that blank line as the body's first line. A moved statement that opened its
block now takes the blank line after it along; elsewhere nothing else moves."""

from __future__ import annotations

from fixture_support import fix

EPOCHS = '''import torch


def train(model, optimizer, x):
    optimizer.zero_grad()
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    return loss.item()


def main():
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2)
    x = torch.randn(8, 4)
    for epoch in range(1, 5):
        scheduler.step()

        avg_loss = train(model, optimizer, x)
        print(epoch, avg_loss)


main()
'''


def test_moved_step_takes_its_blank_line():
    out = fix(EPOCHS, {"GL406"}, unsafe=True).text
    assert "    for epoch in range(1, 5):\n        avg_loss = train(model, optimizer, x)\n        scheduler.step()\n" in out, out
