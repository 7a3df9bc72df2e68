# source: https://github.com/webis-de/small-text/issues/40
# small_text/integrations/transformers/classifiers/classification.py:
# TransformerBasedClassification._train_loop_epoch() calls self.model.train() once and hands the
# epoch's batches to _train_loop_process_batches(); with validations_per_epoch > 1 that loop
# validates every few batches through self._perform_model_selection() -> self.validate(), which
# calls self.model.eval() and never switches back, so from the second validation on the batches
# are trained in eval mode (dropout off).
import json

import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, vocab=40, dim=16, num_classes=2):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim)
        self.dropout = nn.Dropout(0.2)
        self.out = nn.Linear(dim, num_classes)

    def forward(self, x):
        return self.out(self.dropout(self.emb(x)))


class TransformerBasedClassification:
    def __init__(self, num_epochs=4, validations_per_epoch=2, device=None):
        self.num_epochs = num_epochs
        self.validations_per_epoch = validations_per_epoch
        self.device = device
        self.model = None

    def fit(self, train_set, validation_set):
        self.model = Classifier().to(self.device)
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=2e-2)
        self.criterion = nn.CrossEntropyLoss()
        self.history = []
        for epoch in range(self.num_epochs):
            self._train_loop_epoch(train_set, validation_set, optimizer)
        return self

    def _train_loop_epoch(self, sub_train, sub_valid, optimizer):
        self.model.train()
        return self._train_loop_process_batches(sub_train, sub_valid, optimizer)

    def _train_loop_process_batches(self, sub_train, sub_valid, optimizer):
        validate_every = max(len(sub_train) // self.validations_per_epoch, 1)
        for i, (text, cls) in enumerate(sub_train):
            text, cls = text.to(self.device), cls.to(self.device)
            optimizer.zero_grad()
            loss = self.criterion(self.model(text), cls)
            loss.backward()
            optimizer.step()
            self.history.append(loss.item())
            if self.validations_per_epoch > 1 and (i + 1) % validate_every == 0:
                self._perform_model_selection(sub_valid)

    def _perform_model_selection(self, sub_valid):
        valid_loss, valid_acc = self.validate(sub_valid)
        return valid_loss

    def validate(self, validation_set):
        self.model.eval()  # expect: GL404
        valid_loss, acc = 0.0, 0.0
        with torch.no_grad():
            for text, cls in validation_set:
                text, cls = text.to(self.device), cls.to(self.device)
                output = self.model(text)
                valid_loss += self.criterion(output, cls).item()
                acc += (output.argmax(1) == cls).float().mean().item()
        return valid_loss / len(validation_set), acc / len(validation_set)


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
tokens = torch.randint(0, 40, (128, 8))
labels = (tokens < 20).sum(dim=1).gt(4).long()
train_set = [(tokens[i:i + 16], labels[i:i + 16]) for i in range(0, 96, 16)]
valid_set = [(tokens[96:], labels[96:])]
clf = TransformerBasedClassification(device=device).fit(train_set, valid_set)
print("GPULINT-TRAIN " + json.dumps({"first_loss": clf.history[0], "last_loss": clf.history[-1], "device": device.type}))
