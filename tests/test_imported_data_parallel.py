"""A data-parallel wrapper of another package that subclasses DataParallel (PyTorch-Encoding's
`DataParallelModel`, sync-batchnorm's `DataParallelWithCallback`) scatters its CPU inputs onto
the GPUs as DataParallel does: a host batch fed to it is no mismatch (PRECISION19 A1, DANet's
segmentation trainer). torch's DistributedDataParallel-like names are not taken as such."""

from __future__ import annotations

from pathlib import Path

from gpulint import flowkb
from gpulint.engine import Options, run_text
from gpulint.registry import Registry

FIXTURE = Path(__file__).parent / "fixtures" / "GL101" / "ok_encoding_data_parallel_model_scatters_cpu_batches.py"


def gl101(src: str) -> list[int]:
    rule = Registry.load().by_code("GL101")()
    return [d.line for d in run_text("train.py", src, [rule], Options()).diagnostics]


def test_imported_data_parallel_wrappers_scatter_their_inputs():
    src = FIXTURE.read_text()
    assert gl101(src) == []
    assert gl101(src.replace("DataParallelModel", "DataParallelWithCallback")) == []


def test_other_wrappers_are_not_taken_for_data_parallel():
    # an imported wrapper of another kind, moved with `.cuda()`: the batches meet it unscattered
    assert gl101(FIXTURE.read_text().replace("DataParallelModel", "ModelEmaV2")) == [83, 94]
    # torch's own DataParallel (the control)
    src = FIXTURE.read_text().replace("DataParallelModel(self.model)", "nn.DataParallel(self.model)")
    assert gl101(src) == []


def test_is_wrapper():
    assert flowkb.is_wrapper("torch.nn.DataParallel")
    assert flowkb.is_wrapper("encoding.parallel.DataParallelModel")
    assert flowkb.is_wrapper("sync_batchnorm.replicate.DataParallelWithCallback")
    assert not flowkb.is_wrapper("apex.parallel.DistributedDataParallel")
    assert not flowkb.is_wrapper("DataParallelModel")  # a class of the file: followed as written
    assert not flowkb.is_wrapper("torch.nn.Linear")
