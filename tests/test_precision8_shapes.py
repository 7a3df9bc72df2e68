"""Eighth precision pass (benchmarks/PRECISION8.md): the true shapes next to each hard negative
still report. Each test checks a positive and the negative it must be told apart from."""

from __future__ import annotations

from fixture_support import check


def codes(text, code, path="fixture.py"):
    return [(d.code, d.line) for d in check(text, {code}, path) if d.code == code]


# -- GL110: `if use_cuda:` with `use_cuda = torch.cuda.is_available()` -------------------------------
GL110_FLAG = '''import torch
import torch.nn as nn

BINDING
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)


def _load(path):
    if TEST:
        return torch.load(path)
    return torch.load(path, map_location=lambda storage, loc: storage)


if __name__ == "__main__":
    model.load_state_dict(_load("ckpt.pth")["state_dict"])
'''


def test_gl110_load_under_a_name_bound_to_the_availability_check_is_silent():
    text = GL110_FLAG.replace("BINDING", "use_cuda = torch.cuda.is_available()")
    assert codes(text.replace("TEST", "use_cuda"), "GL110") == []
    both = GL110_FLAG.replace("BINDING", "use_cuda = not NO_CUDA and torch.cuda.is_available()\nNO_CUDA = False")
    assert codes(both.replace("TEST", "use_cuda"), "GL110") == []


def test_gl110_load_under_another_flag_or_the_other_branch_still_reports():
    # a flag the user sets: the GPU may well be absent where the checkpoint is read
    text = GL110_FLAG.replace("BINDING", "use_cuda = True")
    assert codes(text.replace("TEST", "use_cuda"), "GL110") == [("GL110", 11)]
    # bound to the check, then overwritten: not known to imply availability
    rebound = GL110_FLAG.replace("BINDING", "use_cuda = torch.cuda.is_available()\nuse_cuda = True")
    assert codes(rebound.replace("TEST", "use_cuda"), "GL110") == [("GL110", 12)]
    # `or`: true without an accelerator too
    either = GL110_FLAG.replace("BINDING", "use_cuda = FORCE or torch.cuda.is_available()\nFORCE = True")
    assert codes(either.replace("TEST", "use_cuda"), "GL110") == [("GL110", 12)]
    # the negation: the load without map_location is the CPU branch
    text = GL110_FLAG.replace("BINDING", "use_cuda = torch.cuda.is_available()")
    assert codes(text.replace("TEST", "not use_cuda"), "GL110") == [("GL110", 11)]


# -- GL105 / GL116: CTC targets made on the host ------------------------------------------------------
GL105_CTC = '''import torch
import torch.nn as nn


class AlignLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_softmax = nn.LogSoftmax(dim=-1)
        self.ctc = LOSS

    def forward(self, logprob, key_lens, query_lens):
        total = 0.0
        for b in range(logprob.shape[0]):
            target_seq = torch.arange(1, key_lens[b] + 1).unsqueeze(0)
            cur = self.log_softmax(logprob[b, :query_lens[b], :key_lens[b] + 1])
            total += self.ctc(ARGS)
        return total


crit = AlignLoss().to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
'''


def test_gl105_ctc_targets_on_the_host_are_silent():
    text = GL105_CTC.replace("LOSS", "nn.CTCLoss(zero_infinity=True)")
    args = "cur[:, None], target_seq, input_lengths=query_lens[b:b + 1], target_lengths=key_lens[b:b + 1]"
    assert codes(text.replace("ARGS", args), "GL105") == []
    assert codes(text.replace("ARGS", args.replace("target_seq", "targets=target_seq")), "GL105") == []


def test_gl105_host_log_probs_or_another_loss_still_reports():
    # the host tensor is the log-probabilities: CTC does not move those
    text = GL105_CTC.replace("LOSS", "nn.CTCLoss(zero_infinity=True)")
    args = "cur[:, None] + target_seq.unsqueeze(-1), key_lens[b:b + 1], query_lens[b:b + 1], key_lens[b:b + 1]"
    assert codes(text.replace("ARGS", args), "GL105") == [("GL105", 14)]
    # another loss, which takes its target as it is
    other = GL105_CTC.replace("LOSS", "nn.CTCLoss()").replace(
        "self.ctc(ARGS)", "nn.functional.mse_loss(cur[:, :1], target_seq.float())")
    assert codes(other, "GL105") == [("GL105", 14)]


