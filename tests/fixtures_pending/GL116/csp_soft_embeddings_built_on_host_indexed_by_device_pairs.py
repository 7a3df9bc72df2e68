# source: https://github.com/BatsResearch/csp/issues/19
# Compositional soft prompting: csp_init() builds the attribute/object soft embeddings with
# `torch.zeros(...)` and no device (the CLIP model beside it is loaded on the GPU), wraps them in
# an nn.Parameter and hands them to the CSPInterface, which stores them on `self` and is never
# moved. train_model() moves the (attribute, object) pair indices to the GPU, so
# construct_token_tensors() indexes a host table with CUDA indices.
# fails-on-cuda: indices should be either on cpu or on the same device as the indexed tensor
import json
from types import SimpleNamespace

import torch
import torch.nn as nn
from torch.nn.modules.loss import CrossEntropyLoss
from torch.utils.data import DataLoader, TensorDataset

VOCAB = 40
CONTEXT = 8


class TinyCLIP(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.token_embedding = nn.Embedding(VOCAB, width)
        self.text_proj = nn.Linear(width, width)
        self.visual = nn.Linear(12, width)
        self.dtype = torch.float32

    def encode_image(self, x):
        return self.visual(x)

    def encode_text(self, token_tensor):
        return self.text_proj(token_tensor.mean(dim=1))


def load(device):
    return TinyCLIP().to(device)


def tokenize(words):
    ids = torch.zeros(len(words), CONTEXT, dtype=torch.long)
    for i, w in enumerate(words):
        ids[i, 0] = 1
        ids[i, 1] = 3 + sum(map(ord, w)) % (VOCAB - 4)
        ids[i, 2] = VOCAB - 1
    return ids


class CSPInterface(nn.Module):
    def __init__(self, clip_model, offset, soft_embeddings, class_token_ids, device="cuda:0", attr_dropout=0.0):
        super().__init__()
        self.clip_model = clip_model
        self.offset = offset
        self.soft_embeddings = soft_embeddings
        self.token_ids = class_token_ids
        self.device = device
        self.attr_dropout = nn.Dropout(attr_dropout)

    def encode_image(self, imgs):
        return self.clip_model.encode_image(imgs)

    def construct_token_tensors(self, pair_idx):
        attr_idx, obj_idx = pair_idx[:, 0], pair_idx[:, 1]
        class_token_ids = self.token_ids.repeat(len(pair_idx), 1)
        token_tensor = self.clip_model.token_embedding(class_token_ids.to(self.device))
        eos_idx = int(self.token_ids[0].argmax())
        soft_embeddings = self.attr_dropout(self.soft_embeddings)
        token_tensor[:, eos_idx - 2, :] = soft_embeddings[attr_idx]  # expect: GL116
        token_tensor[:, eos_idx - 1, :] = soft_embeddings[obj_idx + self.offset]
        return token_tensor

    def forward(self, batch_feat, idx):
        text_features = self.clip_model.encode_text(self.construct_token_tensors(idx))
        return batch_feat @ text_features.t()


def csp_init(attributes, classes, device):
    clip_model = load(device)
    tokenized = tokenize(attributes + classes)
    orig_token_embedding = clip_model.token_embedding(tokenized.to(device))
    soft_embedding = torch.zeros((len(attributes) + len(classes), orig_token_embedding.size(-1)))
    for idx, rep in enumerate(orig_token_embedding):
        eos_idx = int(tokenized[idx].argmax())
        soft_embedding[idx, :] = torch.mean(rep[1:eos_idx, :], axis=0).detach()
    soft_embedding = nn.Parameter(soft_embedding)
    class_token_ids = torch.tensor([[1, 5, 6, 7, 9, VOCAB - 1, 0, 0]])
    return clip_model, soft_embedding, class_token_ids, len(attributes)


def get_csp(attributes, classes, config, device):
    clip_model, soft_embedding, class_token_ids, offset = csp_init(attributes, classes, device)
    optimizer = torch.optim.Adam([soft_embedding], lr=config.lr)
    interface = CSPInterface(clip_model, offset, soft_embedding, class_token_ids, device, attr_dropout=config.attr_dropout)
    return interface, optimizer


def train_model(model, optimizer, dataset, train_pairs_list, config, device):
    train_dataloader = DataLoader(dataset, batch_size=config.train_batch_size, shuffle=True)
    model.train()
    loss_fn = CrossEntropyLoss()
    train_pairs = torch.tensor(train_pairs_list).to(device)
    train_losses = []
    for epoch in range(config.epochs):
        for batch_img, batch_target in train_dataloader:
            batch_target = batch_target.to(device)
            batch_feat = model.encode_image(batch_img.to(device))
            logits = model(batch_feat, train_pairs)
            loss = loss_fn(logits, batch_target)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            train_losses.append(loss.item())
    return train_losses


torch.manual_seed(0)
device = "cuda:0" if torch.cuda.is_available() else "cpu"
config = SimpleNamespace(lr=0.05, attr_dropout=0.0, train_batch_size=16, epochs=6)
attributes, classes = ["red", "old", "wet"], ["car", "dog"]
pairs = [(a, o) for a in range(3) for o in range(2)]
imgs = torch.randn(96, 12)
targets = torch.randint(0, len(pairs), (96,))
imgs[torch.arange(96), targets] += 3.0
model, optimizer = get_csp(attributes, classes, config, device)
losses = train_model(model, optimizer, TensorDataset(imgs, targets), pairs, config, device)
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(device).type}))
