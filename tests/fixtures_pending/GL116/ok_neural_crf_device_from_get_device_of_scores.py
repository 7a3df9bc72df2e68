# source: https://github.com/allanj/pytorch_neural_crf/blob/38c9694e94a3/src/model/module/linear_crf_inferencer.py (PRECISION31 A3)
# fixture: cpu-only
# Hard negative (GL116, pending on the engine): the CRF's methods make every working tensor on
# `curr_dev`, the device of the emission scores they are handed, through
# `dev_num = all_scores.get_device()` and `torch.device(f"cuda:{dev_num}") if dev_num >= 0 else
# torch.device("cpu")`. The module's self-test (`__main__`) builds the scores and the lengths on the
# CPU, so `curr_dev` is the CPU and `torch.where(lengths ..., mask)` mixes nothing. The engine takes
# `curr_dev` for the accelerator (the `cuda:` branch) and reports the host lengths against `mask`
# (the same root gives fast_linear_crf_inferencer.py:180 its GL116).
import torch
import torch.nn as nn

torch.manual_seed(0)


class LinearCRF(nn.Module):
    def __init__(self, label_size):
        super().__init__()
        self.label_size = label_size
        self.transition = nn.Parameter(torch.randn(label_size, label_size) * 0.1)

    def forward_unlabeled(self, all_scores, word_seq_lens):
        batch_size, seq_len, _ = all_scores.size()
        dev_num = all_scores.get_device()
        curr_dev = torch.device(f"cuda:{dev_num}") if dev_num >= 0 else torch.device("cpu")
        alpha = torch.zeros(batch_size, seq_len, self.label_size, device=curr_dev)
        alpha[:, 0] = all_scores[:, 0]
        for t in range(1, seq_len):
            prev = alpha[:, t - 1].unsqueeze(2) + self.transition.unsqueeze(0)
            alpha[:, t] = torch.logsumexp(prev, dim=1) + all_scores[:, t]
        last = torch.gather(alpha, 1, (word_seq_lens - 1).view(batch_size, 1, 1).expand(batch_size, 1, self.label_size))
        return torch.logsumexp(last.squeeze(1), dim=-1).sum()

    def forward_labeled(self, all_scores, word_seq_lens, tags):
        batch_size, seq_len, _ = all_scores.size()
        total = all_scores.new_zeros(())
        for b in range(batch_size):
            n = int(word_seq_lens[b])
            total = total + all_scores[b, torch.arange(n), tags[b, :n]].sum()
            total = total + self.transition[tags[b, : n - 1], tags[b, 1:n]].sum()
        return total

    def viterbi_decode(self, all_scores, word_seq_lens):
        batch_size, seq_len, _ = all_scores.size()
        dev_num = all_scores.get_device()
        curr_dev = torch.device(f"cuda:{dev_num}") if dev_num >= 0 else torch.device("cpu")
        score = torch.zeros(batch_size, seq_len, self.label_size, device=curr_dev)
        back = torch.zeros(batch_size, seq_len, self.label_size, dtype=torch.int64, device=curr_dev)
        mask = torch.ones_like(word_seq_lens, dtype=torch.int64, device=curr_dev)
        score[:, 0] = all_scores[:, 0]
        for t in range(1, seq_len):
            cand = score[:, t - 1].unsqueeze(2) + self.transition.unsqueeze(0)
            score[:, t], back[:, t] = cand.max(dim=1)
            score[:, t] += all_scores[:, t]
        decode = torch.zeros(batch_size, seq_len, dtype=torch.int64, device=curr_dev)
        last = torch.gather(score, 1, (word_seq_lens - 1).view(batch_size, 1, 1).expand(batch_size, 1, self.label_size))
        decode[:, 0] = last.squeeze(1).argmax(dim=-1)
        for distance2Last in range(seq_len - 1):
            pos = torch.where(word_seq_lens - distance2Last - 1 > 0, word_seq_lens - distance2Last - 1, mask)
            prev = torch.gather(back, 1, pos.view(batch_size, 1, 1).expand(batch_size, 1, self.label_size)).squeeze(1)
            decode[:, distance2Last + 1] = torch.gather(prev, 1, decode[:, distance2Last].view(batch_size, 1)).view(batch_size)
        return decode


if __name__ == "__main__":
    labels = 4
    model = LinearCRF(labels)
    emit = nn.Linear(6, labels)
    seq_len, batch_size = 7, 5
    word_seq_lens = torch.randint(2, seq_len + 1, (batch_size,))
    features = torch.randn(batch_size, seq_len, 6)
    tags = (features[..., :labels].argmax(dim=-1)) % labels
    optimizer = torch.optim.Adam(list(model.parameters()) + list(emit.parameters()), lr=0.1)
    losses = []
    for step in range(30):
        optimizer.zero_grad()
        all_scores = emit(features)
        loss = model.forward_unlabeled(all_scores, word_seq_lens) - model.forward_labeled(all_scores, word_seq_lens, tags)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        decoded = model.viterbi_decode(emit(features), word_seq_lens)
    print("decoded", decoded[0].tolist())
    print(f'GPULINT-TRAIN {{"first_loss": {losses[0]:.4f}, "last_loss": {losses[-1]:.4f}, "device": "cpu"}}')
