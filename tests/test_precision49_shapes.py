"""Shapes of the forty-ninth precision pass (benchmarks/PRECISION49.md): each false positive
fixed in a rule (P49-1 .. P49-7, P49-10), next to the look-alikes that must stay reported. The snippets are
our own minimal code in the shape of the real one; their findings are known by reading them."""

from __future__ import annotations

import re
import textwrap

from cli_support import gl, write


def lines(tmp_path, code: str, source: str) -> list[int]:
    write(tmp_path, {"t.py": textwrap.dedent(source)})
    r = gl(["check", "--no-cache", "--select", code, "t.py"], tmp_path)
    return [int(m.group(1)) for m in re.finditer(rf"^t\.py:(\d+):\d+: {code}", r.stdout, re.MULTILINE)]


# P49-1 (GL110): a save through an imported helper earlier in the function, to the same path
SAVE_HELPER = """\
    import torch
    from proj.model_saver import save_model

    def main(path):
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(2, 2).to(device)
        for epoch in range(3):
            if epoch % 2 == 0:
                save_model(model, {saved})
        model.load_state_dict(torch.load(path))

    if __name__ == "__main__":
        main("best.bin")
"""


def test_gl110_same_path_saved_by_imported_helper_is_silent(tmp_path):
    assert lines(tmp_path, "GL110", SAVE_HELPER.format(saved="path")) == []


def test_gl110_other_path_of_imported_helper_is_reported(tmp_path):
    assert lines(tmp_path, "GL110", SAVE_HELPER.format(saved='"other.bin"')) == [10]


def test_gl110_imported_helper_under_ddp_is_reported(tmp_path):
    # every rank loads what rank 0 saved onto rank 0's device: the round trip is not enough
    src = SAVE_HELPER.format(saved="path").replace(
        "        model = torch.nn.Linear(2, 2).to(device)\n",
        "        model = torch.nn.Linear(2, 2).to(device)\n"
        "        model = torch.nn.parallel.DistributedDataParallel(model)\n")
    assert lines(tmp_path, "GL110", src) == [11]


def test_gl110_numpy_save_is_not_a_checkpoint_save(tmp_path):
    src = SAVE_HELPER.format(saved="path").replace(
        "from proj.model_saver import save_model", "from numpy import save as save_model")
    assert lines(tmp_path, "GL110", src) == [10]


# P49-2 (GL110): a checkpoint dict of a model moved to the host before the save
HOST_DICT = """\
    import torch

    class Trainer:
        def __init__(self, model, device):
            self.model, self.device = model.to(device), device

        def save(self, epoch):
            self.model.to({where})
            state = {{"net": self.model.state_dict(), "epoch": 1}}
            state["tag"] = "best"
            torch.save(state, "ckpt.pth")
            self.model.to(self.device)

        def load(self):
            self.model.load_state_dict(torch.load("ckpt.pth")["net"])

    if __name__ == "__main__":
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        t = Trainer(torch.nn.Linear(2, 2), dev)
        t.save(0)
        t.load()
"""


def test_gl110_checkpoint_dict_of_host_moved_model_is_silent(tmp_path):
    assert lines(tmp_path, "GL110", HOST_DICT.format(where='"cpu"')) == []


def test_gl110_checkpoint_dict_of_device_model_is_reported(tmp_path):
    assert lines(tmp_path, "GL110", HOST_DICT.format(where="self.device")) == [15]


def test_gl110_checkpoint_dict_with_device_optimizer_state_is_reported(tmp_path):
    src = HOST_DICT.format(where='"cpu"').replace(
        '        state["tag"] = "best"\n',
        '        state["extra"] = torch.zeros(3, device=self.device).to(self.device)\n')
    assert lines(tmp_path, "GL110", src) == [15]


# P49-4 (GL104): batches of a collate function the file cannot see
COLLATE = """\
    import torch
    from torch.utils.data import DataLoader
    from proj.data import GraphSet, batcher

    def run(loader, model, device):
        for batch in loader:
            graph, y = batch
            graph.to(device)
            y = y.to(device)
            model(graph)

    if __name__ == "__main__":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2).to(device)
        run(DataLoader(GraphSet(), batch_size=4{collate}), model, device)
"""


def test_gl104_batch_of_opaque_collate_is_silent(tmp_path):
    assert lines(tmp_path, "GL104", COLLATE.format(collate=", collate_fn=batcher()")) == []


def test_gl104_batch_of_default_collation_is_reported(tmp_path):
    assert lines(tmp_path, "GL104", COLLATE.format(collate="")) == [8]


def test_gl104_batch_of_torch_default_collate_is_reported(tmp_path):
    src = COLLATE.format(collate=", collate_fn=default_collate").replace(
        "from torch.utils.data import DataLoader", "from torch.utils.data import DataLoader, default_collate")
    assert lines(tmp_path, "GL104", src) == [8]


# P49-5 (GL116): host table indexed by 0-dim elements of device tensors
CONFUSION = """\
    import torch

    def evaluate(model, x, y, device):
        confusion = torch.zeros(3, 3, dtype=torch.long)
        pred = model(x.to(device)).argmax(1)
        gold = y.to(device)
        {loop}
        return confusion

    if __name__ == "__main__":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 3).to(device)
        evaluate(model, torch.randn(8, 4), torch.randint(0, 3, (8,)), device)
"""


def test_gl116_element_indices_are_silent(tmp_path):
    loop = "for j in range(pred.size(0)):\n            confusion[pred[j], gold[j]] += 1"
    assert lines(tmp_path, "GL116", CONFUSION.format(loop=loop)) == []


