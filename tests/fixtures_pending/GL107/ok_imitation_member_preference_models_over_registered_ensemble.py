# Hard negative (PRECISION55, P55-3): a preference model over a reward ensemble keeps one
# lightweight wrapper per ensemble member in a plain list. Each wrapper only holds a member
# that is already registered (through `self.model`, whose `members` is an nn.ModuleList) and a
# few floats: `.to()`, `.parameters()` and `state_dict()` reach every weight through
# `self.model`; an nn.ModuleList would register the members a second time (duplicate
# state_dict keys). Shape of HumanCompatibleAI/imitation
# src/imitation/algorithms/preference_comparisons.py `PreferenceModel.__init__`
# (`self.member_pref_models = []`, `.append(PreferenceModel(member, ...))`):
# https://github.com/HumanCompatibleAI/imitation/blob/master/src/imitation/algorithms/preference_comparisons.py
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class RewardEnsemble(nn.Module):
    def __init__(self, obs_dim, n_members=3):
        super().__init__()
        self.members = nn.ModuleList(
            [nn.Sequential(nn.Linear(obs_dim, 16), nn.Tanh(), nn.Linear(16, 1)) for _ in range(n_members)])

    def forward(self, obs):
        return torch.stack([m(obs).squeeze(-1) for m in self.members], dim=0)


class PreferenceModel(nn.Module):
    def __init__(self, model, discount_factor=1.0, is_member=False):
        super().__init__()
        self.model = model
        self.discount_factor = discount_factor
        self.member_pref_models = []
        if not is_member:
            for member in model.members:
                self.member_pref_models.append(PreferenceModel(member, discount_factor, is_member=True))

    def rewards(self, obs):
        out = self.model(obs)
        return out.squeeze(-1) if out.dim() > 1 and out.shape[-1] == 1 else out

    def forward(self, frag1, frag2):
        r1 = self.rewards(frag1).sum(-1)
        r2 = self.rewards(frag2).sum(-1)
        return torch.sigmoid(r1 - r2)


pref = PreferenceModel(RewardEnsemble(4)).to(device)
optimizer = torch.optim.Adam(pref.parameters(), lr=1e-2)
obs1 = torch.randn(32, 8, 4)
obs2 = torch.randn(32, 8, 4)
target = (obs1[..., 0].sum(-1) > obs2[..., 0].sum(-1)).float()
obs1, obs2, target = obs1.to(device), obs2.to(device), target.to(device)
losses = []
for step in range(60):
    optimizer.zero_grad()
    loss = 0.0
    for member_model in pref.member_pref_models:
        probs = member_model(obs1, obs2)
        loss = loss + nn.functional.binary_cross_entropy(probs, target)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print("GPULINT-TRAIN " + json.dumps({"first_loss": losses[0], "last_loss": losses[-1], "device": device.type}))
