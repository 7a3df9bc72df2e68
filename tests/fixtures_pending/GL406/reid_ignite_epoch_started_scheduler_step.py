# source: https://github.com/michuanhaohao/reid-strong-baseline/issues/190
# fixture: static
# (needs pytorch-ignite, which the test environment does not install)
# The re-id baseline's `do_train` builds an ignite supervised trainer whose update function runs
# `optimizer.zero_grad()`, the forward, `loss.backward()`, `optimizer.step()` per iteration, and
# registers `@trainer.on(Events.EPOCH_STARTED) def adjust_learning_rate(engine):
# scheduler.step()`. The scheduler therefore steps at the start of every epoch, before that
# epoch's first optimizer step, and PyTorch warns "Detected call of `lr_scheduler.step()` before
# `optimizer.step()`" (the warmup schedule's first value is skipped); the suggested fix registers
# the handler on Events.EPOCH_COMPLETED.
import torch
import torch.nn as nn
from ignite.engine import Engine, Events


def create_supervised_trainer(model, optimizer, loss_fn, device=None):
    if device:
        model.to(device)

    def _update(engine, batch):
        model.train()
        optimizer.zero_grad()
        img, target = batch
        img = img.to(device) if torch.cuda.device_count() >= 1 else img
        target = target.to(device) if torch.cuda.device_count() >= 1 else target
        score, feat = model(img)
        loss = loss_fn(score, feat, target)
        loss.backward()
        optimizer.step()
        acc = (score.max(1)[1] == target).float().mean()
        return loss.item(), acc.item()

    return Engine(_update)


def do_train(cfg, model, train_loader, optimizer, scheduler, loss_fn):
    device = cfg["device"]
    epochs = cfg["max_epochs"]
    trainer = create_supervised_trainer(model, optimizer, loss_fn, device=device)

    @trainer.on(Events.EPOCH_STARTED)
    def adjust_learning_rate(engine):
        scheduler.step()  # expect: GL406

    @trainer.on(Events.ITERATION_COMPLETED)
    def log_training_loss(engine):
        if engine.state.iteration % 10 == 0:
            print("Epoch[{}] Loss: {:.3f}".format(engine.state.epoch, engine.state.output[0]))

    trainer.run(train_loader, max_epochs=epochs)


class Baseline(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.base = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.classifier = nn.Linear(8, num_classes)

    def forward(self, x):
        feat = self.base(x)
        return self.classifier(feat), feat


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Baseline()
    optimizer = torch.optim.Adam(model.parameters(), lr=3.5e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, [40, 70], gamma=0.1)
    images = torch.randn(16, 3, 8, 8)
    pids = torch.randint(0, 4, (16,))
    loader = [(images[i:i + 4], pids[i:i + 4]) for i in range(0, 16, 4)]
    ce = nn.CrossEntropyLoss()
    do_train({"device": device, "max_epochs": 3}, model, loader, optimizer, scheduler,
             lambda score, feat, target: ce(score, target))


if __name__ == "__main__":
    main()