def test_gl116_vector_indices_are_reported(tmp_path):
    assert lines(tmp_path, "GL116", CONFUSION.format(loop="confusion[pred, gold] += 1")) == [7]


def test_gl116_element_picked_by_computed_index_is_reported(tmp_path):
    loop = "for j in range(pred.size(0)):\n            confusion[pred[j:j + 2], gold[j:j + 2]] += 1"
    assert lines(tmp_path, "GL116", CONFUSION.format(loop=loop)) == [8]


# P49-6 (GL401): another framework's optimizer
PADDLE = """\
    import paddle
    {extra}from paddle.optimizer import AdamW

    model = paddle.nn.Linear(4, 2)
    optimizer = {opt}
    for step in range(3):
        loss = model(paddle.randn([2, 4])).sum()
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
"""


def test_gl401_paddle_optimizer_is_silent(tmp_path):
    src = PADDLE.format(extra="", opt="AdamW(learning_rate=1e-3, parameters=model.parameters())")
    assert lines(tmp_path, "GL401", src) == []


def test_gl401_torch_optimizer_beside_paddle_is_reported(tmp_path):
    src = PADDLE.format(extra="import torch\n    ", opt="torch.optim.SGD(model.parameters(), lr=0.1)").replace(
        "model = paddle.nn.Linear(4, 2)", "model = torch.nn.Linear(4, 2)").replace(
        "paddle.randn([2, 4])", "torch.randn(2, 4)")
    assert lines(tmp_path, "GL401", src) == [10]


# P49-7 (GL403): a metric object in an evaluation loop
METRIC = """\
    import torch
    import torch.nn as nn
    from torchmetrics.regression import SpearmanCorrCoef

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)

    def evaluate(model, loader):
        model.eval()
        out = []
        for x, y in loader:
            spearman = SpearmanCorrCoef()
            {call}
        return out

    if __name__ == "__main__":
        evaluate(Net(), [(torch.randn(3, 4), torch.randn(3))])
"""


def test_gl403_metric_call_is_silent(tmp_path):
    call = "out.append(spearman(x[:, 0], y))"
    assert lines(tmp_path, "GL403", METRIC.format(call=call)) == []


def test_gl403_model_call_beside_metric_is_reported(tmp_path):
    call = "out.append(spearman(model(x)[:, 0], y))"
    assert lines(tmp_path, "GL403", METRIC.format(call=call)) == [18]


# P49-3 (GL110): a data file shipped inside the package, read at import by a library module
PACKAGE_DATA = """\
    import os
    from pathlib import Path
    import torch

    DIR = Path(__file__).parents[0]
    TABLE = torch.load({path})

    def lookup(idx, device):
        return TABLE.to(device)[idx.to(device)]
{main}"""


def test_gl110_package_data_at_import_is_silent(tmp_path):
    src = PACKAGE_DATA.format(path='str(DIR / "precomputed" / "table.pt")', main="")
    assert lines(tmp_path, "GL110", src) == []
    src = PACKAGE_DATA.format(path='os.path.join(os.path.dirname(__file__), "table.pt")', main="")
    assert lines(tmp_path, "GL110", src) == []


def test_gl110_other_path_at_import_is_reported(tmp_path):
    assert lines(tmp_path, "GL110", PACKAGE_DATA.format(path='"table.pt"', main="")) == [6]


def test_gl110_checkpoint_next_to_a_script_is_reported(tmp_path):
    main = '\n    if __name__ == "__main__":\n        print(lookup(torch.tensor([0]), "cuda"))\n'
    src = PACKAGE_DATA.format(path='str(DIR / "precomputed" / "table.pt")', main=main)
    assert lines(tmp_path, "GL110", src) == [6]


# P49-10 (GL201): the backward pass run by an optimizer wrapper given the loss (fairseq)
DELEGATED = """\
    import torch
    {imp}

    def train_step(model, x, y, optimizer):
        with torch.autocast("cuda", enabled=isinstance(optimizer, AMPOptimizer)):
            loss = torch.nn.functional.mse_loss(model(x), y)
        {backward}
        optimizer.step()

    if __name__ == "__main__":
        model = torch.nn.Linear(4, 1).cuda()
        opt = AMPOptimizer(model.parameters())
        for _ in range(3):
            train_step(model, torch.randn(2, 4).cuda(), torch.randn(2, 1).cuda(), opt)
"""
FILE_WRAPPER = """from torch.optim import SGD

    class AMPOptimizer:
        def __init__(self, params):
            self.opt = SGD(params, lr=0.1)

        def backward(self, loss):
            loss.backward()

        def step(self):
            self.opt.step()
            self.opt.zero_grad()
"""


def test_gl201_backward_delegated_to_imported_optimizer_is_silent(tmp_path):
    src = DELEGATED.format(imp="from fairseq.optim.amp_optimizer import AMPOptimizer", backward="optimizer.backward(loss)")
    assert lines(tmp_path, "GL201", src) == []


def test_gl201_tensor_backward_with_gradient_is_reported(tmp_path):
    src = DELEGATED.format(imp="from fairseq.optim.amp_optimizer import AMPOptimizer",
                           backward="loss.backward(torch.ones_like(loss))")
    assert lines(tmp_path, "GL201", src) == [5]


def test_gl201_backward_of_a_wrapper_class_of_the_file_is_reported(tmp_path):
    src = DELEGATED.format(imp=FILE_WRAPPER, backward="optimizer.backward(loss)")
    assert lines(tmp_path, "GL201", src) == [17]
