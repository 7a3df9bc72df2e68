# source: https://github.com/IliaZenkov/transformer-cnn-emotion-recognition/issues/6
# fails-on-cuda: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
# A speech-emotion notebook trains a parallel CNN/transformer model on the GPU through step functions
# made by closures (make_train_step / make_validate_fnc). For testing, a new model instance is
# built, the saved weights are loaded into it, and a validate function is made for it, while the
# test tensors are created on the device: the reloaded model was never moved, so the first layer
# meets CUDA inputs with CPU weights. The fix in the thread adds `model.cuda()` when CUDA is
# available after loading the weights.
import json
import os
import tempfile

import torch
import torch.nn as nn

EMOTIONS = ["neutral", "calm", "happy", "sad"]
device = "cuda" if torch.cuda.is_available() else "cpu"


class ParallelModel(nn.Module):
    def __init__(self, num_emotions):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(1, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(4))
        self.transformer = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
        self.fc = nn.Linear(8 * 4 + 16, num_emotions)

    def forward(self, x):
        conv = self.conv(x.unsqueeze(1)).flatten(1)
        trans = self.transformer(x)
        logits = self.fc(torch.cat([conv, trans], dim=1))
        return logits, torch.softmax(logits, dim=1)


def make_train_step(model, loss_fnc, optimizer):
    def train_step(X, Y):
        model.train()
        output_logits, output_softmax = model(X)
        loss = loss_fnc(output_logits, Y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.item()
    return train_step


def make_validate_fnc(model, loss_fnc):
    def validate(X, Y):
        with torch.no_grad():
            model.eval()
            output_logits, output_softmax = model(X)  # expect: GL112
            predictions = torch.argmax(output_softmax, dim=1)
            accuracy = torch.sum(Y == predictions) / float(len(Y))
            loss = loss_fnc(output_logits, Y)
        return loss.item(), accuracy.item() * 100, predictions
    return validate


torch.manual_seed(0)
X_train = torch.randn(256, 16)
Y_train = X_train[:, :4].argmax(dim=1)
X_test, Y_test = X_train[:64] + 0.05 * torch.randn(64, 16), Y_train[:64]

model = ParallelModel(len(EMOTIONS)).to(device)
loss_fnc = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
train_step = make_train_step(model, loss_fnc, optimizer)
losses = []
for epoch in range(10):
    for i in range(0, 256, 32):
        X = X_train[i : i + 32].to(device)
        Y = Y_train[i : i + 32].to(device)
        losses.append(train_step(X, Y))
SAVE_PATH = tempfile.mkdtemp()
torch.save(model.state_dict(), os.path.join(SAVE_PATH, "cnn_transformer_model.pt"))

# testing: reload the saved weights into a fresh model
model = ParallelModel(len(EMOTIONS))
model.load_state_dict(torch.load(os.path.join(SAVE_PATH, "cnn_transformer_model.pt"), map_location="cpu", weights_only=True))
validate = make_validate_fnc(model, loss_fnc)
X_test_tensor = torch.tensor(X_test, device=device).float()
Y_test_tensor = torch.tensor(Y_test, dtype=torch.long, device=device)
test_loss, test_acc, predicted_emotions = validate(X_test_tensor, Y_test_tensor)
print(f"Test accuracy is {test_acc:.2f}%")
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": torch.device(device).type}))
