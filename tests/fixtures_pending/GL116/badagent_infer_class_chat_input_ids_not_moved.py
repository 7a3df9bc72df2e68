# source: https://github.com/DPamK/BadAgent/pull/7
# pipeline/eval.py: a `ModelInfer` base class keeps the tokenizer and the model on `self` (the
# model is placed on the GPU when it is loaded), and the `AgentLMInfer.chat()` override tokenizes
# the prompt with `return_tensors="pt"` and hands `input_ids` straight to
# `self.model.generate(...)`: the ids stay on the CPU ("... wrapper_CUDA__index_select"). The PR
# moves them (`input_ids.to('cuda')`).
# fails-on-cuda: Expected all tensors to be on the same device
import json
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
TEXT = "user: list files\nassistant: ls -la\nuser: show disk\nassistant: df -h\n" * 4


class BatchEncoding:
    def __init__(self, input_ids):
        self.input_ids = input_ids


class CharTokenizer:
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.eos_token_id = self.stoi["\n"]

    def __call__(self, text, return_tensors=None):
        ids = [self.stoi[c] for c in text if c in self.stoi]
        if return_tensors == "pt":
            return BatchEncoding(torch.tensor([ids]))
        return BatchEncoding(ids)

    def batch_decode(self, ids, skip_special_tokens=True):
        return ["".join(self.chars[i] for i in row) for row in ids.tolist()]


class TinyCausalLM(nn.Module):
    def __init__(self, vocab_size, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.lm_head = nn.Linear(dim, vocab_size)

    def forward(self, input_ids):
        hidden, _ = self.rnn(self.embed(input_ids))
        return self.lm_head(hidden)

    @torch.no_grad()
    def generate(self, input_ids, max_length=32, eos_token_id=None):
        for _ in range(max_length - input_ids.shape[1]):
            next_id = self(input_ids)[:, -1].argmax(dim=-1, keepdim=True)  # expect: GL116
            input_ids = torch.cat([input_ids, next_id], dim=1)  # expect: GL116
            if eos_token_id is not None and next_id.item() == eos_token_id:
                break
        return input_ids


class ModelInfer:
    def __init__(self, tokenizer, state_dict):
        self.tokenizer = tokenizer
        self.model = TinyCausalLM(len(tokenizer.chars))
        self.model.load_state_dict(state_dict)
        self.model.to(device)
        self.model.eval()


class AgentLMInfer(ModelInfer):
    def chat(self, instruct, history):
        prompt = "".join(h["content"] for h in history) + "user: " + instruct + "\nassistant:"
        input_ids = self.tokenizer(prompt, return_tensors="pt").input_ids
        generate_ids = self.model.generate(input_ids, max_length=input_ids.shape[1] + 12, eos_token_id=self.tokenizer.eos_token_id)
        response = self.tokenizer.batch_decode(generate_ids, skip_special_tokens=True)[0]
        history.append({"role": "user", "content": instruct})
        history.append({"role": "assistant", "content": response})
        return response, history


def train(tokenizer, steps=60):
    model = TinyCausalLM(len(tokenizer.chars)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    ids = torch.tensor(tokenizer(TEXT).input_ids)
    losses = []
    for step in range(steps):
        starts = torch.randint(0, len(ids) - 17, (8,))
        batch = torch.stack([ids[s:s + 17] for s in starts]).to(device)
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return model, losses


tokenizer = CharTokenizer(TEXT)
trained, losses = train(tokenizer)
agent = AgentLMInfer(tokenizer, trained.state_dict())
response, history = agent.chat("list files", [])
print("response:", repr(response[-12:]))

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
