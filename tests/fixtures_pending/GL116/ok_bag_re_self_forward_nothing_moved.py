# fixture: cpu-only
# Hard negative, pending (engine-rooted; PRECISION19 A2). Real shape: thunlp/OpenNRE,
# opennre/model/bag_one.py,
# https://github.com/thunlp/OpenNRE/blob/8e42fd712f2ab01b48a7e7c4cb2bdea45ec6ff9a/opennre/model/bag_one.py
# (`BagOne(BagRE)`, `infer` calling `self.forward(...)`), run as a CPU script: nothing in this file
# moves anything, yet GL116 reports `self.proj(token)` in `SentenceEncoder.forward` ("`self.proj`
# is on the accelerator"). The engine's answer changes with the explicit `self.forward(...)` call
# in a class whose base (the project's `BagRE`) is imported: with `self(...)`, or with an
# nn.Module base, it is silent. The base lives in another module (opennre/model/base_model.py):
# here it is written to a temporary package and imported, so that this file does not define it.
import json
import os
import sys
import tempfile
import textwrap

import torch
import torch.nn as nn
import torch.nn.functional as F

pkg = tempfile.mkdtemp()
with open(os.path.join(pkg, "opennre_base_model_demo.py"), "w") as f:
    f.write(textwrap.dedent('''
        import torch.nn as nn

        class BagRE(nn.Module):
            def infer(self, bag):
                raise NotImplementedError
    '''))
sys.path.insert(0, pkg)
from opennre_base_model_demo import BagRE  # noqa: E402

torch.manual_seed(0)


class SentenceEncoder(nn.Module):
    def __init__(self, d_in=16, hidden_size=8):
        super().__init__()
        self.hidden_size = hidden_size
        self.proj = nn.Linear(d_in, hidden_size)

    def forward(self, token):
        return torch.tanh(self.proj(token))


class BagOne(BagRE):
    def __init__(self, sentence_encoder, num_class):
        super().__init__()
        self.sentence_encoder = sentence_encoder
        self.fc = nn.Linear(sentence_encoder.hidden_size, num_class)
        self.softmax = nn.Softmax(-1)
        self.drop = nn.Dropout(0.1)

    def infer(self, bag):
        self.eval()
        scope = torch.tensor([[0, len(bag)]]).long()
        bag_logits = self.forward(None, scope, bag, train=False).squeeze(0)
        score, pred = bag_logits.max(0)
        return pred.item(), score.item()

    def forward(self, label, scope, token, train=True):
        if train:
            rep = self.sentence_encoder(token)
            bag_rep = []
            for i in range(len(scope)):  # iterate over bags
                bag_mat = rep[scope[i][0]:scope[i][1]]
                instance_logit = self.softmax(self.fc(bag_mat))
                max_index = instance_logit[:, label[i]].argmax()
                bag_rep.append(bag_mat[max_index])
            bag_rep = self.drop(torch.stack(bag_rep, 0))
            return self.fc(bag_rep)
        with torch.no_grad():
            instance_logit = self.softmax(self.fc(self.sentence_encoder(token)))
        bag_logits = []
        for i in range(len(scope)):
            bag_logits.append(instance_logit[scope[i][0]:scope[i][1]].max(dim=0)[0])
        return torch.stack(bag_logits, 0)


def make_batch(n_bags=4, bag_len=3, d_in=16, num_class=3):
    label = torch.randint(0, num_class, (n_bags,))
    token = torch.randn(n_bags * bag_len, d_in) + label.repeat_interleave(bag_len)[:, None].float()
    scope = torch.tensor([[b * bag_len, (b + 1) * bag_len] for b in range(n_bags)])
    return label, scope, token


model = BagOne(SentenceEncoder(), num_class=3)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
fixed = [make_batch() for _ in range(4)]
losses = []
for step in range(12):
    model.train()
    label, scope, token = fixed[step % len(fixed)]
    logits = model(label, scope, token, train=True)
    loss = F.cross_entropy(logits, label)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

pred, score = model.infer(fixed[0][2][:3])
print(json.dumps({"relation": pred, "score": round(score, 4)}))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": "cpu"}))
