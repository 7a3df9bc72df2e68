# source: https://github.com/alexa/alexa-end-to-end-slu/issues/3
# The experiment class wraps self.model in DataParallel under --distributed when several GPUs
# exist, and later reads self.model.bert (an attribute of the model class) through the wrapper.
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class JointModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.bert = nn.Sequential(nn.Linear(10, 16), nn.Tanh())
        self.audio = nn.Sequential(nn.Linear(10, 16), nn.Tanh())

    def forward(self, audio_feats):
        return self.audio(audio_feats)


class ExperimentRunnerTriplet:
    def __init__(self, args):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = JointModel().to(self.device)
        if args["distributed"] and torch.cuda.is_available() and torch.cuda.device_count() > 1:
            self.model = torch.nn.DataParallel(self.model)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-2)

    def train(self, loader, epochs):
        history = []
        for epoch in range(epochs):
            for audio, text in loader:
                audio, text = audio.to(self.device), text.to(self.device)
                audio_emb = self.model(audio)
                with torch.no_grad():
                    text_emb = self.model.bert(text)  # expect: GL305
                loss = nn.functional.mse_loss(audio_emb, text_emb)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                history.append(loss.item())
        return history


torch.manual_seed(0)
text = torch.randn(256, 10)
audio = text + 0.1 * torch.randn(256, 10)
runner = ExperimentRunnerTriplet({"distributed": True})
history = runner.train(DataLoader(TensorDataset(audio, text), batch_size=32, shuffle=True), 4)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": runner.device.type}))
