# source: https://github.com/huggingface/transformers/issues/3721
# examples/run_language_modeling.py's train(args, train_dataset, model, tokenizer): the sampler is
# `RandomSampler(train_dataset) if args.local_rank == -1 else DistributedSampler(train_dataset)`,
# the model is wrapped in DistributedDataParallel when local_rank != -1, and the epochs run as
# `train_iterator = trange(epochs_trained, int(args.num_train_epochs), desc="Epoch")` /
# `for _ in train_iterator:` (the epoch number is thrown away) with gradient accumulation inside;
# set_epoch is never called, so every epoch sees the same order on every rank. (tqdm's trange is a
# plain range here.)
# fixture: torchrun 2
import argparse
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, RandomSampler, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class TinyLM(nn.Module):
    def __init__(self, vocab=12, dim=24):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, input_ids, labels=None):
        logits = self.head(self.emb(input_ids))
        loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))
        return (loss, logits)


def train(args, train_dataset, model):
    args.train_batch_size = args.per_gpu_train_batch_size * max(1, args.n_gpu)
    train_sampler = RandomSampler(train_dataset) if args.local_rank == -1 else DistributedSampler(train_dataset)  # expect: GL302
    train_dataloader = DataLoader(train_dataset, sampler=train_sampler, batch_size=args.train_batch_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
    if args.local_rank != -1:
        model = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    global_step = 0
    epochs_trained = 0
    tr_loss = 0.0
    losses = []
    model.zero_grad()
    train_iterator = range(epochs_trained, int(args.num_train_epochs))
    for _ in train_iterator:
        for step, batch in enumerate(train_dataloader):
            inputs, labels = (batch[0], batch[0])
            inputs = inputs.to(args.device)
            labels = labels.to(args.device)
            model.train()
            outputs = model(inputs, labels=labels)
            loss = outputs[0]
            if args.gradient_accumulation_steps > 1:
                loss = loss / args.gradient_accumulation_steps
            loss.backward()
            tr_loss += loss.item()
            losses.append(loss.item() * args.gradient_accumulation_steps)
            if (step + 1) % args.gradient_accumulation_steps == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                model.zero_grad()
                global_step += 1
    return global_step, tr_loss / global_step, losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", "-1")))
    parser.add_argument("--per_gpu_train_batch_size", type=int, default=8)
    parser.add_argument("--gradient_accumulation_steps", type=int, default=2)
    parser.add_argument("--learning_rate", type=float, default=1e-2)
    parser.add_argument("--max_grad_norm", type=float, default=1.0)
    parser.add_argument("--num_train_epochs", type=float, default=4.0)
    args = parser.parse_args([])
    if args.local_rank == -1:
        args.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        args.n_gpu = 0 if args.device.type == "cpu" else 1
    else:
        dist.init_process_group(backend="gloo")
        args.device = torch.device("cpu")
        args.n_gpu = 0
    torch.manual_seed(42)
    seqs = torch.stack([(torch.arange(10) * (k % 3 + 1) + k) % 12 for k in range(96)])
    model = TinyLM().to(args.device)
    global_step, tr_loss, losses = train(args, TensorDataset(seqs), model)
    if args.local_rank in [-1, 0]:
        print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": args.device.type}))
    if args.local_rank != -1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
