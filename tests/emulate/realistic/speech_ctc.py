"""deepspeech-style acoustic model: conv front end, packed bidirectional GRU, CTC loss with CPU lengths."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class SpeechModel(nn.Module):
    def __init__(self, n_feats=16, hidden=32, n_classes=12):
        super().__init__()
        self.conv = nn.Conv1d(n_feats, hidden, 3, padding=1)
        self.rnn = nn.GRU(hidden, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(2 * hidden, n_classes)
        self.hidden = hidden

    def forward(self, x, lengths):
        x = F.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        h0 = torch.zeros(4, x.size(0), self.hidden, device=x.device)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed, h0)
        out, _ = pad_packed_sequence(out, batch_first=True)
        return F.log_softmax(self.fc(out), dim=-1)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = SpeechModel().to(device)
criterion = nn.CTCLoss(blank=0, zero_infinity=True)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(4):
    input_lengths = torch.tensor([30, 24, 18])
    target_lengths = torch.tensor([6, 5, 3])
    feats = torch.randn(3, 30, 16).to(device)
    targets = torch.randint(1, 12, (3, 6)).to(device)
    log_probs = model(feats, input_lengths)
    loss = criterion(log_probs.transpose(0, 1), targets, input_lengths, target_lengths)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    optimizer.step()
    print(f"step {step} ctc {loss.item():.3f}")
