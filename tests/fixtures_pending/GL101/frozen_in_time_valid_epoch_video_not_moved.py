# source: https://github.com/m-bain/frozen-in-time/issues/4 (fixed by m-bain/frozen-in-time@51325de "add video to gpu")
# The BaseTrainer moves the model to the device it prepares in __init__; the Trainer's _train_epoch
# moves each batch dict's data['video'] and its tokenized data['text'] to the device, but
# _valid_epoch (run first when init_val is set) moves only data['text'] and hands the whole dict
# to the model: the video stays on the CPU ("Input type (torch.FloatTensor) and weight type
# (torch.cuda.FloatTensor) should be the same" in compute_video).
# fails-on-cuda: should be the same
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def sim_matrix(a, b, eps=1e-8):
    a_n = a / a.norm(dim=1, keepdim=True).clamp(min=eps)
    b_n = b / b.norm(dim=1, keepdim=True).clamp(min=eps)
    return a_n @ b_n.t()


class FrozenInTime(nn.Module):
    def __init__(self, vocab=20, dim=16):
        super().__init__()
        self.text_model = nn.EmbeddingBag(vocab, dim)
        self.video_model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16, dim))

    def compute_text(self, text_data):
        return self.text_model(text_data["input_ids"])

    def compute_video(self, video_data):
        b, t = video_data.shape[:2]
        return self.video_model(video_data.flatten(0, 1)).view(b, t, -1).mean(1)

    def forward(self, data, return_embeds=True):
        text_embeddings = self.compute_text(data["text"])
        video_embeddings = self.compute_video(data["video"])
        return text_embeddings, video_embeddings


class NormSoftmaxLoss(nn.Module):
    def __init__(self, temperature=0.05):
        super().__init__()
        self.temperature = temperature

    def forward(self, x):
        i_logsm = F.log_softmax(x / self.temperature, dim=1)
        j_logsm = F.log_softmax(x.t() / self.temperature, dim=1)
        return -(torch.diag(i_logsm).mean() + torch.diag(j_logsm).mean()) / 2


class BaseTrainer:
    def __init__(self, model, loss, optimizer, config, init_val=False):
        self.config = config
        self.init_val = init_val
        self.device, device_ids = self._prepare_device(config["n_gpu"])
        self.model = model.to(self.device)
        self.loss = loss
        self.optimizer = optimizer
        self.epochs = config["epochs"]

    def _prepare_device(self, n_gpu_use):
        n_gpu = torch.cuda.device_count()
        if n_gpu_use > n_gpu:
            n_gpu_use = n_gpu
        device = torch.device("cuda:0" if n_gpu_use > 0 else "cpu")
        return device, list(range(n_gpu_use))

    def train(self):
        history = []
        if self.init_val:
            _ = self._valid_epoch(-1)
        for epoch in range(1, self.epochs + 1):
            history.extend(self._train_epoch(epoch))
        return history


class Trainer(BaseTrainer):
    def __init__(self, model, loss, optimizer, config, data_loader, valid_data_loader=None, init_val=False):
        super().__init__(model, loss, optimizer, config, init_val=init_val)
        self.data_loader = data_loader
        self.valid_data_loader = valid_data_loader

    def _train_epoch(self, epoch):
        self.model.train()
        losses = []
        for batch_idx, data in enumerate(self.data_loader):
            data["video"] = data["video"].to(self.device)
            data["text"] = {key: val.to(self.device) for key, val in data["text"].items()}
            self.optimizer.zero_grad()
            text_embeds, video_embeds = self.model(data)
            loss = self.loss(sim_matrix(text_embeds, video_embeds))
            loss.backward()
            self.optimizer.step()
            losses.append(loss.detach().item())
        return losses

    def _valid_epoch(self, epoch):
        self.model.eval()
        total_val_loss = 0
        text_embed_arr, vid_embed_arr = [], []
        with torch.no_grad():
            for batch_idx, data in enumerate(self.valid_data_loader):
                data["text"] = {key: val.to(self.device) for key, val in data["text"].items()}
                text_embed, vid_embed = self.model(data, return_embeds=True)  # expect: GL101
                text_embed_arr.append(text_embed.cpu())
                vid_embed_arr.append(vid_embed.cpu())
                total_val_loss += self.loss(sim_matrix(text_embed, vid_embed)).item()
            sims = sim_matrix(torch.cat(text_embed_arr), torch.cat(vid_embed_arr)).numpy()
        print(f"epoch {epoch}: val loss {total_val_loss / len(self.valid_data_loader):.3f}, R@1 {np.mean(sims.argmax(1) == np.arange(len(sims))):.2f}")
        return {"val_loss": total_val_loss / len(self.valid_data_loader)}


class TextVideoDataset(Dataset):
    def __init__(self, seed, n=32):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, 20, (n, 5), generator=g)
        self.video = torch.randn(n, 2, 3, 6, 6, generator=g) + self.ids[:, :1, None, None, None].float() / 10

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"text": {"input_ids": self.ids[i]}, "video": self.video[i], "meta": {"idx": i}}


torch.manual_seed(0)
model = FrozenInTime()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
config = {"n_gpu": 1, "epochs": 4}
data_loader = DataLoader(TextVideoDataset(0), batch_size=8, shuffle=False)
valid_data_loader = DataLoader(TextVideoDataset(1), batch_size=8, shuffle=False)
trainer = Trainer(model, NormSoftmaxLoss(), optimizer, config, data_loader, valid_data_loader=valid_data_loader, init_val=True)
history = trainer.train()
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": trainer.device.type}))
