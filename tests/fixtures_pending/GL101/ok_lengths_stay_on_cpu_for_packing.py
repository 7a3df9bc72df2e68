# source: https://github.com/bentrevett/pytorch-sentiment-analysis/blob/main/2%20-%20Recurrent%20Neural%20Networks.ipynb
# Hard negative (GL101): the LSTM sentiment notebook's train(): `ids` and `label` are moved to the
# device, `length` is left on the CPU on purpose and passed to the model, whose forward hands it
# to nn.utils.rnn.pack_padded_sequence (which requires the lengths as a 1-D CPU int64 tensor).
# Moving `length` would be wrong (or force a copy back); the script is correct on a GPU.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class LSTM(nn.Module):
    def __init__(self, vocab_size, embedding_dim, hidden_dim, output_dim, pad_index):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_index)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, batch_first=True)
        self.fc = nn.Linear(hidden_dim, output_dim)

    def forward(self, ids, length):
        embedded = self.embedding(ids)
        packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, length, batch_first=True, enforce_sorted=False)
        packed_output, (hidden, cell) = self.lstm(packed_embedded)
        return self.fc(hidden[-1])


def train(data_loader, model, criterion, optimizer, device):
    model.train()
    epoch_losses = []
    for ids, length, label in data_loader:
        ids = ids.to(device)
        label = label.to(device)
        prediction = model(ids, length)
        loss = criterion(prediction, label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_losses.append(loss.item())
    return sum(epoch_losses) / len(epoch_losses)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
pad_index = 0
length = torch.randint(3, 11, (320,))
ids = torch.randint(1, 30, (320, 10))
ids[torch.arange(10)[None, :] >= length[:, None]] = pad_index
label = ((ids == 7).sum(1) > 0).long()
train_data_loader = DataLoader(TensorDataset(ids, length, label), batch_size=32, shuffle=True)
model = LSTM(30, 16, 16, 2, pad_index).to(device)
criterion = nn.CrossEntropyLoss().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
history = [train(train_data_loader, model, criterion, optimizer, device) for epoch in range(6)]
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
