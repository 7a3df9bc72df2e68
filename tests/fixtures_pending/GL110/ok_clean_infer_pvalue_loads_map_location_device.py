# source: https://github.com/tttianhao/CLEAN/issues/12
# Hard negative, the reporter's fix as applied to CLEAN's `infer.py`: every `torch.load` inside
# `infer_pvalue` passes `map_location=device` (the CUDA/CPU choice made at the top of the
# function), so the GPU-written checkpoint and the precomputed cluster-center embeddings are
# restored on whatever device this machine has. (Same reduction as the positive: synthetic 32-dim
# embeddings, a short training run writes both files first in a temporary directory.)
import json
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNormNet(nn.Module):
    def __init__(self, hidden_dim, out_dim, device, dtype, drop_out=0.1):
        super().__init__()
        self.fc1 = nn.Linear(32, hidden_dim, dtype=dtype, device=device)
        self.ln1 = nn.LayerNorm(hidden_dim, dtype=dtype, device=device)
        self.fc2 = nn.Linear(hidden_dim, out_dim, dtype=dtype, device=device)
        self.dropout = nn.Dropout(p=drop_out)

    def forward(self, x):
        x = self.dropout(self.ln1(self.fc1(x)))
        return self.fc2(torch.relu(x))


def get_ec_id_dict(seed, n_ec=4, per_ec=6):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(n_ec, 32, generator=g) * 2
    ec_id_dict, emb = {}, {}
    for ec in range(n_ec):
        ec_id_dict[ec] = []
        for k in range(per_ec):
            pid = "P%d_%d" % (ec, k)
            ec_id_dict[ec].append(pid)
            emb[pid] = centers[ec] + 0.5 * torch.randn(32, generator=g)
    return ec_id_dict, emb


def esm_embedding(ec_id_dict, emb, device, dtype):
    rows = [emb[pid] for ec in sorted(ec_id_dict) for pid in ec_id_dict[ec]]
    return torch.stack(rows).to(device=device, dtype=dtype)


def cluster_centers(model_emb, ec_id_dict):
    out, i = [], 0
    for ec in sorted(ec_id_dict):
        n = len(ec_id_dict[ec])
        out.append(model_emb[i:i + n].mean(0))
        i += n
    return torch.stack(out)


def train_and_export(out_dir, device, dtype, epochs=30):
    ec_id_dict, emb = get_ec_id_dict(0)
    model = LayerNormNet(64, 16, device, dtype)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = esm_embedding(ec_id_dict, emb, device, dtype)
    y = torch.tensor([ec for ec in sorted(ec_id_dict) for _ in ec_id_dict[ec]], device=device)
    losses = []
    for _ in range(epochs):
        model.train()
        z = F.normalize(model(x), dim=-1)
        logits = z @ z.t() / 0.1
        logits = logits - 1e4 * torch.eye(len(y), device=device)
        pos = (y[:, None] == y[None, :]).float() - torch.eye(len(y), device=device)
        loss = -(F.log_softmax(logits, dim=1) * pos).sum(1).div(pos.sum(1)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        centers = cluster_centers(model(x), ec_id_dict)
    torch.save(model.state_dict(), os.path.join(out_dir, "split70.pth"))
    torch.save(centers, os.path.join(out_dir, "70.pt"))
    return losses


def model_embedding_test(emb_test, model, device, dtype):
    with torch.no_grad():
        return model(torch.stack(list(emb_test.values())).to(device=device, dtype=dtype))


def infer_pvalue(train_data, test_data_seed, p_value=1e-5, pretrained=True, model_name=None):
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda:0" if use_cuda else "cpu")
    dtype = torch.float32
    ec_id_dict_train, emb_all = get_ec_id_dict(0)
    _, emb_test = get_ec_id_dict(test_data_seed)
    model = LayerNormNet(64, 16, device, dtype)
    if pretrained:
        try:
            checkpoint = torch.load('./data/pretrained/' + train_data + '.pth', map_location=device)
        except FileNotFoundError:
            raise Exception('No pretrained weights for this training data')
    else:
        checkpoint = torch.load('./data/model/' + model_name + '.pth', map_location=device)
    model.load_state_dict(checkpoint)
    model.eval()
    if train_data == "split70":
        emb_train = torch.load('./data/pretrained/70.pt', map_location=device)
    else:
        with torch.no_grad():
            emb_train = cluster_centers(model(esm_embedding(ec_id_dict_train, emb_all, device, dtype)), ec_id_dict_train)
    test_emb = model_embedding_test(emb_test, model, device, dtype)
    dist = torch.cdist(test_emb, emb_train)
    pred = dist.argmin(dim=1)
    return pred.cpu().tolist()


torch.manual_seed(0)
os.chdir(tempfile.mkdtemp())
os.makedirs("./data/pretrained")
train_device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
losses = train_and_export("./data/pretrained", train_device, torch.float32)
print("EC calls:", infer_pvalue("split70", 1))
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": train_device.type}))
