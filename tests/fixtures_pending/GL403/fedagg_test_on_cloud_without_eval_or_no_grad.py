# source: https://github.com/wuzhiyuan2000/FedAgg/issues/2
# fedagg.py: a tree of `Node`s (cloud root, edge nodes, client leaves), each holding a model and a
# pretrained autoencoder. `Init` encodes every client's images into noises that go up the tree;
# each communication round `train_FedAgg(root)` recurses down and runs `BSBODP(node, father)`:
# bidirectional distillation on the decoded noises, one SGD optimizer built per direction, with
# `zero_grad`/`backward`/`step` per sample. After every round `test_on_cloud(cloud_model,
# test_data_global, comm_round)` measures top-1 accuracy: it never calls `cloud_model.eval()` (the
# ResNet's batch norm normalises each test batch with its own statistics and updates its running
# ones) and runs the forward with autograd on, keeping each batch's graph. The reporter asked why
# neither `model.eval()` nor `torch.no_grad()` is used in the testing phase.
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyResNet(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        feats = F.adaptive_avg_pool2d(h, 1).flatten(1)
        return F.log_softmax(self.fc(feats), dim=1), feats


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Flatten(), nn.Linear(64, 64))
        self.decoder = nn.Sequential(nn.Linear(64, 64), nn.Unflatten(1, (1, 8, 8)))


def create_autoencoder():
    # stands for the pretrained autoencoder the repository loads: a near-identity code
    ae = AutoEncoder()
    with torch.no_grad():
        for lin in (ae.encoder[1], ae.decoder[0]):
            lin.weight.copy_(torch.eye(64))
            lin.bias.zero_()
    return ae


class RunningAverage:
    def __init__(self):
        self.steps, self.total = 0, 0.0

    def update(self, val):
        self.total += val
        self.steps += 1

    def value(self):
        return self.total / float(self.steps)


def accuracy(log_probs, labels):
    return (log_probs.argmax(1) == labels).float().mean() * 100.0


def KL_Loss(temperature):
    def kl(output, teacher):
        return F.kl_div(F.log_softmax(output / temperature, 1), F.softmax(teacher / temperature, 1), reduction="batchmean")
    return kl


class Loss_Non_Leaf(nn.Module):
    def __init__(self, temperature=1, alpha=10):
        super().__init__()
        self.alpha = alpha
        self.kl_loss_crit = KL_Loss(temperature)
        self.ce_loss_crit = nn.CrossEntropyLoss()

    def forward(self, output_batch, teacher_outputs, label):
        return self.ce_loss_crit(output_batch, label.long()) + self.alpha * self.kl_loss_crit(output_batch, teacher_outputs.detach())


class Loss_Leaf(nn.Module):
    def __init__(self, temperature=1, alpha=1, alpha2=1):
        super().__init__()
        self.alpha2 = alpha2
        self.non_leaf_loss_crit = Loss_Non_Leaf(temperature, alpha)
        self.ce_loss_crit = nn.CrossEntropyLoss()

    def forward(self, output_fake, teacher_outputs_fake, output_true, label):
        loss_leaf = self.non_leaf_loss_crit(output_fake, teacher_outputs_fake.detach(), label.long())
        return loss_leaf + self.alpha2 * self.ce_loss_crit(output_true, label.long())


class Args:
    lr = 0.05
    T_agg = 1.0
    comm_round = 4
    edge_number = 2
    client_number = 4


history = []
round_losses = []


def test_on_cloud(cloud_model, test_data_global, comm_round):
    accTop1_avg = RunningAverage()
    loss_avg = RunningAverage()
    for batch_idx, (images, labels) in enumerate(test_data_global):  # expect: GL404
        images, labels = images.to(device), labels.to(device)
        log_probs, extracted_features = cloud_model(images)  # expect: GL403
        accTop1_avg.update(accuracy(log_probs, labels).item())
        loss_avg.update(F.nll_loss(log_probs, labels).item())
    print("Test/AccTop1 in comm_round", comm_round, accTop1_avg.value(), "test loss", loss_avg.value())
    history.append(torch.stack(round_losses).mean().item())
    round_losses.clear()


global_index = 0


