# source: https://github.com/xuyige/BERT4doc-Classification/blob/9da5d119a664/codes/fine-tuning/run_classifier_multitask.py
# Hard negative (real shape, benchmarks/PRECISION37.md P37-A1): BERT4doc's multi-task fine-tuning.
# Every example carries the id of the dataset it comes from, and the model's forward picks one
# classifier head per batch with `if dataset_labels[0].item() == k:` (modeling_multitask.py). The
# training loop moves the whole batch (`batch = tuple(t.to(device) for t in batch)`); the four
# evaluation loops move input ids, mask, segment ids and labels and hand `dataset_label_id` to the
# model as the DataLoader gives it, on the host. The forward only reads it through `.item()`, a
# Python number, so nothing crashes (and under DataParallel the scatter moves it anyway). GL101
# reports the evaluation call: the engine takes every tensor argument of a module call to meet the
# model's device, without looking at how the forward uses the parameter. (In the repository the
# model class is in another file, modeling_multitask.py; here it is in this file, and GL101 still
# reports it.)
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class BertForSequenceClassification(nn.Module):
    def __init__(self, vocab_size=50, hidden=16, num_labels=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden)
        self.segment = nn.Embedding(2, hidden)
        self.pooler = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh())
        self.dropout = nn.Dropout(0.1)
        self.classifier_1 = nn.Linear(hidden, num_labels)
        self.classifier_2 = nn.Linear(hidden, num_labels)

    def forward(self, input_ids, token_type_ids, attention_mask, labels=None, dataset_labels=None):
        h = self.embeddings(input_ids) + self.segment(token_type_ids)
        h = (h * attention_mask.unsqueeze(-1))[:, 0]  # the [CLS] position
        pooled_output = self.dropout(self.pooler(h))
        if dataset_labels[0].item() == 1:
            logits = self.classifier_1(pooled_output)
        if dataset_labels[0].item() == 2:
            logits = self.classifier_2(pooled_output)
        if labels is not None:
            return nn.functional.cross_entropy(logits, labels), logits
        return logits


def make_data(dataset_id, n=64, seq=8):
    input_ids = torch.randint(1, 50, (n, seq))
    input_mask = torch.ones(n, seq, dtype=torch.long)
    segment_ids = torch.zeros(n, seq, dtype=torch.long)
    label_ids = (input_ids[:, 0] > 25).long()
    dataset_label_ids = torch.full((n,), dataset_id, dtype=torch.long)
    return TensorDataset(input_ids, input_mask, segment_ids, label_ids, dataset_label_ids)


model = BertForSequenceClassification().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
train_data_1, train_data_2 = make_data(1), make_data(2)
train_dataloader_1 = DataLoader(train_data_1, sampler=RandomSampler(train_data_1), batch_size=16)
train_dataloader_2 = DataLoader(train_data_2, sampler=RandomSampler(train_data_2), batch_size=16)
eval_data_1 = make_data(1, n=32)
eval_dataloader_1 = DataLoader(eval_data_1, sampler=SequentialSampler(eval_data_1), batch_size=16)

losses = []
for epoch in range(3):
    model.train()
    for train_dataloader in (train_dataloader_1, train_dataloader_2):
        for step, batch in enumerate(train_dataloader):
            batch = tuple(t.to(device) for t in batch)
            input_ids, input_mask, segment_ids, label_ids, dataset_label_id = batch
            loss, _ = model(input_ids, segment_ids, input_mask, label_ids, dataset_label_id)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

    model.eval()
    eval_accuracy, nb_eval_examples = 0, 0
    for input_ids, input_mask, segment_ids, label_ids, dataset_label_id in eval_dataloader_1:
        input_ids = input_ids.to(device)
        input_mask = input_mask.to(device)
        segment_ids = segment_ids.to(device)
        label_ids = label_ids.to(device)

        with torch.no_grad():
            tmp_eval_loss, logits = model(input_ids, segment_ids, input_mask, label_ids, dataset_label_id)
        eval_accuracy += (logits.argmax(1) == label_ids).sum().item()
        nb_eval_examples += input_ids.size(0)
    print("epoch", epoch, "eval accuracy", eval_accuracy / nb_eval_examples)

print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
