"""GL101's fix moves a batch right after the statement that makes it. When every branch of an
`if`/`else` makes it (simalign#16's EmbeddingLoader tokenizes a sentence pair one of two ways,
then calls `self.emb_model(**inputs)`), the move goes right after the whole `if` statement; before,
the finding came without a fix. Without an `else` that binds it too, no move is inserted."""

from __future__ import annotations

from fixture_support import check, fix

SRC = """
import torch
from transformers import AutoModel, AutoTokenizer


class EmbeddingLoader:
    def __init__(self, device):
        self.device = device
        self.emb_model = AutoModel.from_pretrained("bert-base-cased")
        self.emb_model.to(self.device)
        self.tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")

    def embed(self, pair):
        with torch.no_grad():
            if not isinstance(pair[0], str):
                inputs = self.tokenizer(pair, is_split_into_words=True, return_tensors="pt")
            else:
                inputs = self.tokenizer(pair, return_tensors="pt")
            outputs = self.emb_model(**inputs)[0]
        return outputs


loader = EmbeddingLoader(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
print(loader.embed(["a b", "c d"]))
"""

FIXED_PART = """                inputs = self.tokenizer(pair, return_tensors="pt")
            inputs = inputs.to(self.device)
            outputs = self.emb_model(**inputs)[0]
"""


def test_move_goes_after_the_if_statement():
    assert [d.code for d in check(SRC, ["GL101"])] == ["GL101"]
    out = fix(SRC, ["GL101"], unsafe=True).text
    assert FIXED_PART in out
    assert out.count("inputs.to(self.device)") == 1
    assert check(out, ["GL101"]) == []
    assert fix(out, ["GL101"], unsafe=True).text == out


def test_no_fix_when_a_branch_does_not_bind_the_batch():
    src = SRC.replace(
        """            else:
                inputs = self.tokenizer(pair, return_tensors="pt")
""",
        """            elif pair:
                inputs = self.tokenizer(pair, return_tensors="pt")
""",
    )
    # (the engine does not report it either: `inputs` is unbound on the path through neither branch)
    assert fix(src, ["GL101"], unsafe=True).text == src
