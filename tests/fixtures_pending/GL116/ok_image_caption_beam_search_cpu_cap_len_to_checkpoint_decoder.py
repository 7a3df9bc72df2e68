# source: https://github.com/RoyalSkye/Image-Caption/blob/master/eval.py
# Hard negative (PRECISION22 B2). The transformer captioner's beam search restores the decoder
# object from a checkpoint (`decoder = checkpoint['decoder']; decoder = decoder.to(device)`) and
# calls it as `decoder(encoder_out, k_prev_words, cap_len)` with
# `cap_len = torch.LongTensor([52]).repeat(k, 1)` left on the CPU on purpose (the author's
# comment: moving it "may cause different sorted results on GPU/CPU"). The decoder only sorts the
# lengths and indexes its device tensors with the CPU permutation, which PyTorch allows. GL116
# reports the call today ("`cap_len` is on the CPU ... but `decoder` is on the accelerator"): the
# engine requires every tensor argument of a module whose forward it cannot see on the module's
# device. The decoder's module is written to a temporary folder (the checkpoint pickles the
# object), trained a few steps, saved and restored as eval.py does.
import json
import os
import sys
import tempfile
import textwrap

import torch
import torch.nn.functional as F

pkg = tempfile.mkdtemp()
with open(os.path.join(pkg, "imgcap_transformer_demo.py"), "w") as f:
    f.write(textwrap.dedent('''
        import torch
        import torch.nn as nn

        class Decoder(nn.Module):
            def __init__(self, vocab_size, embed_dim=16, max_len=6):
                super().__init__()
                self.tgt_emb = nn.Embedding(vocab_size, embed_dim)
                self.pos_emb = nn.Embedding(max_len, embed_dim)
                self.attn = nn.MultiheadAttention(embed_dim, 2, batch_first=True)
                self.projection = nn.Linear(embed_dim, vocab_size, bias=False)
                self.max_len = max_len

            def forward(self, encoder_out, encoded_captions, caption_lengths):
                caption_lengths, sort_ind = caption_lengths.squeeze(1).sort(dim=0, descending=True)
                encoder_out = encoder_out[sort_ind]
                encoded_captions = encoded_captions[sort_ind]
                decode_lengths = (caption_lengths - 1).tolist()
                pos = torch.arange(self.max_len, device=encoded_captions.device)
                dec = self.tgt_emb(encoded_captions) + self.pos_emb(pos)
                dec, _ = self.attn(dec, encoder_out, encoder_out)
                return self.projection(dec), encoded_captions, decode_lengths, None, sort_ind
    '''))
sys.path.insert(0, pkg)
from imgcap_transformer_demo import Decoder

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
vocab_size, max_len = 10, 6

# a short training run that writes the checkpoint eval.py restores
decoder = Decoder(vocab_size, max_len=max_len).to(device)
optimizer = torch.optim.Adam(decoder.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(1)
feats = torch.randn(8, 5, 16, generator=g)
caps = torch.randint(1, vocab_size, (8, max_len), generator=g)
caplens = torch.full((8, 1), max_len)
feats_d, caps_d, caplens_d = feats.to(device), caps.to(device), caplens.to(device)
history = []
for step in range(30):
    scores, caps_sorted, decode_lengths, _, sort_ind = decoder(feats_d, caps_d, caplens_d)
    loss = F.cross_entropy(scores[:, :-1].reshape(-1, vocab_size), caps_sorted[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0 or step == 29:
        history.append(loss.item())
path = os.path.join(tempfile.mkdtemp(), "BEST_checkpoint.pth.tar")
torch.save({"decoder": decoder}, path)


def evaluate_transformer(beam_size=3):
    checkpoint = torch.load(path, map_location=str(device), weights_only=False)
    decoder = checkpoint["decoder"]
    decoder = decoder.to(device)
    decoder.eval()
    k = beam_size
    encoder_out = feats[:1].to(device).expand(k, 5, 16)
    k_prev_words = torch.LongTensor([[1] * max_len] * k).to(device)
    with torch.no_grad():
        cap_len = torch.LongTensor([max_len]).repeat(k, 1)  # kept on the CPU, as eval.py does
        scores, _, _, _, _ = decoder(encoder_out, k_prev_words, cap_len)
        scores = F.log_softmax(scores[:, 0, :], dim=1)
    return scores.topk(1, dim=1)[1].view(-1).tolist()


print(evaluate_transformer())
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
