# source: https://github.com/yangjianxin1/GPT2-chitchat/issues/8
# GPT2-chitchat's train(): the batch loop writes `input_ids.to(device)` as a statement (the moved
# copy is thrown away) and calls `model.forward(input_ids=input_ids)` inside a try block that
# recovers from CUDA out-of-memory; the loss helper takes the device. On a GPU the embedding
# lookup gets CPU indices (the report: "Expected object of device type cuda but got device type
# cpu for argument #3 'index' in call to _th_index_select"). The dialogues are lists of token ids
# padded into a LongTensor by the collate_fn handed to the DataLoader.
# fails-on-cuda: Expected all tensors to be on the same device
import argparse
import json

import torch
import torch.nn as nn
from torch.nn import CrossEntropyLoss, DataParallel
from torch.utils.data import DataLoader

PAD_ID = 0


class TinyGPT2(nn.Module):
    def __init__(self, vocab=24, dim=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(16, dim)
        self.block = nn.Sequential(nn.Linear(dim, dim), nn.GELU())
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.size(1), device=input_ids.device)
        h = self.block(self.wte(input_ids) + self.wpe(positions))
        return (self.lm_head(h),)


def calculate_loss_and_accuracy(outputs, labels, device):
    logits = outputs[0]
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous().to(device)
    loss_fct = CrossEntropyLoss(ignore_index=PAD_ID, reduction="sum")
    loss = loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
    _, preds = shift_logits.max(dim=-1)
    not_ignore = shift_labels.ne(PAD_ID)
    num_targets = not_ignore.long().sum().item()
    correct = ((shift_labels == preds) & not_ignore).float().sum()
    return loss / num_targets, correct / num_targets


def collate_fn(batch):
    input_ids = []
    max_input_len = max(len(dialogue) for dialogue in batch)
    for btc_idx in range(len(batch)):
        input_ids.append(batch[btc_idx] + [PAD_ID] * (max_input_len - len(batch[btc_idx])))
    return torch.tensor(input_ids, dtype=torch.long)


def train(model, device, train_list, multi_gpu, args):
    train_dataloader = DataLoader(train_list, batch_size=args.batch_size, shuffle=True, collate_fn=collate_fn)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    oom_time = 0
    history = []
    for epoch in range(args.epochs):
        for batch_idx, input_ids in enumerate(train_dataloader):
            input_ids.to(device)  # expect: GL104
            try:
                outputs = model.forward(input_ids=input_ids)
                loss, accuracy = calculate_loss_and_accuracy(outputs, labels=input_ids, device=device)
                if multi_gpu:
                    loss = loss.mean()
                    accuracy = accuracy.mean()
                if args.gradient_accumulation > 1:
                    loss = loss / args.gradient_accumulation
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                if (batch_idx + 1) % args.gradient_accumulation == 0:
                    optimizer.step()
                    optimizer.zero_grad()
                history.append(loss.item())
            except RuntimeError as exception:
                if "out of memory" in str(exception):
                    oom_time += 1
                    if hasattr(torch.cuda, "empty_cache"):
                        torch.cuda.empty_cache()
                else:
                    raise exception
    return history


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--gradient_accumulation", type=int, default=1)
    parser.add_argument("--max_grad_norm", type=float, default=1.0)
    args = parser.parse_args([])
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = TinyGPT2().to(device)
    multi_gpu = False
    if torch.cuda.device_count() > 1:
        model = DataParallel(model)
        multi_gpu = True
    starts = torch.randint(1, 24, (128,)).tolist()
    train_list = [[(s + k) % 23 + 1 for k in range(6 + s % 5)] for s in starts]
    history = train(model, device, train_list, multi_gpu, args)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(history[:5]) / 5, "last_loss": sum(history[-5:]) / 5, "device": device}))


if __name__ == "__main__":
    main()
