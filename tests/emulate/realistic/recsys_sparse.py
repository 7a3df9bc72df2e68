"""Matrix-factorisation recommender: sparse embeddings with SparseAdam, dense head with Adam, BCE-with-logits."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MF(nn.Module):
    def __init__(self, n_users=50, n_items=40, dim=8):
        super().__init__()
        self.user = nn.Embedding(n_users, dim, sparse=True)
        self.item = nn.Embedding(n_items, dim, sparse=True)
        self.head = nn.Linear(2 * dim, 1)

    def forward(self, u, i):
        return self.head(torch.cat([self.user(u), self.item(i)], dim=1)).squeeze(1)


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = MF().to(device)
sparse_params = list(model.user.parameters()) + list(model.item.parameters())
opt_sparse = torch.optim.SparseAdam(sparse_params, lr=0.01)
opt_dense = torch.optim.Adam(model.head.parameters(), lr=0.01)
data = TensorDataset(torch.randint(0, 50, (128,)), torch.randint(0, 40, (128,)), torch.randint(0, 2, (128,)).float())
loss_fn = nn.BCEWithLogitsLoss()
for epoch in range(2):
    total = 0.0
    for users, items, labels in DataLoader(data, batch_size=32, shuffle=True):
        users, items, labels = users.to(device), items.to(device), labels.to(device)
        loss = loss_fn(model(users, items), labels)
        opt_sparse.zero_grad()
        opt_dense.zero_grad()
        loss.backward()
        opt_sparse.step()
        opt_dense.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total:.3f}")
