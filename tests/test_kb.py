"""The torch API knowledge base: generated from torch, current, and read without importing torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpulint import kb

ROOT = Path(__file__).resolve().parent.parent


def test_shipped_file_is_what_the_generator_writes_for_the_installed_torch(tmp_path):
    torch = pytest.importorskip("torch")
    shipped = json.loads((ROOT / "gpulint" / "data" / "torch_api.json").read_text(encoding="utf-8"))
    if torch.__version__ != shipped["torch_version"]:
        pytest.skip(f"knowledge base is from torch {shipped['torch_version']}, installed {torch.__version__}")
    out = tmp_path / "torch_api.json"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_torch_kb.py"), "-o", str(out)],
                   check=True, capture_output=True, text=True, timeout=900)
    assert out.read_text(encoding="utf-8") == (ROOT / "gpulint" / "data" / "torch_api.json").read_text(
        encoding="utf-8"), "stale: run `python scripts/gen_torch_kb.py` and commit the result"


def test_reading_the_knowledge_base_does_not_import_torch():
    code = ("import sys; from gpulint import kb; kb.class_kind('torch.nn.Linear'); "
            "kb.function('torch.cat'); kb.tensor_method('view'); assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=900)


@pytest.mark.parametrize("qualname, kind", [
    ("torch.nn.Linear", "module"),
    ("torch.nn.modules.linear.Linear", "module"),  # alias of the defining module
    ("torch.optim.swa_utils.AveragedModel", "module"),  # under torch.optim, but an nn.Module
    ("torch.optim.AdamW", "optimizer"),
    ("torch.optim.lr_scheduler.OneCycleLR", "scheduler"),
    ("torch.optim.lr_scheduler.ReduceLROnPlateau", "scheduler"),
    ("torch.amp.GradScaler", "scaler"),
    ("torch.cuda.amp.GradScaler", "scaler"),
    ("torch.utils.data.DataLoader", "dataloader"),
    ("torch.utils.data.distributed.DistributedSampler", "sampler"),
    ("torch.utils.data.TensorDataset", "dataset"),
    ("torch.nn.Parameter", "tensor"),
    ("torch.cuda.FloatTensor", "tensor_type"),
    ("torch.Generator", "generator"),
    ("torch.device", "device"),
    ("torch.no_grad", "grad_mode"),
])
def test_class_kinds_come_from_the_real_mro(qualname, kind):
    assert kb.class_kind(qualname) == kind


def test_class_tags():
    assert "loss" in kb.class_tags("torch.nn.CrossEntropyLoss")
    assert "wrapper" in kb.class_tags("torch.nn.parallel.DistributedDataParallel")
    assert "lazy" in kb.class_tags("torch.nn.LazyLinear")
    assert "cuda" in kb.class_tags("torch.cuda.LongTensor")
    assert "host" in kb.class_tags("torch.FloatTensor")


def test_functions():
    f = kb.function("torch.nn.functional.cross_entropy")
    assert f.returns == "tensor" and f.tensor_params[:3] == ("input", "target", "weight")
    z = kb.function("torch.zeros")
    assert z.returns == "tensor" and z.device_param and not z.random
    assert kb.function("torch.randn").random and kb.function("torch.randn").device_param
    assert kb.function("torch.cat").tensor_params == ("tensors",)
    assert kb.function("torch.tensor").device_param
    assert kb.function("torch.chunk").returns == "tensors"
    assert kb.function("torch.save").returns == "none"
    assert kb.function("torch.no_such_function") is None


def test_tensor_and_module_methods():
    assert kb.tensor_method("unsqueeze") == "same"
    assert kb.tensor_method("to") == "move" and kb.tensor_method("cpu") == "host"
    assert kb.tensor_method("add_") == "inplace"
    assert kb.tensor_method("item") == "host_value" and kb.tensor_method("numpy") == "host_value"
    assert kb.tensor_method("half") == "cast"
    assert kb.tensor_method("split") == "tensors"
    assert kb.tensor_attribute("device") == "device" and kb.tensor_attribute("T") == "same"
    assert kb.module_method("to") == "inplace_move" and kb.module_method("cpu") == "inplace_host"
    assert kb.module_method("parameters") == "tensor_iter"


@pytest.mark.parametrize("qualname, kind", [
    ("torchmetrics.Accuracy", "metric"),
    ("torchmetrics.classification.MulticlassAccuracy", "metric"),
    ("transformers.AutoModelForCausalLM", "module"),
    ("transformers.AutoTokenizer", "tokenizer"),
    ("transformers.DataCollatorForLanguageModeling", "class"),  # not a model despite "For"
    ("diffusers.DDPMScheduler", "class"),  # a noise schedule, not an LR scheduler
    ("torchvision.transforms.ToTensor", "transform"),
])
def test_ecosystem_classes(qualname, kind):
    assert kb.class_kind(qualname) == kind


def test_ecosystem_functions():
    assert kb.function("timm.create_model").returns == "module"
    assert kb.function("torchvision.models.resnet18").returns == "module"
    assert kb.function("transformers.get_linear_schedule_with_warmup").returns == "scheduler"
    assert kb.is_instance_constructor("from_pretrained")
    assert kb.class_kind("somelib.Thing") is None and kb.function("somelib.thing") is None
