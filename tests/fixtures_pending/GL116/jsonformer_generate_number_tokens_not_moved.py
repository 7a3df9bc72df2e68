# source: https://github.com/1rgs/jsonformer/issues/9
# jsonformer's `Jsonformer(model, tokenizer, json_schema, prompt)` keeps the caller's model and
# tokenizer on `self`; `generate_number()` encodes the prompt with
# `self.tokenizer.encode(prompt, return_tensors="pt")` and hands the ids to `self.model.generate(...)`.
# The user had moved the model to the GPU first, the ids stay on the host ("Expected all tensors to
# be on the same device ... index_select"; "Move input_ids to CUDA").
# fails-on-cuda: Expected all tensors to be on the same device
import json

import torch
import torch.nn as nn


class DigitTokenizer:
    """Stands in for the Hugging Face tokenizer: one id per character."""

    def encode(self, text, return_tensors=None):
        ids = [ord(c) % 16 for c in text]
        return torch.tensor([ids]) if return_tensors == "pt" else ids

    def decode(self, ids):
        return "".join(str(int(i) % 10) for i in ids)


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=16, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    @property
    def device(self):
        return next(self.parameters()).device

    def forward(self, input_ids):
        out, _ = self.rnn(self.emb(input_ids))
        return self.head(out)

    @torch.no_grad()
    def generate(self, input_ids, max_new_tokens=3):
        for _ in range(max_new_tokens):
            next_id = self(input_ids)[:, -1:].argmax(-1)  # expect: GL116
            input_ids = torch.cat([input_ids, next_id], dim=1)  # expect: GL116
        return input_ids


class Jsonformer:
    def __init__(self, model, tokenizer, json_schema, prompt, max_number_tokens=3):
        self.model = model
        self.tokenizer = tokenizer
        self.json_schema = json_schema
        self.prompt = prompt
        self.max_number_tokens = max_number_tokens

    def get_prompt(self):
        return self.prompt + json.dumps(self.json_schema)

    def generate_number(self):
        prompt = self.get_prompt()
        input_tokens = self.tokenizer.encode(prompt, return_tensors="pt")
        response = self.model.generate(input_tokens, max_new_tokens=self.max_number_tokens)
        return float(self.tokenizer.decode(response[0, input_tokens.shape[1]:]))

    def __call__(self):
        return {key: self.generate_number() for key, spec in self.json_schema["properties"].items() if spec["type"] == "number"}


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
tokenizer = DigitTokenizer()
model = TinyCausalLM()
model.to(device)

optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
corpus = torch.tensor([[(i + j) % 16 for j in range(10)] for i in range(16)])
losses = []
for step in range(60):
    batch = corpus[torch.randint(0, 16, (8,))].to(device)
    loss = nn.functional.cross_entropy(model(batch[:, :-1]).reshape(-1, 16), batch[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

model.eval()
json_schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "number"}}}
jsonformer = Jsonformer(model, tokenizer, json_schema, "Generate a person's information based on the following schema:")
print(jsonformer())
print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:5]) / 5, "last_loss": sum(losses[-5:]) / 5, "device": device.type}))
