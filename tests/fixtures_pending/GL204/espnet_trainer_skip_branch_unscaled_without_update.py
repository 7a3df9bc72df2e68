# source: https://github.com/espnet/espnet/pull/2362
# espnet2/train/trainer.py: the classmethod Trainer.train_one_epoch() ends each accumulation window
# with `scaler.unscale_(optimizer)`, clips the gradients, and when the returned norm is not finite
# only logs "The grad norm is ... Skipping updating the model."; `scaler.step(optimizer)` and
# `scaler.update()` run only in the else branch. After a window whose scaled gradients overflowed,
# the next window's unscale_ raises "unscale_() has already been called on this optimizer since the
# last update()". PR #2362 ("Fix amp") calls scaler.step + scaler.update in the skip branch as well
# (scaler.step skips the optimizer step itself when it finds inf/NaN). Here the fourth batch carries
# a huge target so that its loss overflows, as a diverging batch does.
# fails-on-cuda: unscale_() has already been called on this optimizer since the last update()
import json
import logging

import torch
import torch.nn as nn


class ESPnetToyModel(nn.Module):
    def __init__(self, idim, odim):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(idim, 32), nn.Tanh(), nn.Linear(32, odim))

    def forward(self, speech, text):
        pred = self.encoder(speech)
        loss = ((pred.float() - text) ** 2).mean()
        stats = dict(loss=loss.detach())
        weight = torch.tensor(speech.shape[0], device=speech.device)
        return loss, stats, weight


def to_device(data, device):
    return {k: v.to(device) for k, v in data.items()}


class Trainer:
    @classmethod
    def train_one_epoch(cls, model, iterator, optimizer, scheduler, scaler, options, history):
        accum_grad = options["accum_grad"]
        grad_clip = options["grad_clip"]
        ngpu = options["ngpu"]

        model.train()
        all_steps_are_invalid = True
        for iiter, (_, batch) in enumerate(iterator, 1):
            batch = to_device(batch, "cuda" if ngpu > 0 else "cpu")
            with torch.autocast("cuda", dtype=torch.float16, enabled=scaler is not None):
                loss, stats, weight = model(**batch)
            loss = loss / accum_grad
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()

            if iiter % accum_grad == 0:
                if scaler is not None:
                    scaler.unscale_(optimizer)  # expect: GL204
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=grad_clip)
                if not torch.isfinite(grad_norm):
                    logging.warning(f"The grad norm is {grad_norm}. Skipping updating the model.")
                else:
                    all_steps_are_invalid = False
                    if scaler is not None:
                        scaler.step(optimizer)
                        scaler.update()
                    else:
                        optimizer.step()
                    if scheduler is not None:
                        scheduler.step()
                optimizer.zero_grad()
            if torch.isfinite(stats["loss"]):
                history.append(stats["loss"].item())
        return all_steps_are_invalid


def make_iterator(num_batches, seed):
    g = torch.Generator().manual_seed(seed)
    weight = torch.randn(8, 4, generator=g)
    for i in range(num_batches):
        speech = torch.randn(16, 8, generator=g)
        text = speech @ weight
        if i == 3:
            text = text * 1e30
        yield f"utt{i}", {"speech": speech, "text": text}


if __name__ == "__main__":
    torch.manual_seed(0)
    ngpu = 1 if torch.cuda.is_available() else 0
    model = ESPnetToyModel(8, 4).to("cuda" if ngpu > 0 else "cpu")
    optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)
    scaler = torch.amp.GradScaler("cuda") if ngpu > 0 else None
    options = {"accum_grad": 2, "grad_clip": 5.0, "ngpu": ngpu}
    history = []
    for epoch in range(8):
        Trainer.train_one_epoch(model, make_iterator(16, epoch), optimizer, scheduler, scaler, options, history)
    print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": "cuda" if ngpu > 0 else "cpu"}))
