# source: https://github.com/PiotrSobczak/speech-emotion-recognition/issues/12
# speech-emotion-recognition, run_training_ensemble.py with models.py, batch_iterator.py, train.py
# and model_utils.py collapsed into one script. The batch iterators build every batch with
# `torch.cuda.FloatTensor` / `torch.cuda.LongTensor` when CUDA is available; the two pretrained
# sub-models are restored by LoadableModule.load() (`load_state_dict(torch.load(path,
# map_location=get_device()))`, which copies the weights into the CPU parameters the module already
# has), and the FeatureEnsemble built from them is handed to train() without ever being moved:
# "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same".
# fails-on-cuda: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
import json
import os
import tempfile
from math import ceil

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F


def get_device():
    if torch.cuda.is_available():
        return "cuda"
    else:
        return "cpu"


class LoadableModule(torch.nn.Module):
    def load(self, model_path):
        try:
            super(LoadableModule, self).load_state_dict()
        except TypeError:
            print("Loading {} with mapping to {}".format(model_path, get_device()))
            super(LoadableModule, self).load_state_dict(torch.load(model_path, map_location=get_device()))


class AttentionLSTM(LoadableModule):
    def __init__(self, emb_dim=6, hidden_dim=16, num_classes=4):
        super(AttentionLSTM, self).__init__()
        self.hidden_size = hidden_dim
        self.lstm = nn.LSTM(emb_dim, hidden_dim)
        self.label = nn.Linear(hidden_dim, num_classes)

    def attention_net(self, lstm_output, final_state):
        hidden = final_state.squeeze(0)
        attn_weights = torch.bmm(lstm_output, hidden.unsqueeze(2)).squeeze(2)
        soft_attn_weights = F.softmax(attn_weights, 1)
        return torch.bmm(lstm_output.transpose(1, 2), soft_attn_weights.unsqueeze(2)).squeeze(2)

    def extract(self, input):
        output, (final_hidden_state, final_cell_state) = self.lstm(input.transpose(0, 1))
        return self.attention_net(output.permute(1, 0, 2), final_hidden_state)

    def forward(self, input):
        return self.label(self.extract(input))


class CNN(LoadableModule):
    def __init__(self, input_size=8, num_filters=4, pool_size=2, num_classes=4):
        super(CNN, self).__init__()
        self.conv_layers = nn.Sequential(nn.Conv2d(1, num_filters, 3, padding=1), nn.ReLU(),
                                         nn.MaxPool2d(pool_size, pool_size))
        self.flat_size = num_filters * (input_size // pool_size) ** 2
        self.fc2 = nn.Linear(self.flat_size, num_classes)

    def extract(self, x):
        return self.conv_layers(x.unsqueeze(1)).view(-1, self.flat_size)

    def forward(self, x):
        return self.fc2(self.extract(x))


class FeatureEnsemble(LoadableModule):
    def __init__(self, acoustic_model=None, linguistic_model=None):
        super(FeatureEnsemble, self).__init__()
        self.acoustic_model = acoustic_model if acoustic_model is not None else CNN()
        self.linguistic_model = linguistic_model if linguistic_model is not None else AttentionLSTM()
        self.feature_size = self.linguistic_model.hidden_size + self.acoustic_model.flat_size
        self.fc = nn.Linear(self.feature_size, 4)
        self.dropout = torch.nn.Dropout(0.2)

    def forward(self, input_tuple):
        acoustic_features, linguistic_features = input_tuple
        acoustic_output_features = self.acoustic_model.extract(acoustic_features)
        linguistic_output_features = self.linguistic_model.extract(linguistic_features)
        all_features = torch.cat((acoustic_output_features, linguistic_output_features), 1)
        return self.fc(self.dropout(all_features))


class BatchIterator:
    def __init__(self, dataset, labels, batch_size=16):
        self._dataset = dataset
        self._size = len(dataset)
        self._labels = labels
        self._batch_size = batch_size
        self._label_tensor_type = torch.cuda.LongTensor if torch.cuda.is_available() else torch.LongTensor
        self._input_tensor_type = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor

    def __len__(self):
        return int(self._size / self._batch_size)

    def __call__(self):
        num_batches = ceil(self._size / self._batch_size)
        for i in range(num_batches):
            input_batch = self._dataset[i * self._batch_size:(i + 1) * self._batch_size]
            labels_batch = self._labels[i * self._batch_size:(i + 1) * self._batch_size]
            yield self._input_tensor_type(input_batch), self._label_tensor_type(labels_batch)


class EnsembleBatchIterator:
    def __init__(self, acoustic_iterator, linguistic_iterator):
        self._acoustic_iterator = acoustic_iterator
        self._linguistic_iterator = linguistic_iterator

    def __call__(self):
        for acoustic_tuple, linguistic_tuple in zip(self._acoustic_iterator(), self._linguistic_iterator()):
            acoustic_batch, acoustic_labels = acoustic_tuple
            linguistic_batch, linguistic_labels = linguistic_tuple
            yield (acoustic_batch, linguistic_batch), acoustic_labels

    def __len__(self):
        return len(self._acoustic_iterator)


def run_epoch_train(model, iterator, optimizer, criterion):
    model.train()
    epoch_loss = 0
    for batch, labels in iterator():
        optimizer.zero_grad()
        predictions = model(batch)  # expect: GL112
        loss = criterion(predictions, labels)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
    return epoch_loss / len(iterator)


def run_epoch_eval(model, iterator, criterion):
    model.eval()
    epoch_loss = 0
    with torch.no_grad():
        for batch, labels in iterator():
            predictions = model(batch)  # expect: GL112
            epoch_loss += criterion(predictions.float(), labels).item()
    return epoch_loss / len(iterator)


def train(model, train_iterator, validation_iterator, n_epochs=8, lr=5e-3):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    criterion = torch.nn.CrossEntropyLoss()
    criterion = criterion.to(get_device())
    losses = []
    for epoch in range(n_epochs):
        val_loss = run_epoch_eval(model, validation_iterator, criterion)
        losses.append(run_epoch_train(model, train_iterator, optimizer, criterion))
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    rng = np.random.RandomState(0)
    labels = rng.randint(0, 4, size=96)
    spectrograms = (rng.randn(96, 8, 8) + labels[:, None, None] * 0.5).astype(np.float32)
    transcripts = (rng.randn(96, 5, 6) + labels[:, None, None] * 0.5).astype(np.float32)
    train_iterator = EnsembleBatchIterator(BatchIterator(spectrograms[:64], labels[:64]),
                                           BatchIterator(transcripts[:64], labels[:64]))
    validation_iterator = EnsembleBatchIterator(BatchIterator(spectrograms[64:], labels[64:]),
                                                BatchIterator(transcripts[64:], labels[64:]))
    saved = tempfile.mkdtemp()
    torch.save(CNN().state_dict(), os.path.join(saved, "acoustic_spec_model.torch"))
    torch.save(AttentionLSTM().state_dict(), os.path.join(saved, "linguistic_model.torch"))

    acoustic_model = CNN()
    acoustic_model.load(os.path.join(saved, "acoustic_spec_model.torch"))
    linguistic_model = AttentionLSTM()
    linguistic_model.load(os.path.join(saved, "linguistic_model.torch"))
    model = FeatureEnsemble(acoustic_model, linguistic_model)

    losses = train(model, train_iterator, validation_iterator)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": get_device()}))
