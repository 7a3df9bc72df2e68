"""A classifier in the style of a popular beginner tutorial, with its classic GPU mistakes.

Run `gpulint check examples/` to see them; `gpulint fix --unsafe-fixes examples/` to fix them.
"""
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
features = torch.randn(1024, 20)
labels = (features[:, :5].sum(dim=1) > 0).long()
train_loader = DataLoader(TensorDataset(features, labels), batch_size=64, shuffle=True)


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(20, 64)
        self.out = torch.nn.Linear(64, 2)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


model = Classifier().to('cuda')
optimizer = torch.optim.Adam(model.parameters(), lr=0.001).to('cuda')
loss_function = torch.nn.CrossEntropyLoss().to('cuda')

for epoch in range(5):
    for inputs, targets in train_loader:
        optimizer.zero_grad()
        loss = loss_function(model(inputs), targets)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