# -- GL105: `t.type(x.type())` -----------------------------------------------------------------------
GL105_TYPE = '''import torch
import torch.nn as nn


class ARStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 8)

    def forward(self, mel):
        dummy = torch.FloatTensor(1, mel.size(1), mel.size(2)).zero_()
        dummy = CONVERT
        return self.lstm(torch.cat([dummy, mel[:-1]], 0))[0]


model = ARStep().to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
'''


def test_gl105_conversion_to_the_inputs_type_string_is_silent():
    assert codes(GL105_TYPE.replace("CONVERT", "dummy.type(mel.type())"), "GL105") == []


def test_gl105_conversion_to_a_host_type_still_reports():
    assert codes(GL105_TYPE.replace("CONVERT", "dummy.type(torch.FloatTensor)"), "GL105") == [("GL105", 11)]
    assert codes(GL105_TYPE.replace("CONVERT", "dummy.float()"), "GL105") == [("GL105", 11)]


# -- GL116 / GL105: a factory writing into an `out=` buffer --------------------------------------------
GL116_OUT = '''import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def get_mask(lengths):
    max_len = int(torch.max(lengths).item())
    ids = FACTORY
    return ids < lengths.unsqueeze(1)


print(get_mask(torch.tensor([3, 2], device=device)))
'''


def test_gl116_factory_into_out_buffer_is_silent():
    assert codes(GL116_OUT.replace("FACTORY", "torch.arange(0, max_len, out=torch.cuda.LongTensor(max_len))"), "GL116") == []


def test_gl116_factory_without_out_still_reports():
    assert codes(GL116_OUT.replace("FACTORY", "torch.arange(0, max_len)"), "GL116") == [("GL116", 9)]


# -- GL107: a plain list of file modules that hold only inert modules -----------------------------------
GL107_NESTED = '''import torch
import torch.nn as nn


class MovingAvg(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.kernel_size = kernel_size
        self.avg = nn.AvgPool1d(kernel_size, stride=1)

    def forward(self, x):
        return self.avg(x)


class Decomp(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.moving_avg = INNER

    def forward(self, x):
        return x - self.moving_avg(x)


class DecompMulti(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.decomps = [Decomp(k) for k in kernel_size]

    def forward(self, x):
        return sum(d(x) for d in self.decomps) / len(self.decomps)
'''


def test_gl107_list_of_nested_inert_modules_is_silent():
    assert codes(GL107_NESTED.replace("INNER", "MovingAvg(kernel_size)"), "GL107") == []


def test_gl107_list_of_modules_holding_weights_or_dropout_still_reports():
    assert codes(GL107_NESTED.replace("INNER", "nn.Conv1d(4, 4, kernel_size, padding='same')"), "GL107") == [("GL107", 27)]
    assert codes(GL107_NESTED.replace("INNER", "nn.Dropout(0.1)"), "GL107") == [("GL107", 27)]


# -- DeviceFlow: the body of a one-line `if` (ENet's BottleNeck) --------------------------------------
def test_deviceflow_interprets_a_one_line_if_body():
    from test_module_analysis import met

    src = '''
class BottleNeck(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        identity = self.conv(x)
        extras = torch.zeros(identity.size(0), 2, identity.size(2), identity.size(3))
        GUARD
        return torch.cat((identity, extras), dim=1)
'''
    one_line = src.replace("GUARD", "if torch.cuda.is_available(): extras = extras.cuda()")
    assert met(one_line) == {"torch.zeros(identity.size(0), 2, identity.size(2), identity.size(3))": False}
    # a one-line body that does not move it: still met
    other = src.replace("GUARD", "if torch.cuda.is_available(): print(extras.shape)")
    assert met(other) == {"torch.zeros(identity.size(0), 2, identity.size(2), identity.size(3))": True}


