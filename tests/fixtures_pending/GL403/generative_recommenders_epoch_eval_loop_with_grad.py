# source: https://github.com/meta-recsys/generative-recommenders/pull/387
# generative-recommenders' research trainer (train.py, train_fn): at the end of every epoch the model
# is put in eval mode and every eval batch goes through `eval_metrics_v2_from_tensors(...)`, a helper
# that runs the model's forward and scores the top-k items; the loop is not under `torch.no_grad()`,
# so each eval batch records a graph it never uses ("Optimize eval loops with torch.no_grad() to
# reduce GPU memory usage" wraps the eval loops in `torch.no_grad()`).
import json

import torch
import torch.nn as nn
import torch.nn.functional as F


class SimpleSASRec(nn.Module):
    def __init__(self, num_items, dim):
        super().__init__()
        self._item_emb = nn.Embedding(num_items + 1, dim, padding_idx=0)
        self._encoder = nn.GRU(dim, dim, batch_first=True)
        self._dropout = nn.Dropout(0.1)

    def get_item_embeddings(self, ids):
        return self._item_emb(ids)

    def forward(self, past_ids):
        out, _ = self._encoder(self._dropout(self.get_item_embeddings(past_ids)))
        return out[:, -1, :]


def sampled_softmax_loss(model, seq_embeddings, target_ids):
    logits = seq_embeddings @ model.get_item_embeddings(torch.arange(1, model._item_emb.num_embeddings, device=seq_embeddings.device)).T
    return F.cross_entropy(logits, target_ids - 1)


def eval_metrics_from_tensors(model, past_ids, target_ids, k=10):
    seq_embeddings = model(past_ids)
    all_items = model.get_item_embeddings(torch.arange(1, model._item_emb.num_embeddings, device=past_ids.device))
    scores = seq_embeddings @ all_items.T
    top_k = scores.topk(k, dim=1).indices + 1
    return {"hr@10": (top_k == target_ids.unsqueeze(1)).any(dim=1).float()}


def make_rows(gen, n, num_items, seq_len):
    start = torch.randint(1, num_items - seq_len, (n, 1), generator=gen)
    seqs = start + torch.arange(seq_len + 1)
    return seqs[:, :-1], seqs[:, -1]


def train_fn():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    num_items, seq_len = 60, 6
    train_ids, train_targets = make_rows(gen, 256, num_items, seq_len)
    eval_ids, eval_targets = make_rows(gen, 64, num_items, seq_len)
    train_data_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_ids, train_targets), batch_size=32, shuffle=True, generator=gen)
    eval_data_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(eval_ids, eval_targets), batch_size=32)
    model = SimpleSASRec(num_items, 32).to(device)
    learning_rate, num_warmup_steps, eval_interval = 1e-2, 10, 20
    opt = torch.optim.AdamW(model.parameters(), lr=learning_rate, betas=(0.9, 0.98), weight_decay=0.0)
    batch_id = 0
    history = []
    for epoch in range(6):
        model.train()
        epoch_losses = []
        for past_ids, target_ids in iter(train_data_loader):
            past_ids, target_ids = past_ids.to(device), target_ids.to(device)
            if (batch_id % eval_interval) == 0:
                model.eval()
                with torch.no_grad():
                    eval_dict = eval_metrics_from_tensors(model, past_ids, target_ids)
                model.train()
            opt.zero_grad()
            seq_embeddings = model(past_ids)
            loss = sampled_softmax_loss(model, seq_embeddings, target_ids)
            loss.backward()
            if batch_id < num_warmup_steps:
                lr_scalar = min(1.0, float(batch_id + 1) / num_warmup_steps)
                for pg in opt.param_groups:
                    pg["lr"] = lr_scalar * learning_rate
            opt.step()
            epoch_losses.append(loss.detach())
            batch_id += 1
        history.append(torch.stack(epoch_losses).mean().item())

        model.eval()
        eval_dict_all = []
        for eval_iter, (past_ids, target_ids) in enumerate(iter(eval_data_loader)):
            eval_dict = eval_metrics_from_tensors(model, past_ids.to(device), target_ids.to(device))  # expect: GL403
            eval_dict_all.append(eval_dict["hr@10"])
        hr_10 = torch.cat(eval_dict_all).mean().item()
    return history, device, hr_10


history, device, hr_10 = train_fn()
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
