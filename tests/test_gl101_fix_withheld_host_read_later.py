"""GL101's fix and batch values the function reads again on the host (OpenBookQA#5, F62-1): the
dict-batch fix `batch = {k: v.to(D) for k, v in batch.items()}` moves every value, and the
evaluation loop later compares `pred.cpu() == batch["label"]`, so the fixed script fails with
"Expected all tensors to be on the same device". Where a moved value later meets a tensor the code
keeps on the host (or is converted with `.numpy()`), the finding stays and the fix is withheld;
where nothing reads it on the host, the fix is offered as before."""

from __future__ import annotations

from fixture_support import check, fix

SRC = '''
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DS(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {"x": torch.randn(4), "label": torch.tensor(i % 2)}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x, label=None):
        return self.lin(x)


model = Net().to(device)
correct = 0
with torch.no_grad():
    for batch in DataLoader(DS(), batch_size=4):
        out = model(**batch)
        pred = out.argmax(dim=-1)
        LATER
print(correct)
'''


def run(later: str):
    src = SRC.replace("LATER", later)
    found = [d for d in check(src, {"GL101"}) if d.code == "GL101"]
    fixed = fix(src, {"GL101"}, True).text
    return found, fixed != src


def test_label_compared_with_a_host_copy_gets_no_fix():
    found, changed = run('correct += (pred.cpu() == batch["label"]).sum().item()')
    assert [d.line for d in found] == [30]
    assert found[0].fix is None and not changed
    assert "no automatic fix: `batch` is read again later beside a tensor kept on the CPU" in found[0].message
    # the message still names the move
    assert "batch = {k: v.to(device) for k, v in batch.items()}" in found[0].message


def test_label_converted_with_numpy_gets_no_fix():
    found, changed = run('correct += int((pred.cpu().numpy() == batch["label"].numpy()).sum())')
    assert [d.line for d in found] == [30]
    assert not changed


def test_label_compared_with_a_host_tensor_in_a_torch_call_gets_no_fix():
    found, changed = run('correct += int(torch.eq(pred.cpu(), batch["label"]).sum())')
    assert [d.line for d in found] == [30]
    assert not changed


def test_label_compared_on_the_device_keeps_the_fix():
    found, changed = run('correct += (pred == batch["label"]).sum().item()')
    assert [d.line for d in found] == [30]
    assert found[0].fix is not None and changed


def test_label_moved_back_by_the_comparison_keeps_the_fix():
    found, changed = run('correct += (pred.cpu() == batch["label"].cpu()).sum().item()')
    assert [d.line for d in found] == [30]
    assert changed


def test_label_read_only_as_a_length_keeps_the_fix():
    found, changed = run('correct += len(batch["label"])')
    assert changed
