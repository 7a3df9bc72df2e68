# source: https://github.com/pai4451/ML2021/issues/2
# HW7 (extractive QA, notebook turned script): the batch loop adds `output.loss` (the model
# output's loss field, still attached to its graph) into `train_loss`, which is only reset every
# logging_step steps, so the graphs of every step in between stay alive ("my cpu ram keep
# increasing"; `train_loss += output.loss.detach() or .item()` solved it).
import json
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
fp16_training = False


@dataclass
class QAOutput:
    loss: torch.Tensor
    start_logits: torch.Tensor
    end_logits: torch.Tensor


class BertForQuestionAnswering(nn.Module):
    def __init__(self, vocab=40, hidden=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.type_emb = nn.Embedding(2, hidden)
        self.qa_outputs = nn.Linear(hidden, 2)

    def forward(self, input_ids, token_type_ids, attention_mask, start_positions, end_positions):
        h = torch.tanh(self.emb(input_ids) + self.type_emb(token_type_ids))
        logits = self.qa_outputs(h).masked_fill(attention_mask[..., None] == 0, -1e4)
        start_logits, end_logits = logits.unbind(-1)
        loss = (F.cross_entropy(start_logits, start_positions) + F.cross_entropy(end_logits, end_positions)) / 2
        return QAOutput(loss, start_logits, end_logits)


torch.manual_seed(0)
n, L = 128, 16
input_ids = torch.randint(1, 40, (n, L))
token_type_ids = (torch.arange(L) >= 6).long().expand(n, L)
attention_mask = torch.ones(n, L, dtype=torch.long)
start = (input_ids[:, 6:] % 5 == 0).float().argmax(dim=1) + 6
end = torch.clamp(start + 1, max=L - 1)
train_loader = DataLoader(TensorDataset(input_ids, token_type_ids, attention_mask, start, end), batch_size=16, shuffle=True)

model = BertForQuestionAnswering().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-2)

num_epoch = 3
logging_step = 4
history = []
model.train()
for epoch in range(num_epoch):
    step = 1
    train_loss = train_acc = 0
    for data in train_loader:
        data = [i.to(device) for i in data]
        output = model(input_ids=data[0], token_type_ids=data[1], attention_mask=data[2], start_positions=data[3], end_positions=data[4])
        start_index = torch.argmax(output.start_logits, dim=1)
        end_index = torch.argmax(output.end_logits, dim=1)
        train_acc += ((start_index == data[3]) & (end_index == data[4])).float().mean()
        train_loss += output.loss  # expect: GL402
        output.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1
        if step % logging_step == 0:
            history.append(train_loss.item() / logging_step)
            print(f"Epoch {epoch + 1} | Step {step} | loss = {train_loss.item() / logging_step:.3f}, acc = {train_acc / logging_step:.3f}")
            train_loss = train_acc = 0

print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": torch.device(device).type}))
