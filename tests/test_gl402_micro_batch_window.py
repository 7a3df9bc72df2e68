"""GL402: a logging accumulator reset before a micro-batch loop (gradient accumulation, no
optimizer step inside) and closed by an optimizer step after it, in the body of the loop around it
(JIA-Lab-research/DecoupleNet#3, train_phase1.py: `loss_seg_value = 0`; `for sub_i in
range(iter_size): ... loss_seg_value += loss_seg / iter_size`; `scaler.step(optimizer)`), holds one
step's losses: silent. An epoch-level reset around a data loop that steps every batch, or a
micro-batch loop with no reset, keeps the finding. fixtures25."""

from __future__ import annotations

from fixture_support import check

HEAD = '''import torch
import torch.nn as nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", enabled=False)
batches = [torch.randn(8, 4) for _ in range(4)]
'''

MICRO = HEAD + '''

def main():
    history = []
    for i_iter in range(10):
        RESET
        optimizer.zero_grad()
        for sub_i in range(2):
            loss_seg = model(batches[sub_i]).pow(2).mean()
            loss = loss_seg / 2
            scaler.scale(loss).backward()
            loss_value += loss_seg / 2
        history.append(loss_value.item())
        scaler.step(optimizer)
        scaler.update()
    return history


main()
'''

EPOCH = HEAD + '''for epoch in range(3):
    running = 0
    for x in batches:
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        running += loss
    print(float(running))
'''


def _lines(text):
    return [d.line for d in check(text, {"GL402"}) if d.code == "GL402"]


def test_micro_batch_window_reset_each_step_is_silent():
    assert _lines(MICRO.replace("RESET", "loss_value = 0")) == []


def test_micro_batch_loop_without_reset_keeps_the_finding():
    assert _lines(MICRO.replace("RESET", "pass").replace("    history = []", "    history, loss_value = [], 0")) == [19]


def test_epoch_reset_around_a_stepping_data_loop_keeps_the_finding():
    assert _lines(EPOCH) == [15]
