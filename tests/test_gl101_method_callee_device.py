"""GL101's message and fix when the model is reached through one of its methods
(`self.model.generate(input_tokens)`, jsonformer's generate_number, 1rgs/jsonformer#9, fixtures22):
the model's device is `next(self.model.parameters()).device`, never the method's `.parameters()`
(a bound method has none: the fix raised AttributeError)."""

from __future__ import annotations

import textwrap

import libcst as cst

from fixture_support import check
from gpulint.engine import Options, run_text
from gpulint.registry import Registry

SRC = textwrap.dedent('''
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer


    class Jsonformer:
        def __init__(self, model, tokenizer, prompt):
            self.model = model
            self.tokenizer = tokenizer
            self.prompt = prompt

        def generate_number(self):
            input_tokens = self.tokenizer.encode(self.prompt, return_tensors="pt")
            response = self.model.CALL(input_tokens, max_new_tokens=6)
            return self.tokenizer.decode(response[0])


    tokenizer = AutoTokenizer.from_pretrained("gpt2")
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    model.half().cuda()
    print(Jsonformer(model, tokenizer, "x").generate_number())
''')


def fixed(src: str) -> str:
    reg = Registry.load()
    res = run_text("t.py", src, [reg.by_code("GL101")()], Options(fix=True, unsafe_fixes=True))
    return res.text


def test_method_of_the_model_is_reported_with_the_models_device():
    src = SRC.replace("CALL", "generate")
    diags = [d for d in check(src, {"GL101"}) if d.code == "GL101"]
    assert [d.line for d in diags] == [14]
    assert "next(self.model.parameters()).device" in diags[0].message
    assert "generate.parameters" not in diags[0].message
    out = fixed(src)
    cst.parse_module(out)
    assert "input_tokens = input_tokens.to(next(self.model.parameters()).device)\n" in out
    assert "generate.parameters" not in out


def test_plain_model_call_keeps_the_callee():
    src = SRC.replace("self.model.CALL(input_tokens, max_new_tokens=6)", "self.model(input_tokens)")
    out = fixed(src)
    assert "input_tokens = input_tokens.to(next(self.model.parameters()).device)\n" in out
