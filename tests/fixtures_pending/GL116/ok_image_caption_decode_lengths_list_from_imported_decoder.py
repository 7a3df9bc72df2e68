# source: https://github.com/RoyalSkye/Image-Caption/blob/master/train.py
# Hard negative (PRECISION22 B1). The captioning trainer star-imports its models
# (`from models import *`) and unpacks the decoder's output
# `scores, caps_sorted, decode_lengths, alphas, sort_ind = decoder(imgs, caps, caplens)`;
# the decoder computes `decode_lengths = (caption_lengths - 1).tolist()`, a Python list, and the
# loop passes it to `pack_padded_sequence(scores, decode_lengths, batch_first=True)`, which
# takes a list of ints on any device. GL116 reports both calls today ("`decode_lengths` is on the
# accelerator, ... pass `decode_lengths.cpu()`", a safe fix that raises AttributeError on the
# list): the engine takes every element of the tuple an unseen module returns for a tensor on the
# module's device. The models module is written to a temporary folder and imported, so that this
# file does not define it.
import json
import os
import sys
import tempfile
import textwrap

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence

pkg = tempfile.mkdtemp()
with open(os.path.join(pkg, "imgcap_models_demo.py"), "w") as f:
    f.write(textwrap.dedent('''
        import torch
        import torch.nn as nn

        class Encoder(nn.Module):
            def __init__(self, encoded_image_size=4, dim=16):
                super().__init__()
                self.conv = nn.Conv2d(3, dim, 3, padding=1)
                self.pool = nn.AdaptiveAvgPool2d((encoded_image_size, encoded_image_size))

            def forward(self, images):
                return self.pool(torch.relu(self.conv(images))).permute(0, 2, 3, 1)

        class DecoderWithAttention(nn.Module):
            def __init__(self, embed_dim, decoder_dim, vocab_size, encoder_dim=16):
                super().__init__()
                self.vocab_size = vocab_size
                self.embedding = nn.Embedding(vocab_size, embed_dim)
                self.init_h = nn.Linear(encoder_dim, decoder_dim)
                self.init_c = nn.Linear(encoder_dim, decoder_dim)
                self.decode_step = nn.LSTMCell(embed_dim + encoder_dim, decoder_dim)
                self.fc = nn.Linear(decoder_dim, vocab_size)

            def forward(self, encoder_out, encoded_captions, caption_lengths):
                batch_size = encoder_out.size(0)
                encoder_out = encoder_out.view(batch_size, -1, encoder_out.size(-1))
                caption_lengths, sort_ind = caption_lengths.squeeze(1).sort(dim=0, descending=True)
                encoder_out = encoder_out[sort_ind]
                encoded_captions = encoded_captions[sort_ind]
                embeddings = self.embedding(encoded_captions)
                mean_enc = encoder_out.mean(dim=1)
                h, c = self.init_h(mean_enc), self.init_c(mean_enc)
                decode_lengths = (caption_lengths - 1).tolist()
                predictions = torch.zeros(batch_size, max(decode_lengths), self.vocab_size,
                                          device=encoder_out.device)
                for t in range(max(decode_lengths)):
                    h, c = self.decode_step(torch.cat([embeddings[:, t, :], mean_enc], dim=1), (h, c))
                    predictions[:, t, :] = self.fc(h)
                return predictions, encoded_captions, decode_lengths, None, sort_ind
    '''))
sys.path.insert(0, pkg)
from imgcap_models_demo import *

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
vocab_size = 12
encoder = Encoder().to(device)
decoder = DecoderWithAttention(embed_dim=8, decoder_dim=16, vocab_size=vocab_size).to(device)
params = list(encoder.parameters()) + list(decoder.parameters())
optimizer = torch.optim.Adam(params, lr=1e-2)
criterion = nn.CrossEntropyLoss().to(device)

g = torch.Generator().manual_seed(1)
train_loader = []
for _ in range(4):
    imgs = torch.randn(4, 3, 8, 8, generator=g)
    caps = torch.randint(1, vocab_size, (4, 7), generator=g)
    caplens = torch.randint(3, 8, (4, 1), generator=g)
    train_loader.append((imgs, caps, caplens))

history = []
for epoch in range(8):
    total = 0.0
    for i, (imgs, caps, caplens) in enumerate(train_loader):
        imgs = imgs.to(device)
        caps = caps.to(device)
        caplens = caplens.to(device)
        imgs = encoder(imgs)
        scores, caps_sorted, decode_lengths, alphas, sort_ind = decoder(imgs, caps, caplens)
        targets = caps_sorted[:, 1:]
        scores = pack_padded_sequence(scores, decode_lengths, batch_first=True).data
        targets = pack_padded_sequence(targets, decode_lengths, batch_first=True).data
        loss = criterion(scores, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.detach()
    history.append((total / len(train_loader)).item())

print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
