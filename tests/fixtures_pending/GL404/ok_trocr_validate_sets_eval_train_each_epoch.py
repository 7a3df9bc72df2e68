# source: https://github.com/rsommerfeld/trocr/issues/9
# trocr (fine-tuning TrOCR on handwritten labels): `train(context)` runs the epochs on
# `context.model` and, after each epoch, calls `validate(context)`, which calls the helper
# `predict(processor, model, dataloader)`; `predict` decodes under `torch.no_grad()` but nothing puts
# the model in eval mode, so the validation accuracy is measured with dropout on. The reporter
# asked whether `validate()` should call `model.eval()`; the author agreed and pushed a fix.
# Hard negative, the fix: `validate` puts the model in eval mode before predicting and `train`
# switches back to training mode at the top of every epoch.
# (The VisionEncoderDecoderModel is replaced by a tiny classifier with dropout whose `generate`
# returns the argmax ids; the processor decodes ids to label strings. Synthetic "images".)
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
LEARNING_RATE = 0.05
LABELS = ["zero", "one", "two", "three"]


class Processor:
    def batch_decode(self, ids, skip_special_tokens=True):
        return [LABELS[i] for i in ids.tolist()]


class TinyOCR(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Dropout(0.5))
        self.head = nn.Linear(32, len(LABELS))
        self.loss_fct = nn.CrossEntropyLoss()

    def forward(self, pixel_values, labels=None):
        logits = self.head(self.encoder(pixel_values))
        loss = self.loss_fct(logits, labels) if labels is not None else None
        return {"logits": logits, "loss": loss}

    def generate(self, pixel_values):
        return self.forward(pixel_values)["logits"].argmax(-1)


class HandwritingDataset(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, len(LABELS), (n,), generator=g)
        protos = torch.randn(len(LABELS), 1, 8, 8, generator=torch.Generator().manual_seed(7))
        self.images = protos[self.labels] + 0.8 * torch.randn(n, 1, 8, 8, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return {"idx": idx, "input": self.images[idx], "label": self.labels[idx]}

    def get_label(self, idx):
        return LABELS[int(self.labels[idx])]

    def get_path(self, idx):
        return f"val/{idx}.png"


class Context:
    def __init__(self, model, processor, train_dataset, val_dataset):
        self.model = model
        self.processor = processor
        self.train_dataset = train_dataset
        self.val_dataset = val_dataset
        self.train_dataloader = DataLoader(train_dataset, batch_size=16, shuffle=True)
        self.val_dataloader = DataLoader(val_dataset, batch_size=16)


def predict(processor, model, dataloader):
    output = []
    with torch.no_grad():
        for i, batch in enumerate(dataloader):
            inputs = batch["input"].to(device)
            generated_ids = model.generate(inputs)
            generated_text = processor.batch_decode(generated_ids, skip_special_tokens=True)
            ids = [t.item() for t in batch["idx"]]
            output.extend(zip(ids, generated_text))
    return output


def validate(context, print_wrong=False):
    context.model.eval()
    predictions = predict(context.processor, context.model, context.val_dataloader)
    assert len(predictions) > 0
    correct_count = 0
    for id, prediction in predictions:
        label = context.val_dataset.get_label(id)
        if prediction == label:
            correct_count += 1
        elif print_wrong:
            print(f"Predicted: {prediction} Label: {label} Path: {context.val_dataset.get_path(id)}")
    return correct_count / len(predictions)


def train(context, num_epochs=4):
    model = context.model
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    num_training_steps = num_epochs * len(context.train_dataloader)
    lr_scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, 1.0, 0.1, total_iters=num_training_steps)
    model.to(device)
    losses = []
    for epoch in range(num_epochs):
        model.train()
        for j, batch in enumerate(context.train_dataloader):
            inputs = batch["input"].to(device)
            labels = batch["label"].to(device)
            outputs = model(pixel_values=inputs, labels=labels)
            loss = outputs["loss"]
            loss.backward()
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
            del loss, outputs
        if len(context.val_dataloader) > 0:
            accuracy = validate(context)
            print(f"---- Epoch {1 + epoch} ---- Accuracy: {accuracy}")
    return losses


if __name__ == "__main__":
    torch.manual_seed(0)
    context = Context(TinyOCR(), Processor(), HandwritingDataset(128, 1), HandwritingDataset(48, 2))
    losses = train(context)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(losses[:4]) / 4, "last_loss": sum(losses[-4:]) / 4, "device": device.type}))
