# source: https://github.com/pytorchbearer/torchbearer/issues/506
# torchbearer (fixed by PR #507, "Fix memory leak with mse primitive"): a `Trial` runs the
# training loop, keeps the batch's prediction and target in a `state` dict and, after every step,
# hands the state to its metric list. The `mse` metric is a `MeanSquaredError(Metric)` whose
# `process(state)` returns `torch.pow(y_pred - y_true, 2)`; the `@mean` decorator builds a
# `MetricTree` that feeds that value to a `Mean` aggregator child, and `Mean.process` keeps
# `self._sum += data.sum()` until the epoch's `process_final`. `y_pred` is the model output, so
# every batch's graph stays alive until the epoch ends (the base class's `@no_grad()` does not
# cover an overriding `process`). The fix returns `torch.pow(...).data`. (A small regression
# net; callbacks reduced to a printer; `Loss` kept as the second metric, reading `state["loss"]`
# with `.item()` on its own.)
import json

import torch
import torch.nn as nn

Y_PRED, Y_TRUE, LOSS, METRICS = "y_pred", "y_true", "loss", "metrics"


class Metric(object):
    def __init__(self, name):
        self.name = name

    def process(self, *args):
        pass

    def process_final(self, *args):
        pass

    def reset(self, state):
        pass


class Mean(Metric):
    def __init__(self, name):
        super().__init__(name)
        self._sum = 0.0
        self._count = 0

    def process(self, *args):
        data = args[0]
        tot = data.sum()
        self._sum += tot  # expect: GL402
        self._count += data.numel()

    def process_final(self, *args):
        res = self._sum / self._count
        return res.item()

    def reset(self, state):
        self._sum = 0.0
        self._count = 0


class MetricTree(Metric):
    def __init__(self, metric):
        super().__init__(metric.name)
        self.root = metric
        self.children = []

    def add_child(self, child):
        self.children.append(child)

    def process(self, *args):
        result = self.root.process(*args)
        for child in self.children:
            child.process(result)
        return {}

    def process_final(self, *args):
        return {self.name: self.children[0].process_final(*args)}

    def reset(self, state):
        for child in self.children:
            child.reset(state)


def mean(clazz):
    def build(*args, **kwargs):
        tree = MetricTree(clazz(*args, **kwargs))
        tree.add_child(Mean(tree.name))
        return tree
    return build


@mean
class MeanSquaredError(Metric):
    def __init__(self, pred_key=Y_PRED, target_key=Y_TRUE):
        super().__init__("mse")
        self.pred_key = pred_key
        self.target_key = target_key

    def process(self, *args):
        state = args[0]
        y_pred = state[self.pred_key]
        y_true = state[self.target_key]
        return torch.pow(y_pred - y_true.view_as(y_pred), 2)


class Loss(Metric):
    def __init__(self):
        super().__init__("loss")
        self.total = 0.0
        self.n = 0

    def process(self, *args):
        self.total += args[0][LOSS].item()
        self.n += 1
        return {}

    def process_final(self, *args):
        return {"loss": self.total / self.n}

    def reset(self, state):
        self.total, self.n = 0.0, 0


class MetricList(Metric):
    def __init__(self, metrics):
        super().__init__("metric_list")
        self.metric_list = metrics

    def process(self, *args):
        result = {}
        for metric in self.metric_list:
            result.update(metric.process(*args))
        return result

    def process_final(self, *args):
        result = {}
        for metric in self.metric_list:
            result.update(metric.process_final(*args))
        return result

    def reset(self, state):
        for metric in self.metric_list:
            metric.reset(state)


class Printer:
    def on_end_epoch(self, state):
        print(state["epoch"], state[METRICS])


class Trial:
    def __init__(self, model, optimizer, criterion, metrics=(), callbacks=()):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion
        self.metric_list = MetricList(list(metrics))
        self.callbacks = list(callbacks)
        self.state = {}

    def to(self, device):
        self.model.to(device)
        self.device = device
        return self

    def run(self, loader, epochs=1):
        history = []
        for epoch in range(epochs):
            self.state["epoch"] = epoch
            self.metric_list.reset(self.state)
            self.model.train()
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                self.optimizer.zero_grad()
                self.state[Y_PRED] = self.model(x)
                self.state[Y_TRUE] = y
                self.state[LOSS] = self.criterion(self.state[Y_PRED], self.state[Y_TRUE])
                self.state[LOSS].backward()
                self.optimizer.step()
                self.state[METRICS] = self.metric_list.process(self.state)
            self.state[METRICS] = self.metric_list.process_final(self.state)
            for callback in self.callbacks:
                callback.on_end_epoch(self.state)
            history.append(self.state[METRICS]["loss"])
        return history


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    g = torch.Generator().manual_seed(0)
    w = torch.randn(8, 1, generator=g)
    xs = torch.randn(256, 8, generator=g)
    ys = xs @ w + 0.1 * torch.randn(256, 1, generator=g)
    loader = [(xs[i:i + 32], ys[i:i + 32]) for i in range(0, 256, 32)]
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    trial = Trial(model, optimizer, nn.MSELoss(), metrics=[Loss(), MeanSquaredError()], callbacks=[Printer()]).to(device)
    history = trial.run(loader, epochs=5)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
