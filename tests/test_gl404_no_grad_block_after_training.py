"""GL404 reports a loop-free `with torch.no_grad():` evaluation written in the epoch loop right
after the training batches, with no `model.eval()` (hosseinshn/GradNorm#1: the notebook's
validation `MTL(X_valid)` on the whole validation set under no_grad, dropout on), as it reports the
loop form; the fix inserts `model.eval()` before the block and `model.train()` after it. Silent when
the model is put in eval mode, when it has no dropout or batch norm, when the block measures
nothing (embeddings kept in training mode on purpose), and after a deliberate `model.train()`."""

from __future__ import annotations

from fixture_support import check, fix

TEXT = '''import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), LAYER, nn.Linear(8, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.MSELoss()
X, y = torch.randn(64, 4), torch.randn(64, 1)
Xv, yv = torch.randn(16, 4), torch.randn(16, 1)
bank = []
for epoch in range(3):
    for i in range(0, 64, 16):
        out = model(X[i:i + 16])
        loss = loss_fn(out, y[i:i + 16])
        opt.zero_grad()
        loss.backward()
        opt.step()
    BEFORE
    with torch.no_grad():
        BODY
'''

MEASURE = "val_loss = loss_fn(model(Xv), yv)"


def _run(layer="nn.Dropout()", before="pass", body=MEASURE, top=""):
    text = TEXT.replace("LAYER", layer).replace("BEFORE", before).replace("BODY", body)
    text = text.replace("for epoch in range(3):\n", "for epoch in range(3):\n" + top)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "with torch.no_grad()" in s)
    return text, line, [f.line for f in check(text, {"GL404"})]


def test_no_grad_block_after_the_batches_in_training_mode_is_reported():
    _, line, got = _run()
    assert got == [line]


def test_fix_puts_the_model_in_eval_mode_around_the_block():
    text, _, _ = _run()
    fixed = fix(text, {"GL404"}, False).text
    assert "    model.eval()\n    with torch.no_grad():" in fixed
    assert "        val_loss = loss_fn(model(Xv), yv)\n    model.train()\n" in fixed


def test_model_put_in_eval_mode_is_silent():
    assert _run(before="model.eval()", top="    model.train()\n")[2] == []


def test_model_without_dropout_or_batch_norm_is_silent():
    assert _run(layer="nn.Tanh()")[2] == []


def test_block_that_measures_nothing_is_silent():
    assert _run(body="bank.append(model(Xv))")[2] == []


def test_deliberate_train_mode_is_silent():
    assert _run(before="model.train()")[2] == []
