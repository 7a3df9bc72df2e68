"""GL301: a DataParallel wrap made in a function only to load a checkpoint whose keys carry the
`module.` prefix, then unwrapped with `next(wrapper.children())`, drives no GPU (PRECISION31 A1:
Eromera/erfnet_pytorch train/main.py:469 and xiaoyufenfei/LEDNet train/main.py:472, where the
ImageNet-pretrained encoder is loaded through `torch.nn.DataParallel(ERFNet_imagenet(1000))` and
taken back out with `next(pretrainedEnc.children()).features.encoder`). Before, `_only_loaded` was
applied to wraps inside methods only and did not know `children()`. The script's real wraps,
which run the model, stay reported; so does the loading wrap when the wrapper is also called."""

from __future__ import annotations

from fixture_support import check

TEXT = '''import torch
import torch.nn as nn


class Pretrained(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(4, 4))

    def forward(self, x):
        return self.features(x)


def main(ckpt):
    enc = torch.nn.DataParallel(Pretrained())
    enc.load_state_dict(ckpt)
    enc = next(enc.children()).features
    model = nn.Sequential(enc, nn.Linear(4, 1))
    if torch.cuda.is_available():
        model = torch.nn.DataParallel(model).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()


main({"module.features.0.weight": torch.zeros(4, 4), "module.features.0.bias": torch.zeros(4)})
'''


def _gl301(text):
    return sorted((d.line, d.code) for d in check(text, {"GL301"}) if d.code == "GL301")


def test_wrap_only_loaded_and_unwrapped_with_children_is_silent():
    assert _gl301(TEXT) == [(20, "GL301")]


def test_wrap_only_loaded_and_unwrapped_with_module_in_a_function_is_silent():
    text = TEXT.replace("next(enc.children())", "enc.module")
    assert _gl301(text) == [(20, "GL301")]


def test_loading_wrap_that_is_also_run_is_reported():
    text = TEXT.replace("    enc.load_state_dict(ckpt)\n", "    enc.load_state_dict(ckpt)\n    enc(torch.randn(2, 4))\n")
    assert _gl301(text) == [(15, "GL301"), (21, "GL301")]
