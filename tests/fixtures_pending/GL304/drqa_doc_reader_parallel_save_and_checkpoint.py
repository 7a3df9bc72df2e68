# source: https://github.com/facebookresearch/DrQA/pull/144
# facebookresearch/DrQA#144 ("fix for saving models trained with DataParallel", fixes #142):
# drqa/reader/model.py's DocReader (a plain class holding `self.network`, an RnnDocReader) wraps
# the network with `parallelize()`, `self.network = torch.nn.DataParallel(self.network)`, when
# scripts/reader/train.py runs with `--parallel`; its save() stored
# `copy.copy(self.network.state_dict())` and checkpoint() stored `self.network.state_dict()` in the
# params dict handed to torch.save: the wrapper's keys, prefixed "module.". DocReader.load() and
# load_checkpoint() rebuild a bare RnnDocReader and `load_state_dict` those keys, which fails with
# "Unexpected key(s) in state_dict". The PR saves `self.network.module` when `self.parallel`.
# Shrunk to a tiny span-prediction reader over synthetic token ids; `parallel` follows CUDA.
# fails-on-cuda: Unexpected key(s) in state_dict
import copy
import json
import os
import tempfile
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F


class RnnDocReader(nn.Module):
    def __init__(self, args, normalize=True):
        super(RnnDocReader, self).__init__()
        self.args = args
        self.embedding = nn.Embedding(args.vocab_size, args.embedding_dim, padding_idx=0)
        self.doc_rnn = nn.GRU(args.embedding_dim, args.hidden_size, batch_first=True)
        self.start_attn = nn.Linear(args.hidden_size, 1)
        self.end_attn = nn.Linear(args.hidden_size, 1)
        self.normalize = normalize

    def forward(self, x1):
        doc_hiddens, _ = self.doc_rnn(self.embedding(x1))
        start_scores = self.start_attn(doc_hiddens).squeeze(-1)
        end_scores = self.end_attn(doc_hiddens).squeeze(-1)
        if self.normalize:
            return F.log_softmax(start_scores, dim=-1), F.log_softmax(end_scores, dim=-1)
        return start_scores.exp(), end_scores.exp()


class DocReader(object):
    def __init__(self, args, word_dict, feature_dict, state_dict=None, normalize=True):
        self.args = args
        self.word_dict = word_dict
        self.args.vocab_size = len(word_dict)
        self.feature_dict = feature_dict
        self.updates = 0
        self.use_cuda = False
        self.parallel = False
        self.network = RnnDocReader(args, normalize)
        if state_dict:
            self.network.load_state_dict(state_dict)

    def init_optimizer(self, state_dict=None):
        parameters = [p for p in self.network.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adamax(parameters, lr=self.args.learning_rate)
        if state_dict:
            self.optimizer.load_state_dict(state_dict)

    def update(self, ex):
        self.network.train()
        if self.use_cuda:
            inputs = ex[0].cuda(non_blocking=True)
            target_s = ex[1].cuda(non_blocking=True)
            target_e = ex[2].cuda(non_blocking=True)
        else:
            inputs, target_s, target_e = ex
        score_s, score_e = self.network(inputs)
        loss = F.nll_loss(score_s, target_s) + F.nll_loss(score_e, target_e)
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.network.parameters(), self.args.grad_clipping)
        self.optimizer.step()
        self.updates += 1
        return loss.item(), ex[0].size(0)

    def save(self, filename):
        state_dict = copy.copy(self.network.state_dict())
        if "fixed_embedding" in state_dict:
            state_dict.pop("fixed_embedding")
        params = {
            "state_dict": state_dict,
            "word_dict": self.word_dict,
            "feature_dict": self.feature_dict,
            "args": self.args,
        }
        torch.save(params, filename)  # expect: GL304

    def checkpoint(self, filename, epoch):
        params = {
            "state_dict": self.network.state_dict(),
            "word_dict": self.word_dict,
            "feature_dict": self.feature_dict,
            "args": self.args,
            "epoch": epoch,
            "optimizer": self.optimizer.state_dict(),
        }
        torch.save(params, filename)  # expect: GL304

    @staticmethod
    def load(filename, normalize=True):
        saved_params = torch.load(filename, map_location=lambda storage, loc: storage, weights_only=False)
        return DocReader(saved_params["args"], saved_params["word_dict"], saved_params["feature_dict"], saved_params["state_dict"], normalize)

    def cuda(self):
        self.use_cuda = True
        self.network = self.network.cuda()

    def parallelize(self):
        self.parallel = True
        self.network = torch.nn.DataParallel(self.network)


def train(args, data_loader, model, global_stats):
    total, count = 0.0, 0
    for idx, ex in enumerate(data_loader):
        loss, n = model.update(ex)
        total += loss * n
        count += n
    if args.checkpoint:
        model.checkpoint(args.model_file + ".checkpoint", global_stats["epoch"] + 1)
    return total / count


def main(args):
    word_dict = {"<NULL>": 0, **{f"w{i}": i for i in range(1, 20)}}
    model = DocReader(args, word_dict, feature_dict={})
    model.init_optimizer()
    if args.cuda:
        model.cuda()
    if args.parallel:
        model.parallelize()

    g = torch.Generator().manual_seed(0)
    docs = torch.randint(1, 20, (96, 12), generator=g)
    starts = (docs % 12).argmax(dim=1)
    ends = torch.clamp(starts + 1, max=11)
    train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(docs, starts, ends), batch_size=16, shuffle=True)

    stats = {"epoch": 0, "best_valid": float("inf")}
    losses = []
    for epoch in range(args.num_epochs):
        stats["epoch"] = epoch
        losses.append(train(args, train_loader, model, stats))
        if losses[-1] < stats["best_valid"]:
            model.save(args.model_file)
            stats["best_valid"] = losses[-1]

    # what scripts/reader/predict.py does with the saved model
    reader = DocReader.load(args.model_file)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cuda" if args.cuda else "cpu"}))
    assert reader.updates == 0


if __name__ == "__main__":
    torch.manual_seed(1013)
    out_dir = tempfile.mkdtemp()
    args = SimpleNamespace(
        embedding_dim=16, hidden_size=16, learning_rate=0.1, grad_clipping=10, num_epochs=6, checkpoint=True,
        model_file=os.path.join(out_dir, "reader.mdl"), cuda=torch.cuda.is_available(),
    )
    args.parallel = args.cuda
    main(args)
