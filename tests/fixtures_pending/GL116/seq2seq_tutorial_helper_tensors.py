# source: https://github.com/spro/practical-pytorch/issues/3
# fails-on-cuda: Expected all tensors to be on the same device
# Running the seq2seq-translation tutorial on the GPU: encoder and decoder are moved with .cuda(),
# but the sentence tensors come from helper functions, the initial hidden state from
# encoder.initHidden(), and the decoder's SOS input from torch.tensor([[SOS_token]]), all on the
# CPU; the first encoder call fails in the embedding lookup.
import json
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

SOS_token, EOS_token = 0, 1
use_cuda = torch.cuda.is_available()


class Lang:
    def __init__(self, words):
        self.word2index = {w: i + 2 for i, w in enumerate(words)}
        self.n_words = len(words) + 2


def indexesFromSentence(lang, sentence):
    return [lang.word2index[word] for word in sentence.split(" ")]


def tensorFromSentence(lang, sentence):
    indexes = indexesFromSentence(lang, sentence)
    indexes.append(EOS_token)
    return torch.tensor(indexes, dtype=torch.long).view(-1, 1)


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)

    def forward(self, input, hidden):
        embedded = self.embedding(input).view(1, 1, -1)
        return self.gru(embedded, hidden)

    def initHidden(self):
        return torch.zeros(1, 1, self.hidden_size)


class DecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, input, hidden):
        output = F.relu(self.embedding(input).view(1, 1, -1))
        output, hidden = self.gru(output, hidden)
        return F.log_softmax(self.out(output[0]), dim=1), hidden


def train(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion):
    encoder_hidden = encoder.initHidden()
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()
    loss = 0
    for ei in range(input_tensor.size(0)):
        encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)  # expect: GL116
    decoder_input = torch.tensor([[SOS_token]])
    decoder_hidden = encoder_hidden
    for di in range(target_tensor.size(0)):
        decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden)  # expect: GL116
        loss += criterion(decoder_output, target_tensor[di])  # expect: GL116
        decoder_input = target_tensor[di]
    loss.backward()
    encoder_optimizer.step()
    decoder_optimizer.step()
    return loss.item() / target_tensor.size(0)


random.seed(0)
torch.manual_seed(0)
src_words = ["je", "suis", "tu", "es", "il", "est", "grand", "petit"]
tgt_words = ["i", "am", "you", "are", "he", "is", "tall", "small"]
input_lang, output_lang = Lang(src_words), Lang(tgt_words)
pairs = [("je suis grand", "i am tall"), ("tu es petit", "you are small"), ("il est grand", "he is tall"), ("je suis petit", "i am small")]
hidden_size = 32
encoder1 = EncoderRNN(input_lang.n_words, hidden_size)
attn_decoder1 = DecoderRNN(hidden_size, output_lang.n_words)
if use_cuda:
    encoder1 = encoder1.cuda()
    attn_decoder1 = attn_decoder1.cuda()
encoder_optimizer = torch.optim.SGD(encoder1.parameters(), lr=0.05)
decoder_optimizer = torch.optim.SGD(attn_decoder1.parameters(), lr=0.05)
criterion = nn.NLLLoss()
history = []
for it in range(120):
    src, tgt = random.choice(pairs)
    history.append(train(tensorFromSentence(input_lang, src), tensorFromSentence(output_lang, tgt), encoder1, attn_decoder1, encoder_optimizer, decoder_optimizer, criterion))
first = sum(history[:10]) / 10
last = sum(history[-10:]) / 10
print("GPULINT-TRAIN " + json.dumps({"first_loss": first, "last_loss": last, "device": "cuda" if use_cuda else "cpu"}))
