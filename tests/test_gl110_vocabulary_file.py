"""GL110 is silent on `torch.load` of a pickled vocabulary: pcyin/pytorch_nmt's nmt.py
(`vocab = torch.load(args.vocab)`, the file written by its vocab.py with `torch.save(vocab, path)`)
and ymfa/seq2seq-summarizer's test.py (`filename += '.vocab'` then `v = torch.load(filename)`).
A vocabulary holds words and indices, no tensor on a device: there is nothing for
`map_location` to map. Loads of models, checkpoints and embedding matrices are still reported,
and so is a "vocab" load handed to `load_state_dict`."""

from __future__ import annotations

from fixture_support import check

HEAD = '''import argparse
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_true")
parser.add_argument("--vocab", type=str)
parser.add_argument("--load_model", type=str)
args = parser.parse_args()


class NMT(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab
        self.emb = nn.Embedding(len(vocab), 8)

    def save(self, path):
        torch.save({"vocab": self.vocab, "state_dict": self.state_dict()}, path)


'''


def _lines(text):
    return [f.line for f in check(text, {"GL110"})]


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_vocabulary_named_by_the_path_attribute_and_the_target():
    text = HEAD + '''def init_training(args):
    vocab = torch.load(args.vocab)
    model = NMT(vocab)
    if args.cuda:
        model = model.cuda()
    return model


model = init_training(args)
model.save("model.bin")
'''
    assert _lines(text) == []


def test_vocabulary_named_by_a_suffix_added_to_the_path():
    text = HEAD.replace("import argparse", "import argparse\nimport os") + '''if __name__ == "__main__":
    filename, _ = os.path.splitext(args.data)
    filename += ".vocab"
    v = torch.load(filename)
    model = NMT(v)
    if args.cuda:
        model = model.cuda()
    model.save("model.bin")
'''
    assert _lines(text) == []


def test_vocabulary_literal_path():
    text = HEAD + '''words = torch.load("data/src.vocab.pkl")
model = NMT(words)
if args.cuda:
    model = model.cuda()
model.save("model.bin")
'''
    assert _lines(text) == []


def test_model_load_next_to_the_vocabulary_is_still_reported():
    text = HEAD + '''def init(args):
    vocab = torch.load(args.vocab)
    params = torch.load(args.load_model)
    model = NMT(vocab)
    model.load_state_dict(params["state_dict"])
    if args.cuda:
        model = model.cuda()
    return model


model = init(args)
model.save("model.bin")
'''
    assert _lines(text) == [_line_of(text, "torch.load(args.load_model)")]


def test_suffix_in_another_branch_does_not_count():
    text = HEAD + '''if __name__ == "__main__":
    filename = args.load_model
    if args.cuda:
        filename += ".vocab"
    else:
        m = torch.load(filename)
        m.save("model.bin")
'''
    assert _lines(text) == [_line_of(text, "m = torch.load(filename)")]


def test_vocabulary_embeddings_and_sizes_are_not_vocabularies():
    for load in ('emb = torch.load("vocab_embeddings.pt")', "emb = torch.load(args.vocab_size)",
                 'emb = torch.load(os.path.join(args.vocab, "model.pt"))'):
        text = HEAD.replace("import argparse", "import argparse\nimport os") + load + '''
model = NMT(emb)
if args.cuda:
    model = model.cuda()
model.save("model.bin")
'''
        assert _lines(text) == [_line_of(text, "torch.load(")], load


def test_vocab_named_load_into_load_state_dict_is_still_reported():
    text = HEAD + '''vocab_file = args.vocab
model = NMT({"a": 0})
model.load_state_dict(torch.load(vocab_file))
if args.cuda:
    model = model.cuda()
model.save("model.bin")
'''
    assert _lines(text) == [_line_of(text, "torch.load(vocab_file)")]
