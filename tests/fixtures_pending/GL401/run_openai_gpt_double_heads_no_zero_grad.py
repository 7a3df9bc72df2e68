# source: https://github.com/huggingface/transformers/issues/340
# pytorch-pretrained-BERT's examples/run_openai_gpt.py fine-tunes a double-heads model (LM head +
# multiple-choice head) on ROCStories: main() parses args, builds the model, moves it to `device`,
# and the epoch loop (trange) iterates a tqdm over the train dataloader, moves each batch as a
# tuple, takes `loss = args.lm_coef * losses[0] + losses[1]`, calls loss.backward() and
# optimizer.step(), and keeps an exponential average of loss.item(); nothing ever clears the
# gradients ("that's a mistake indeed", fixed on master).
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, RandomSampler, TensorDataset


class DoubleHeadsLite(nn.Module):
    def __init__(self, vocab=20, hidden=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.lm_head = nn.Linear(hidden, vocab)
        self.mc_head = nn.Linear(hidden, 1)

    def forward(self, input_ids, mc_token_ids, lm_labels, mc_labels):
        h = self.embed(input_ids)  # (batch, choices, seq, hidden)
        lm_logits = self.lm_head(h)
        lm_loss = F.cross_entropy(lm_logits[..., :-1, :].reshape(-1, lm_logits.size(-1)), lm_labels[..., 1:].reshape(-1))
        cls = h.gather(2, mc_token_ids[..., None, None].expand(-1, -1, 1, h.size(-1))).squeeze(2)
        mc_logits = self.mc_head(cls).squeeze(-1)
        mc_loss = F.cross_entropy(mc_logits, mc_labels)
        return lm_loss, mc_loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_train_epochs", type=int, default=4)
    parser.add_argument("--train_batch_size", type=int, default=8)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--lm_coef", type=float, default=0.5)
    args = parser.parse_args([])

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    n = 64
    input_ids = torch.randint(0, 20, (n, 2, 6))
    mc_token_ids = torch.full((n, 2), 5)
    lm_labels = input_ids.clone()
    mc_labels = (input_ids[:, 0, 0] > input_ids[:, 1, 0]).long()
    train_data = TensorDataset(input_ids, mc_token_ids, lm_labels, mc_labels)
    train_dataloader = DataLoader(train_data, sampler=RandomSampler(train_data), batch_size=args.train_batch_size)

    model = DoubleHeadsLite()
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)

    history = []
    model.train()
    for _ in range(args.num_train_epochs):
        tr_loss = 0
        nb_tr_steps = 0
        exp_average_loss = None
        for step, batch in enumerate(train_dataloader):
            batch = tuple(t.to(device) for t in batch)
            input_ids, mc_token_ids, lm_labels, mc_labels = batch
            losses = model(input_ids, mc_token_ids, lm_labels, mc_labels)
            loss = args.lm_coef * losses[0] + losses[1]
            loss.backward()
            optimizer.step()  # expect: GL401
            tr_loss += loss.item()
            exp_average_loss = loss.item() if exp_average_loss is None else 0.7 * exp_average_loss + 0.3 * loss.item()
            nb_tr_steps += 1
        history.append(tr_loss / nb_tr_steps)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))


if __name__ == "__main__":
    main()
