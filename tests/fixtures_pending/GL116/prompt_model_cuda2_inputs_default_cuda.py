# source: https://github.com/thunlp/OpenPrompt/pull/161
# fixture: static
# The tutorial puts the prompt model on a chosen GPU (prompt_model.cuda(2)) while each batch is
# moved with inputs.cuda(), which goes to the current device (GPU 0): the embedding lookup sees
# cuda:2 and cuda:0 (static: needs three GPUs).
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class PromptForClassification(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.head = nn.Linear(16, 2)

    def forward(self, input_ids):
        return self.head(self.embed(input_ids).mean(dim=1))


input_ids = torch.randint(0, 100, (64, 12))
labels = torch.randint(0, 2, (64,))
train_dataloader = DataLoader(TensorDataset(input_ids, labels), batch_size=8, shuffle=True)
prompt_model = PromptForClassification()
prompt_model = prompt_model.cuda(2)
loss_func = nn.CrossEntropyLoss()
optimizer = torch.optim.AdamW(prompt_model.parameters(), lr=1e-4)
for epoch in range(3):
    for step, (inputs, targets) in enumerate(train_dataloader):
        inputs = inputs.cuda()
        targets = targets.cuda(2)
        logits = prompt_model(inputs)  # expect: GL116
        loss = loss_func(logits, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
