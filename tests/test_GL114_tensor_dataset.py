"""GL114 (G48-3, pytorch/pytorch#4377): a `TensorDataset` built from tensors the engine places on the
GPU, read by a DataLoader with worker processes (or `pin_memory=True`), fails in the workers
("Cannot re-initialize CUDA in forked subprocess"; a GPU batch cannot be pinned). Hard negatives:
host tensors moved in the loop, no workers, a spawn start method or context, and tensors the engine
cannot place (returned by an imported loader) stay silent."""

from __future__ import annotations

import textwrap

from fixture_support import check

BODY = """
import torch
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
features = torch.randn(96, 4).to(device)
labels = torch.randint(0, 2, (96,)).to(device)
dataset = TensorDataset(features, labels)
loader = DataLoader(dataset, batch_size=16, LOADER_ARGS)
for x, y in loader:
    print(x.sum(), y.sum())
"""


def gl114(loader_args: str = "num_workers=2", body: str = BODY) -> list[int]:
    return [d.line for d in check(textwrap.dedent(body).replace("LOADER_ARGS", loader_args), ["GL114"])]


def test_gpu_tensors_in_a_tensor_dataset_with_workers_fire():
    assert gl114() == [8]


def test_inline_tensor_dataset_with_pinned_memory_fires():
    body = BODY.replace("loader = DataLoader(dataset,", "loader = DataLoader(TensorDataset(features, labels),")
    assert gl114("pin_memory=True", body) == [9]


def test_message_names_the_gpu_tensor():
    text = textwrap.dedent(BODY).replace("LOADER_ARGS", "num_workers=2")
    (d,) = check(text, ["GL114"])
    assert "`TensorDataset` holds `features`" in d.message and "forked" in d.message


# hard negatives ----------------------------------------------------------------------------------

def test_host_tensors_moved_in_the_loop_are_silent():
    body = BODY.replace(".to(device)", "").replace("print(x.sum(), y.sum())", "print(x.to(device).sum(), y.to(device).sum())")
    assert gl114(body=body) == []


def test_no_workers_is_silent():
    assert gl114("num_workers=0") == []


def test_spawn_context_is_silent():
    assert gl114('num_workers=2, multiprocessing_context="spawn"') == []


def test_spawn_start_method_is_silent():
    body = BODY.replace("device = torch.device", 'torch.multiprocessing.set_start_method("spawn")\ndevice = torch.device')
    assert gl114(body=body) == []


def test_tensors_the_engine_cannot_place_are_silent():
    body = BODY.replace("torch.randn(96, 4).to(device)", "load_features()").replace(
        "torch.randint(0, 2, (96,)).to(device)", "load_labels()").replace(
        "from torch.utils.data", "from project.data import load_features, load_labels\nfrom torch.utils.data")
    assert gl114(body=body) == []