# -- GL112: a parameter-free layer built in a method (pytorch-grad-cam's ScoreCAM) -------------------
GL112_LAYER = '''import torch
import torch.nn as nn


class Scorer:
    def __init__(self, device):
        self.device = device

    def weights(self, activations):
        layer = LAYER
        act = torch.from_numpy(activations).to(self.device)
        return layer(act)
'''


def test_gl112_parameter_free_layer_is_silent():
    for layer in ("torch.nn.UpsamplingBilinear2d(size=(8, 8))", "nn.ReLU()", "nn.ReflectionPad2d(1)"):
        assert codes(GL112_LAYER.replace("LAYER", layer), "GL112") == [], layer


def test_gl112_layer_with_weights_still_reports():
    assert codes(GL112_LAYER.replace("LAYER", "nn.Conv2d(4, 4, 3)"), "GL112") == [("GL112", 12)]


# -- GL403: a model called with an inference-mode string (SPADE) -------------------------------------
GL403_MODE = '''import torch
from models import create_model

model = create_model()
model.eval()
for i, data_i in enumerate(dataloader):
    generated = CALL
    save(generated.cpu())
'''


def test_gl403_model_called_in_inference_mode_is_silent():
    assert codes(GL403_MODE.replace("CALL", "model(data_i, mode='inference')"), "GL403") == []
    assert codes(GL403_MODE.replace("CALL", "model(data_i, 'test')"), "GL403") == []


def test_gl403_model_called_in_another_mode_still_reports():
    assert codes(GL403_MODE.replace("CALL", "model(data_i)"), "GL403") == [("GL403", 7)]
    assert codes(GL403_MODE.replace("CALL", "model(data_i, mode='generator')"), "GL403") == [("GL403", 7)]
    assert codes(GL403_MODE.replace("CALL", "model(data_i, style='inference')"), "GL403") == [("GL403", 7)]


# -- GL101 / GL109: a device name bound to the string 'cpu' (PyTorch-BYOL's notebook) -------------------
GL101_CPU_NAME = '''import torch
from torch.utils.data import DataLoader, TensorDataset

BINDING
encoder = torch.nn.Linear(4, 2)
encoder = encoder.to(device)
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.zeros(8)), batch_size=4)
for x, y in loader:
    out = encoder(x)
    print(encoder(y.to(device)).numpy())
'''


def test_gl101_gl109_device_name_bound_to_cpu_is_silent():
    text = GL101_CPU_NAME.replace("BINDING", "device = 'cpu'")
    assert codes(text, "GL101") == []
    assert codes(text, "GL109") == []


def test_gl101_gl109_device_name_bound_to_cuda_or_either_still_reports():
    cuda = GL101_CPU_NAME.replace("BINDING", "device = 'cuda'")
    assert codes(cuda, "GL101") == [("GL101", 9)]
    assert codes(cuda, "GL109") == [("GL109", 10)]
    either = GL101_CPU_NAME.replace("BINDING", "import sys\ndevice = 'cpu'\nif len(sys.argv) > 1:\n    device = 'cuda'")
    assert codes(either, "GL101") == [("GL101", 12)]


# -- GL110: a load in the branch of the script's own GPU flag (awd-lstm-lm pointer.py) -----------------
GL110_ARGS_FLAG = '''import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_false")
args = parser.parse_args()
model = torch.nn.Linear(4, 1)
if args.cuda:
    model.cuda()


def load(fn):
    with open(fn, "rb") as f:
        if TEST:
            return torch.load(f, map_location=lambda storage, loc: storage)
        else:
            return torch.load(f)


if __name__ == "__main__":
    model.load_state_dict(load("model.pt"))
'''


def test_gl110_load_in_the_gpu_flag_branch_is_silent():
    assert codes(GL110_ARGS_FLAG.replace("TEST", "not args.cuda"), "GL110") == []
    assert codes(GL110_ARGS_FLAG.replace("TEST", "args.no_cuda"), "GL110") == []


def test_gl110_load_in_the_cpu_branch_of_the_flag_still_reports():
    assert codes(GL110_ARGS_FLAG.replace("TEST", "args.cuda"), "GL110") == [("GL110", 17)]
    assert codes(GL110_ARGS_FLAG.replace("TEST", "args.verbose"), "GL110") == [("GL110", 17)]
