# source: https://github.com/rociomer/dl-chem-101/issues/10
# Hard negative for the SMILES LSTM report: the fix the issue asks for, the initial hidden state is
# made on the input's device (`device=input_vector.device`) instead of the global `get_device()`, so
# a model reloaded onto the CPU on a machine with a GPU scores on the CPU. The wrapper keeps its own
# `self._device` (the training instance on the available device, the reloaded one on "cpu") and moves
# the network and each batch with it, so every call meets its own network's device.
import json
import os
import tempfile

import torch
import torch.nn as nn


def get_device():
    """The available device (GPU or CPU)."""
    if torch.cuda.is_available():
        device = "cuda"
    else:
        device = "cpu"
    return device


class RNN(nn.Module):
    def __init__(self, voc_size, layer_size=32, num_layers=2, embedding_layer_size=16):
        super().__init__()
        self._layer_size = layer_size
        self._num_layers = num_layers
        self._embedding = nn.Embedding(voc_size, embedding_layer_size)
        self._rnn = nn.LSTM(embedding_layer_size, layer_size, num_layers=num_layers, batch_first=True)
        self._linear = nn.Linear(layer_size, voc_size)

    def forward(self, input_vector, hidden_state=None):
        batch_size, seq_size = input_vector.size()
        if hidden_state is None:
            size = (self._num_layers, batch_size, self._layer_size)
            hidden_state = (
                torch.zeros(*size, device=input_vector.device),
                torch.zeros(*size, device=input_vector.device),
            )
        embedded_data = self._embedding(input_vector)
        output_vector, hidden_state_out = self._rnn(embedded_data, hidden_state)
        output_vector = output_vector.reshape(-1, self._layer_size)
        output_data = self._linear(output_vector).view(batch_size, seq_size, -1)
        return output_data, hidden_state_out


class SmilesLSTM:
    def __init__(self, voc_size, device=None):
        self._device = device if device is not None else get_device()
        self.network = RNN(voc_size)
        self.network.to(self._device)
        self._nll_loss = nn.NLLLoss(reduction="none")

    @classmethod
    def load_from_file(cls, path, voc_size, device="cpu"):
        model = cls(voc_size, device=device)
        model.network.load_state_dict(torch.load(path, map_location=device))
        model.network.eval()
        return model

    def save_state(self, path):
        torch.save(self.network.state_dict(), path)

    def likelihood(self, sequences):
        sequences = sequences.to(self._device)
        logits, _ = self.network(sequences[:, :-1])
        log_probs = logits.log_softmax(dim=2)
        return self._nll_loss(log_probs.transpose(1, 2), sequences[:, 1:]).sum(dim=1)


def make_sequences(n, voc_size, length, generator):
    # token 1 starts every sequence; each next token is the previous one plus one (mod the vocabulary)
    start = torch.randint(2, voc_size, (n, 1), generator=generator)
    steps = torch.arange(length).unsqueeze(0)
    body = (start + steps) % (voc_size - 2) + 2
    return torch.cat([torch.ones(n, 1, dtype=torch.long), body], dim=1)


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    voc_size = 12
    data = make_sequences(64, voc_size, 10, g)

    model = SmilesLSTM(voc_size)
    optimizer = torch.optim.Adam(model.network.parameters(), lr=1e-2)
    first_loss = None
    for step in range(30):
        idx = torch.randint(0, data.size(0), (16,), generator=g)
        loss = model.likelihood(data[idx]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if first_loss is None:
            first_loss = loss.item()

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.pt")
        model.save_state(path)
        scorer = SmilesLSTM.load_from_file(path, voc_size, device="cpu")
        with torch.no_grad():
            last_loss = scorer.likelihood(data[:16]).mean().item()

    device = next(model.network.parameters()).device.type
    print("GPULINT-TRAIN " + json.dumps({"first_loss": first_loss, "last_loss": last_loss, "device": device}))


if __name__ == "__main__":
    main()
