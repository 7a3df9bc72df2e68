# source: https://github.com/microsoft/InnerEye-DeepLearning/issues/198
# InnerEye's `ModelAndInfo` keeps the model, the optimizer and the checkpoint path on `self`:
# `try_create_model_and_load_from_checkpoint()` builds the model and restores its weights,
# `try_create_optimizer_and_load_from_checkpoint()` builds the optimizer from
# `self.model.parameters()` and restores `checkpoint['opt_dict']`, and `adjust_model_for_gpus()`
# moves the model with `self.to_cuda()` when `config.use_gpu`. `model_train` called the optimizer
# step before the GPU adjustment, so a run recovery on a GPU restored the Adam moments onto the
# CPU parameters and failed at the first `optimizer.step()` with "expected device cpu but got
# device cuda:0". The fix adjusts the model first (and `adjust_model_for_gpus` now refuses to run
# once an optimizer exists). (Azure ML, the segmentation configs, mixed precision and
# DataParallel reduced to a small regression model, one config object, and a first run that
# writes the checkpoint the recovery run resumes from.)
# fails-on-cuda: Tensors of the same index must be on the same device
import json
import os
import tempfile

import torch
import torch.nn as nn


class ModelConfig:
    def __init__(self, outputs_folder):
        self.use_gpu = torch.cuda.is_available()
        self.l_rate = 1e-2
        self.num_epochs = 3
        self.outputs_folder = outputs_folder

    def create_model(self):
        return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))

    def get_path_to_checkpoint(self, epoch):
        return os.path.join(self.outputs_folder, f"{epoch}_checkpoint.pth.tar")

    def device(self):
        return torch.device("cuda" if self.use_gpu else "cpu")


class ModelAndInfo:
    def __init__(self, config, checkpoint_path=None):
        self.config = config
        self.checkpoint_path = checkpoint_path
        self.model = None
        self.optimizer = None
        self.checkpoint_epoch = None

    def to_cuda(self):
        self.model = self.model.cuda()

    def try_load_checkpoint_for_model(self):
        map_location = None if torch.cuda.is_available() else 'cpu'
        checkpoint = torch.load(str(self.checkpoint_path), map_location=map_location)
        self.model.load_state_dict(checkpoint['state_dict'])
        self.checkpoint_epoch = checkpoint['epoch']
        return True

    def try_create_model_and_load_from_checkpoint(self):
        self.model = self.config.create_model()
        if self.checkpoint_path is not None:
            return self.try_load_checkpoint_for_model()
        return True

    def adjust_model_for_gpus(self):
        if self.config.use_gpu:
            self.to_cuda()

    def create_optimizer(self):
        self.optimizer = torch.optim.Adam(self.model.parameters(), self.config.l_rate)

    def try_load_checkpoint_for_optimizer(self):
        map_location = None if torch.cuda.is_available() else 'cpu'
        checkpoint = torch.load(str(self.checkpoint_path), map_location=map_location)
        self.optimizer.load_state_dict(checkpoint['opt_dict'])  # expect: GL111
        self.checkpoint_epoch = checkpoint['epoch']
        return True

    def try_create_optimizer_and_load_from_checkpoint(self):
        self.create_optimizer()
        if self.checkpoint_path is not None:
            return self.try_load_checkpoint_for_optimizer()
        return True


def save_checkpoint(model, optimizer, epoch, config):
    torch.save({'epoch': epoch, 'state_dict': model.state_dict(), 'opt_dict': optimizer.state_dict()},
               config.get_path_to_checkpoint(epoch))


def model_train(config, checkpoint_path=None):
    model_and_info = ModelAndInfo(config, checkpoint_path)
    model_and_info.try_create_model_and_load_from_checkpoint()
    model_and_info.try_create_optimizer_and_load_from_checkpoint()
    model_and_info.adjust_model_for_gpus()
    model, optimizer = model_and_info.model, model_and_info.optimizer
    start_epoch = (model_and_info.checkpoint_epoch or 0) + 1
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 6, generator=g)
    y = x @ torch.randn(6, 1, generator=g)
    losses = []
    for epoch in range(start_epoch, start_epoch + config.num_epochs):
        for i in range(0, 64, 16):
            inputs, labels = x[i:i + 16].to(config.device()), y[i:i + 16].to(config.device())
            loss = nn.functional.mse_loss(model(inputs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        save_checkpoint(model, optimizer, epoch, config)
    return losses, epoch


torch.manual_seed(0)
config = ModelConfig(tempfile.mkdtemp())
losses, last_epoch = model_train(config)
recovery_losses, _ = model_train(config, checkpoint_path=config.get_path_to_checkpoint(last_epoch))
losses = losses + recovery_losses
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": config.device().type}))
