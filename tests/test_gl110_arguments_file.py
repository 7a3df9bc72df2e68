"""GL110: `torch.load(os.path.join(model_dir, "training_args.bin"))` (monologg/R-BERT predict.py
`get_args`; trainer.py wrote it with `torch.save(self.args, ...)`) loads the run's pickled argparse
namespace: options, no tensor, nothing for `map_location` to map. A checkpoint load in the same
script, a load handed to `load_state_dict`, and a literal that names a model keep the finding."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import os
import torch
from model import RBERT


def get_device(cfg):
    return "cuda" if torch.cuda.is_available() and not cfg.no_cuda else "cpu"


def get_args(cfg):
    {load}


def load_model(cfg, args, device):
    model = RBERT(args)
    model.to(device)
    return model


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", default="./model")
    parser.add_argument("--no_cuda", action="store_true")
    cfg = parser.parse_args()
    device = get_device(cfg)
    model = load_model(cfg, get_args(cfg), device)
"""


def _lines(load: str):
    src = textwrap.dedent(SRC).format(load=load)
    return [d.line for d in check(src, ["GL110"]) if d.code == "GL110"]


def test_training_args_file_is_not_reported():
    assert _lines('return torch.load(os.path.join(cfg.model_dir, "training_args.bin"))') == []


def test_load_bound_to_args_is_not_reported():
    assert _lines("args = torch.load(cfg.args_path)\n    return args") == []


def test_checkpoint_load_is_reported():
    assert _lines('return torch.load(os.path.join(cfg.model_dir, "checkpoint.bin"))') == [12]


def test_args_literal_naming_a_model_is_reported():
    assert _lines('return torch.load(os.path.join(cfg.model_dir, "model_args.bin"))') == [12]


def test_args_file_handed_to_load_state_dict_is_reported():
    assert _lines('RBERT(cfg).load_state_dict(torch.load(os.path.join(cfg.model_dir, "args.pt")))') == [12]
