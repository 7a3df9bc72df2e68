"""GL110 on a load of the path an imported early-stopping object was given (hazdzz/STGCN main.py:198,
https://github.com/hazdzz/STGCN: `es = earlystopping.EarlyStopping(..., path="STGCN_" + args.dataset +
".pt")`, `es(val_loss, model)` in the epoch loop, then `test()` reloads `torch.load("STGCN_" +
args.dataset + ".pt")`; the class, in script/earlystopping.py, saves the best state_dict there). The
file is written by this run, on these devices: silent. Still reported when the object is given
another path, when its class does not say that it checkpoints, or when the file defines the class
(and shows no save)."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import argparse

import torch
import torch.nn as nn
IMPORT


def prepare_model(args):
    model = nn.Linear(4, 1).to(device)
    es = CTOR(delta=0.0, patience=args.patience, KEYWORD="STGCN_" + args.dataset + ".pt")
    return es, model


def train(args, model, es):
    for epoch in range(args.epochs):
        val_loss = 1.0 / (epoch + 1)
        es(val_loss, model)
        if es.early_stop:
            break


def test(model, args):
    model.load_state_dict(torch.load("STGCN_" + args.dataset + ".pt"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="metr-la")
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    es, model = prepare_model(args)
    train(args, model, es)
    test(model, args)
'''


def _lines(imp="from script import earlystopping", ctor="earlystopping.EarlyStopping", keyword="path"):
    text = TEXT.replace("IMPORT", imp).replace("CTOR", ctor).replace("KEYWORD", keyword)
    return [f.line for f in check(text, {"GL110"})]


def test_path_given_to_imported_early_stopping_is_silent():
    assert _lines() == []


def test_imported_checkpoint_saver_name_is_silent():
    assert _lines(imp="from utils import ModelCheckpoint", ctor="ModelCheckpoint", keyword="filepath") == []


def test_other_keyword_is_reported():
    assert _lines(keyword="log_dir") == [23]


def test_class_that_does_not_checkpoint_is_reported():
    assert _lines(imp="from script import monitor", ctor="monitor.ValidationMonitor") == [23]


def test_class_defined_in_the_file_is_reported():
    own = "\n\nclass EarlyStopping:\n    def __init__(self, delta, patience, path):\n        self.path = path\n"
    lines = _lines(imp=own, ctor="EarlyStopping")
    assert lines == [28]
