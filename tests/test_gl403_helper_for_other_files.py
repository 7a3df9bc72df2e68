"""GL403: a module-level inference helper that takes the model as a parameter, puts nothing in eval
mode, hands the model's output back with its graph, and is not named anywhere in its own file
(KasperGroesLudvigsen/influenza_transformer inference.py: `run_encoder_decoder_inference(model, src,
...)` decodes autoregressively and returns `model(src, tgt, ...)`; its docstring leaves `no_grad`
to the caller because training may differentiate the result, and the repository's one caller,
inference_example.py, runs it under `torch.no_grad()`). Its callers are in other files: their grad
mode cannot be read, so the rule stays silent (PRECISION36). Judged as before: the same helper
called in the file outside `no_grad`, a helper that runs `model.eval()`, a helper that calls
a global model, a helper that returns its loop's own last output."""

from __future__ import annotations

import textwrap

from fixture_support import check

HELPER = """
import torch
import torch.nn as nn


def run_encoder_decoder_inference(model: nn.Module, src: torch.Tensor, forecast_window: int) -> torch.Tensor:
    tgt = src[:, -1:]
    for _ in range(forecast_window - 1):
        prediction = model(src, tgt)
        tgt = torch.cat((tgt, prediction[:, -1:].detach()), 1)
{tail}
"""

LOOP_CALL_LINE = 9  # `prediction = model(src, tgt)`


def _lines(src: str):
    return sorted(d.line for d in check(textwrap.dedent(src), ["GL403"]) if d.code == "GL403")


def test_helper_returning_the_model_output_is_left_to_its_callers():
    assert _lines(HELPER.format(tail="    return model(src, tgt)")) == []


def test_helper_returning_a_name_bound_to_the_model_output():
    tail = "    final_prediction = model(src, tgt)\n    return final_prediction"
    assert _lines(HELPER.format(tail=tail)) == []


def test_helper_called_in_the_file_with_gradients_on_stays_reported():
    tail = (
        "    return model(src, tgt)\n\n\n"
        "net = torch.nn.Linear(1, 1)\n"
        "pred = run_encoder_decoder_inference(net, torch.randn(4, 5, 1), 3)\n"
        "print(pred.sum().item())"
    )
    assert _lines(HELPER.format(tail=tail)) == [LOOP_CALL_LINE]


def test_helper_that_puts_the_model_in_eval_mode_stays_reported():
    src = HELPER.format(tail="    return model(src, tgt)").replace(
        "    tgt = src[:, -1:]\n", "    model.eval()\n    tgt = src[:, -1:]\n"
    )
    assert _lines(src) == [LOOP_CALL_LINE + 1]


def test_helper_calling_a_global_model_stays_reported():
    src = (
        HELPER.format(tail="    return model(tgt)")
        .replace(
            "def run_encoder_decoder_inference(model: nn.Module, src: torch.Tensor, forecast_window: int)",
            "model = torch.nn.Linear(1, 1)\n\n\ndef run_encoder_decoder_inference(src: torch.Tensor, forecast_window: int)",
        )
        .replace("prediction = model(src, tgt)", "prediction = model(tgt)")
    )
    assert _lines(src) == [LOOP_CALL_LINE + 3]


def test_helper_returning_the_loop_output_stays_reported():
    src = HELPER.format(tail="    return prediction")
    assert _lines(src) == [LOOP_CALL_LINE]
