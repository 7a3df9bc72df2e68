# source: https://github.com/timoschick/pet/issues/86
# PET's TransformerModelWrapper keeps the language model on `self.model`. `train(data, device)` and
# `eval(data, device)` move each batch with `{k: t.to(device) for k, t in batch.items()}` but never
# move the model: the library's own `train_pet`/`evaluate` helpers call `wrapper.model.to(device)`
# first. The reporter reloaded a trained wrapper with the classmethod
# `TransformerModelWrapper.from_pretrained(path)` (the model comes back on the host) and called
# `wrapper.eval(examples, "cuda")` directly: the embedding lookup fails ("Expected object of device
# type cuda but got device type cpu ... index_select"). The answer was `wrapper.model.to("cuda")`.
# (PET dispatches the evaluation step through a dict of lambdas; this keeps one wrapper type and
# calls its step method directly.)
# fails-on-cuda: Expected all tensors to be on the same device
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, TensorDataset

CONFIG_NAME = "wrapper_config.json"


class SequenceClassifier(nn.Module):
    def __init__(self, vocab_size=40, dim=16, num_labels=2):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, dim)
        self.head = nn.Linear(dim, num_labels)

    def forward(self, input_ids, attention_mask):
        h = self.emb(input_ids) * attention_mask.unsqueeze(-1)
        return (self.head(h.sum(1) / attention_mask.sum(1, keepdim=True)),)

    def save_pretrained(self, path):
        torch.save(self.state_dict(), os.path.join(path, "model.bin"))

    @classmethod
    def from_pretrained(cls, path):
        model = cls()
        model.load_state_dict(torch.load(os.path.join(path, "model.bin"), map_location="cpu"))
        return model


def make_examples(n, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 40, (n, 8), generator=g)
    labels = (ids < 20).sum(1).gt(4).long()
    return ids, labels


class TransformerModelWrapper:
    def __init__(self, config):
        self.config = config
        self.model = SequenceClassifier(num_labels=len(config["label_list"]))

    @classmethod
    def from_pretrained(cls, path):
        wrapper = TransformerModelWrapper.__new__(TransformerModelWrapper)
        with open(os.path.join(path, CONFIG_NAME)) as f:
            wrapper.config = json.load(f)
        wrapper.model = SequenceClassifier.from_pretrained(path)
        return wrapper

    def save(self, path):
        self.model.save_pretrained(path)
        with open(os.path.join(path, CONFIG_NAME), "w") as f:
            json.dump(self.config, f)

    def _generate_dataset(self, data):
        ids, labels = data
        return TensorDataset(ids, torch.ones_like(ids), labels, torch.arange(len(ids)))

    @staticmethod
    def _as_dict(batch):
        return dict(zip(("input_ids", "attention_mask", "labels", "idx"), batch))

    def train(self, task_train_data, device, per_gpu_train_batch_size=8, num_train_epochs=3, learning_rate=5e-2):
        dataset = self._generate_dataset(task_train_data)
        loader = DataLoader(dataset, sampler=RandomSampler(dataset), batch_size=per_gpu_train_batch_size)
        optimizer = torch.optim.Adam(self.model.parameters(), lr=learning_rate)
        losses = []
        self.model.train()
        for _ in range(num_train_epochs):
            for batch in loader:
                batch = {k: t.to(device) for k, t in self._as_dict(batch).items()}
                loss = self.sequence_classifier_train_step(batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        return losses

    def eval(self, eval_data, device, per_gpu_eval_batch_size=8):
        dataset = self._generate_dataset(eval_data)
        loader = DataLoader(dataset, sampler=SequentialSampler(dataset), batch_size=per_gpu_eval_batch_size)
        preds, out_label_ids = [], []
        for batch in loader:
            self.model.eval()
            batch = {k: t.to(device) for k, t in self._as_dict(batch).items()}
            labels = batch["labels"]
            with torch.no_grad():
                logits = self.sequence_classifier_eval_step(batch)
            preds.append(logits.detach().cpu())
            out_label_ids.append(labels.detach().cpu())
        return {"logits": torch.cat(preds).numpy(), "labels": torch.cat(out_label_ids).numpy()}

    def generate_default_inputs(self, batch):
        return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}

    def sequence_classifier_train_step(self, batch):
        inputs = self.generate_default_inputs(batch)
        logits = self.model(**inputs)[0]
        return F.cross_entropy(logits, batch["labels"])

    def sequence_classifier_eval_step(self, batch):
        inputs = self.generate_default_inputs(batch)
        return self.model(**inputs)[0]  # expect: GL112


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
output_dir = tempfile.mkdtemp()

# what PET's train_pet does: build the wrapper, move its model, train, save
wrapper = TransformerModelWrapper({"label_list": ["0", "1"], "task_name": "toy"})
wrapper.model.to(device)
losses = wrapper.train(make_examples(128, 0), device)
wrapper.save(output_dir)

# the reporter: reload the final classifier and evaluate it on new examples
wrapper = TransformerModelWrapper.from_pretrained(output_dir)
results = wrapper.eval(make_examples(32, 1), device)
accuracy = (results["logits"].argmax(1) == results["labels"]).mean()
print(f"accuracy {accuracy:.3f}")
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
