# source: https://github.com/asahi417/lmppl/pull/13
# lmppl's `LM` class loads a causal LM, keeps `self.device` and moves the model there; its
# perplexity method tokenizes a batch with `self.tokenizer(..., return_tensors='pt', padding=True)`,
# moves the model inputs with `{k: v.to(self.device) for k, v in encode.items()}`, but builds the
# labels from the unmoved `encode['input_ids']` (pad positions set to -100) and computes
# `self.loss_fct(output['logits'].view(-1, V), label.view(-1))`: on a GPU, "Expected all tensors
# to be on the same device" (the PR adds `.to(self.device)` to the label). Here the same helper
# computes the loss for a few fine-tuning steps and for scoring.
# fixture: unsafe-fixes
# (The tokenizer here is a class of this file, so the label is a tensor the file makes with
# torch.tensor: GL116. With the real AutoTokenizer the same line is GL101.)
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn

PAD_TOKEN_LABEL_ID = nn.CrossEntropyLoss().ignore_index


class CharTokenizer:
    pad_token_id = 0

    def __call__(self, texts, return_tensors="pt", padding=True):
        ids = [[1 + (ord(c) % 30) for c in t] for t in texts]
        width = max(len(i) for i in ids)
        input_ids = torch.tensor([i + [0] * (width - len(i)) for i in ids])
        return {"input_ids": input_ids, "attention_mask": (input_ids != 0).long()}


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=32, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, input_ids, attention_mask=None):
        h, _ = self.rnn(self.emb(input_ids))
        return {"logits": self.head(h)}


class LM:
    def __init__(self, device=None):
        self.tokenizer = CharTokenizer()
        self.model = TinyCausalLM()
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device)
        self.loss_fct = nn.CrossEntropyLoss(reduction="none")

    def batch_loss(self, input_texts):
        encode = self.tokenizer(input_texts, return_tensors="pt", padding=True)
        label = encode["input_ids"][:, 1:].clone()
        label[label == self.tokenizer.pad_token_id] = PAD_TOKEN_LABEL_ID
        model_inputs = {k: v[:, :-1].to(self.device) for k, v in encode.items()}
        output = self.model(**model_inputs)
        logit = output["logits"]
        loss = self.loss_fct(logit.reshape(-1, logit.size(-1)), label.reshape(-1))  # expect: GL116
        loss = loss.view(len(input_texts), -1)
        return loss.sum(-1) / (label != PAD_TOKEN_LABEL_ID).sum(-1)

    def get_perplexity(self, input_texts):
        self.model.eval()
        with torch.no_grad():
            return torch.exp(self.batch_loss(input_texts)).cpu().tolist()


torch.manual_seed(0)
scorer = LM()
texts = ["sentence one", "another sentence here", "short", "a sentence that is a bit longer"]
optimizer = torch.optim.Adam(scorer.model.parameters(), lr=1e-2)
losses = []
for step in range(20):
    scorer.model.train()
    optimizer.zero_grad()
    loss = scorer.batch_loss(texts).mean()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("perplexity", [round(p, 2) for p in scorer.get_perplexity(texts)])
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1],
                                     "device": torch.device(scorer.device).type}))
