# source: https://github.com/constantinpape/torch-em/issues/356
# (and the PR that followed, https://github.com/constantinpape/torch-em/pull/357)
# torch-em's DefaultTrainer copies each batch with `.to(self.device, non_blocking=True)`, but the
# loaders come from a get_data_loader() helper that builds `torch.utils.data.DataLoader(dataset,
# batch_size=..., **loader_kwargs)` without pin_memory: from pageable memory the copy is not
# asynchronous. The review's answer: make get_data_loader pass pin_memory=True.
import json

import torch
import torch.nn as nn
import torch.utils.data


def get_data_loader(dataset, batch_size, **loader_kwargs):
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, **loader_kwargs)
    return loader


class DefaultTrainer:
    def __init__(self, model, train_loader, loss, learning_rate=1e-2, device=None):
        self.device = device if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.train_loader = train_loader
        self.loss = loss
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=learning_rate)

    def _train_epoch_impl(self):
        self.model.train()
        losses = []
        for x, y in self.train_loader:
            x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)  # expect: GL503
            self.optimizer.zero_grad()
            loss = self.loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())
        return losses

    def fit(self, epochs):
        history = []
        for _ in range(epochs):
            history.extend(self._train_epoch_impl())
        return history


torch.manual_seed(0)
images = torch.randn(64, 1, 8, 8)
masks = (images > 0).float()
dataset = torch.utils.data.TensorDataset(images, masks)
train_loader = get_data_loader(dataset, batch_size=8, shuffle=True)
model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
trainer = DefaultTrainer(model, train_loader, nn.BCEWithLogitsLoss())
history = trainer.fit(epochs=4)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": trainer.device.type}))
