"""GL301: an evaluation script is not taken for a training one because it calls a transform object
whose name contains "train" (PRECISION31 A2: Eromera/erfnet_pytorch eval/eval_cityscapes_server.py:77
and xiaoyufenfei/LEDNet test/eval_cityscapes_server.py:74 map predicted train ids back to label ids
with `cityscapes_trainIds2labelIds = Compose([...])`; `_trains` read the name's "train" as a
training call and reported the evaluation's DataParallel). A function named for training, or a name
bound to something other than a class's instance, still counts."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn
from torchvision.transforms import Compose, ToPILImage

cityscapes_trainIds2labelIds = Compose([ToPILImage()])


def main(cpu):
    model = nn.Sequential(nn.Conv2d(3, 4, 1))
    model = torch.nn.DataParallel(model)
    if not cpu:
        model = model.cuda()
    model.eval()
    for step in range(3):
        images = torch.randn(1, 3, 4, 4)
        if not cpu:
            images = images.cuda()
        with torch.no_grad():
            outputs = model(images)
        label = outputs[0].max(0)[1].byte().cpu()
        saved = cityscapes_trainIds2labelIds(label.unsqueeze(0))


main(not torch.cuda.is_available())
'''


def _gl301(text):
    return sorted((d.line, d.code) for d in check(text, {"GL301"}) if d.code == "GL301")


def test_transform_object_named_train_does_not_make_a_training_script():
    assert _gl301(TEXT) == []


def test_a_function_named_train_still_does():
    text = TEXT.replace("cityscapes_trainIds2labelIds = Compose([ToPILImage()])",
                        "def cityscapes_trainIds2labelIds(x):\n    return x")
    assert _gl301(text) == [(11, "GL301")]


def test_a_name_bound_to_a_function_call_still_does():
    text = TEXT.replace("cityscapes_trainIds2labelIds = Compose([ToPILImage()])",
                        "cityscapes_trainIds2labelIds = make_training_step([ToPILImage()])")
    assert _gl301(text) == [(10, "GL301")]