class Node:
    def __init__(self, args, model, father=None):
        global global_index
        self.model = model.to(device)
        self.dataset = None
        self.father = father
        self.children = []
        self.index = global_index
        self.autoencoder = create_autoencoder().to(device)
        self.noises = []
        self.labels = []
        self.args = args
        global_index = global_index + 1

    def is_leaf(self):
        return len(self.children) == 0

    def is_root(self):
        return self.father is None


def create_child_for_upper_level(args, upper_level, children_number, models):
    result = []
    for ele in upper_level:
        sub_nodes = []
        for _, model in zip(range(children_number), models):
            sub_nodes.append(Node(args, model, ele))
        ele.children = sub_nodes
        result.extend(sub_nodes)
    return result


def Init(node):
    if node.is_root():
        for child in node.children:
            Init(child)
    elif node.is_leaf():
        for img, label in node.dataset:
            img, label = img.to(device), label.to(device)
            node.noises.append(node.autoencoder.encoder(img).detach())
            node.labels.append(label)
        node.father.noises.extend(node.noises)
        node.father.labels.extend(node.labels)
    else:
        for child in node.children:
            Init(child)
        node.father.noises.extend(node.noises)
        node.father.labels.extend(node.labels)


def BSBODP_dir(node_origin, node_neigh, args):
    noises = node_neigh.noises if len(node_neigh.noises) < len(node_origin.noises) else node_origin.noises
    labels = node_neigh.labels if len(node_neigh.labels) < len(node_origin.labels) else node_origin.labels
    crit_non_leaf = Loss_Non_Leaf(args.T_agg)
    crit_leaf = Loss_Leaf(args.T_agg)
    optimizer = torch.optim.SGD(node_origin.model.parameters(), lr=node_origin.args.lr, momentum=0.9)
    for idx, (noise, label) in enumerate(zip(noises, labels)):
        optimizer.zero_grad()
        fake_data = node_neigh.autoencoder.decoder(noise)
        nei_logits, _ = node_neigh.model(fake_data)
        logits_fake, _ = node_origin.model(fake_data)
        if node_origin.is_leaf():
            img, _ = node_origin.dataset[idx]
            logits_true, _ = node_origin.model(img.to(device))
            loss = crit_leaf(logits_fake, nei_logits, logits_true, label.long())
        else:
            loss = crit_non_leaf(logits_fake, nei_logits, label.long())
        loss.backward()
        optimizer.step()
        round_losses.append(loss.detach())


def BSBODP(node1, node2, args):
    BSBODP_dir(node1, node2, args)
    BSBODP_dir(node2, node1, args)


def train_FedAgg(node, args):
    if node.is_root():
        for child in node.children:
            train_FedAgg(child, args)
    elif node.is_leaf():
        BSBODP(node, node.father, args)
    else:
        for child in node.children:
            train_FedAgg(child, args)
        BSBODP(node, node.father, args)


def run_fedagg(client_models, edge_models, cloud_model, train_data_local_dict, test_data_global, args):
    V1 = [Node(args, cloud_model)]
    V2 = create_child_for_upper_level(args, V1, args.edge_number, edge_models)
    V3 = create_child_for_upper_level(args, V2, args.client_number // args.edge_number, client_models)
    for idx, node in enumerate(V3):
        node.dataset = [_ for _ in train_data_local_dict[idx]]
    Init(V1[0])
    for comm_round in range(args.comm_round):
        train_FedAgg(V1[0], args)
        test_on_cloud(V1[0].model, test_data_global, comm_round)


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 4, (n,), generator=g)
    x = torch.randn(n, 1, 8, 8, generator=g) * 0.3
    x[:, 0, :4, :4] += (y % 2).float().view(-1, 1, 1) * 1.5
    x[:, 0, 4:, 4:] += (y // 2).float().view(-1, 1, 1) * 1.5
    return x, y


if __name__ == "__main__":
    torch.manual_seed(0)
    args = Args()
    train_data_local_dict = {}
    for i in range(args.client_number):
        x, y = make_data(32, i + 1)
        train_data_local_dict[i] = DataLoader(TensorDataset(x, y), batch_size=8)
    xt, yt = make_data(64, 99)
    test_data_global = DataLoader(TensorDataset(xt, yt), batch_size=16)
    client_models = [TinyResNet() for _ in range(args.client_number // args.edge_number)]
    edge_models = [TinyResNet() for _ in range(args.edge_number)]
    run_fedagg(client_models, edge_models, TinyResNet(), train_data_local_dict, test_data_global, args)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
