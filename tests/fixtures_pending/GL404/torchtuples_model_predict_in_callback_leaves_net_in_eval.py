# source: https://github.com/havakv/torchtuples/pull/9
# torchtuples (torchtuples/base.py): `Model.fit_dataloader()` runs the epoch loop and hands control to
# a `CallbackHandler` at the end of every epoch. A callback that scores the validation set calls
# `self.model.predict(...)`, which goes through `predict_dataloader()`: it switches the net to eval
# mode for the forward passes and then, meant to restore training mode, calls `self.net.eval()` a
# second time. Every epoch after the first callback therefore trains with dropout switched off. The
# PR turns the second call into `self.net.train()`. (A small dropout MLP on synthetic regression data;
# the tuple-tree batching of the library is left out, fixed seed.)
import json
from collections import OrderedDict

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Callback:
    def give_model(self, model):
        self.model = model

    def on_fit_start(self):
        pass

    def on_epoch_start(self):
        pass

    def on_epoch_end(self):
        pass

    def on_fit_end(self):
        pass


class CallbackHandler:
    def __init__(self, callbacks):
        self.callbacks = OrderedDict()
        for i, c in enumerate(callbacks):
            self.callbacks[type(c).__name__ + str(i)] = c

    def give_model(self, model):
        for c in self.callbacks.values():
            c.give_model(model)

    def _call(self, hook):
        stop = False
        for c in self.callbacks.values():
            stop = stop or bool(getattr(c, hook)())
        return stop

    def on_fit_start(self):
        return self._call("on_fit_start")

    def on_epoch_start(self):
        return self._call("on_epoch_start")

    def on_epoch_end(self):
        return self._call("on_epoch_end")

    def on_fit_end(self):
        return self._call("on_fit_end")


class MonitorValLoss(Callback):
    def __init__(self, x_val, y_val):
        self.x_val = x_val
        self.y_val = y_val
        self.scores = []

    def on_epoch_end(self):
        preds = self.model.predict(self.x_val, batch_size=32)
        self.scores.append(nn.functional.mse_loss(preds.cpu(), self.y_val).item())


class Model(object):
    def __init__(self, net, loss, optimizer, device):
        self.net = net
        self.loss = loss
        self.optimizer = optimizer
        self.device = device
        self.net.to(self.device)
        self.log = []

    def compute_metrics(self, input, target):
        out = self.net(input.to(self.device))
        return {"loss": self.loss(out, target.to(self.device))}

    def fit_dataloader(self, dataloader, epochs=1, callbacks=None):
        if callbacks is None:
            callbacks = []
        self.callbacks = CallbackHandler(callbacks)
        self.callbacks.give_model(self)

        stop = self.callbacks.on_fit_start()
        for _ in range(epochs):
            if stop:
                break
            stop = self.callbacks.on_epoch_start()
            if stop:
                break
            for input, target in dataloader:
                self.optimizer.zero_grad()
                self.batch_metrics = self.compute_metrics(input, target)
                self.batch_loss = self.batch_metrics["loss"]
                self.batch_loss.backward()
                self.optimizer.step()
                self.log.append(self.batch_loss.item())
            else:
                stop = self.callbacks.on_epoch_end()
        self.callbacks.on_fit_end()
        return self.log

    def predict(self, input, batch_size=256, eval_=True, grads=False):
        dataloader = DataLoader(TensorDataset(input), batch_size=batch_size, shuffle=False)
        return self.predict_dataloader(dataloader, eval_, grads)

    def predict_dataloader(self, dataloader, eval_=True, grads=False):
        if eval_:
            self.net.eval()
        with torch.set_grad_enabled(grads):
            preds = []
            for (input,) in dataloader:
                preds.append(self.net(input.to(self.device)))
        if eval_:
            self.net.eval()  # expect: GL404
        return torch.cat(preds)


def main():
    torch.manual_seed(0)
    x = torch.randn(320, 8)
    y = x @ torch.randn(8, 1) + 0.1 * torch.randn(320, 1)
    train_loader = DataLoader(TensorDataset(x[:256], y[:256]), batch_size=32, shuffle=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))
    model = Model(net, nn.MSELoss(), torch.optim.Adam(net.parameters(), lr=0.01), device)
    monitor = MonitorValLoss(x[256:], y[256:])
    log = model.fit_dataloader(train_loader, epochs=6, callbacks=[monitor])
    print("val mse per epoch:", [round(s, 4) for s in monitor.scores])
    print("GPULINT-TRAIN " + json.dumps({"first_loss": sum(log[:4]) / 4, "last_loss": sum(log[-4:]) / 4, "device": device.type}))


if __name__ == "__main__":
    main()
