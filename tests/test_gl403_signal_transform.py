"""GL403: a torchaudio / torchvision transform module (`torchaudio.transforms.Resample`) called in an
evaluation loop outside `no_grad` records no graph: it has no parameters, and the loaded audio asks
for no gradient (SWivid/F5-TTS src/f5_tts/eval/utils_eval.py `run_sim`, which resamples each clip
and then runs the speaker model under `torch.no_grad()`)."""

from __future__ import annotations

import textwrap

from fixture_support import check

SRC = """
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchaudio


def run_sim(model, test_set, use_gpu, device):
    model.eval()
    sims = []
    for wav1, sr1, wav2 in test_set:
        if use_gpu:
            wav1 = wav1.cuda(device)
        if sr1 != 16000:
            resample1 = {ctor}
            if use_gpu:
                resample1 = resample1.cuda(device)
            wav1 = resample1(wav1)
        with torch.no_grad():
            emb1 = model(wav1)
            emb2 = model(wav2)
        sims.append(F.cosine_similarity(emb1, emb2)[0].item())
    return sims
"""


def _lines(ctor: str):
    return [(d.code, d.line) for d in check(textwrap.dedent(SRC).format(ctor=ctor), ["GL403"])]


def test_torchaudio_resample_records_no_graph():
    assert _lines("torchaudio.transforms.Resample(orig_freq=sr1, new_freq=16000)") == []


def test_torchvision_transform_records_no_graph():
    src = textwrap.dedent(SRC).format(ctor="T.Resize((16000,))").replace(
        "import torchaudio\n", "import torchvision.transforms as T\n")
    assert [(d.code, d.line) for d in check(src, ["GL403"])] == []


def test_a_network_in_the_same_place_stays_reported():
    assert _lines("nn.Sequential(nn.Linear(16000, 16000))") == [("GL403", 18)]


def test_a_transform_name_rebound_to_a_network_stays_reported():
    src = textwrap.dedent(SRC).format(ctor="torchaudio.transforms.Resample(orig_freq=sr1, new_freq=16000)").replace(
        "                resample1 = resample1.cuda(device)", "                resample1 = nn.Linear(16000, 16000).cuda(device)")
    assert [(d.code, d.line) for d in check(src, ["GL403"])] == [("GL403", 18)]
