# source: https://github.com/StanfordASL/neural-network-lyapunov/pull/140
# robust_value_approx/train_lyapunov.py: TrainLyapunovReLU.train_with_line_search() trains a ReLU
# Lyapunov function with the repository's own LineSearchGD optimizer (an Armijo backtracking
# step that re-evaluates a closure). The closure returns total_loss()'s whole tuple; the method
# preallocates `losses = [None] * self.max_iterations` and, every iteration, backpropagates the
# previous entry and stores the new one: `losses[iter_count], ... = optimizer.step(closure,
# [losses[iter_count-1]])`. Every entry of the list is the loss tensor with its graph, so the
# training keeps every iteration's graph alive until the method returns (the PR: "Fix the memory
# leak when calling line search sd for training Lyapunov ... losses list only stores the float
# value, not the tensor"). The hybrid-system MIP costs are replaced by sample-based stand-ins.
import json

import torch
import torch.nn as nn
from torch.optim.optimizer import Optimizer


class LineSearchGD(Optimizer):
    def __init__(self, params, lr, momentum=0.0, min_step_size=1e-8,
                 loss_minimal_decrement=1e-4, step_size_reduction=0.2):
        defaults = dict(lr=lr, momentum=momentum, min_step_size=min_step_size,
                        loss_minimal_decrement=loss_minimal_decrement,
                        step_size_reduction=step_size_reduction)
        super().__init__(params, defaults)

    def directional_evaluate(self, closure, p, t, d_p):
        for i in range(len(p)):
            p[i].data.add_(d_p[i], alpha=t)
        return closure()

    def line_search(self, loss0, closure, p, t, d_p):
        group = self.param_groups[0]
        increment = group["loss_minimal_decrement"] * torch.sum(
            torch.stack([torch.sum(p[i].grad * d_p[i]) for i in range(len(p))]))
        t_prev = 0
        while t > group["min_step_size"]:
            loss = self.directional_evaluate(closure, p, t - t_prev, d_p)
            if loss[0] <= loss0[0] + t * increment:
                return loss
            t_prev = t
            t *= group["step_size_reduction"]
        return loss

    def step(self, closure, loss0):
        p_all, dp_all = [], []
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d_p = p.grad.data
                if group["momentum"] != 0:
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        buf = state["momentum_buffer"] = torch.clone(d_p).detach()
                    else:
                        buf = state["momentum_buffer"]
                        buf.mul_(group["momentum"]).add_(d_p)
                    d_p = buf
                p_all.append(p)
                dp_all.append(-d_p)
        return self.line_search(loss0, closure, p_all, self.param_groups[0]["lr"], dp_all)


class TrainLyapunovReLU:
    def __init__(self, x_equilibrium, device):
        self.x_equilibrium = x_equilibrium
        self.device = device
        self.max_iterations = 60
        self.learning_rate = 0.05
        self.momentum = 0.0
        self.lyapunov_positivity_convergence_tol = 1e-6
        self.lyapunov_derivative_convergence_tol = 1e-6
        self.A = torch.tensor([[0.9, 0.2], [-0.2, 0.9]], device=device)

    def step_forward(self, x):
        return x @ self.A.T

    def total_loss(self, relu, state_samples_all, state_samples_next):
        v = relu(state_samples_all).squeeze(1) - relu(self.x_equilibrium.unsqueeze(0)).squeeze(1)
        v_next = relu(state_samples_next).squeeze(1) - relu(self.x_equilibrium.unsqueeze(0)).squeeze(1)
        norm = torch.norm(state_samples_all - self.x_equilibrium, p=1, dim=1)
        positivity = torch.relu(0.01 * norm - v)
        derivative = torch.relu(v_next - v + 0.01 * v)
        loss = positivity.mean() + derivative.mean()
        return loss, positivity.max().item(), derivative.max().item(), None, None, None, None

    def train_with_line_search(self, relu, state_samples_all):
        state_samples_next = torch.stack([
            self.step_forward(state_samples_all[i]) for i in range(state_samples_all.shape[0])], dim=0)
        lyapunov_positivity_mip_costs = [None] * self.max_iterations
        lyapunov_derivative_mip_costs = [None] * self.max_iterations
        losses = [None] * self.max_iterations

        def closure():
            return self.total_loss(relu, state_samples_all, state_samples_next)

        losses[0], lyapunov_positivity_mip_costs[0], \
            lyapunov_derivative_mip_costs[0], _, _, _, _ = closure()
        iter_count = 1
        optimizer = LineSearchGD(relu.parameters(), lr=self.learning_rate, momentum=self.momentum,
                                 min_step_size=1e-8, loss_minimal_decrement=-1e-4, step_size_reduction=0.2)
        while iter_count < self.max_iterations:
            optimizer.zero_grad()
            losses[iter_count - 1].backward()
            (losses[iter_count], lyapunov_positivity_mip_costs[iter_count],  # expect: GL402
             lyapunov_derivative_mip_costs[iter_count], _, _, _, _) = optimizer.step(closure, [losses[iter_count - 1]])
            if lyapunov_positivity_mip_costs[iter_count] < self.lyapunov_positivity_convergence_tol and \
                    lyapunov_derivative_mip_costs[iter_count] < self.lyapunov_derivative_convergence_tol:
                break
            if iter_count % 20 == 0:
                print(f"iter {iter_count}, loss {losses[iter_count].item()}")
            iter_count += 1
        return [loss.item() for loss in losses if loss is not None]


torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
relu = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1)).to(device)
state_samples_all = (torch.rand(64, 2) * 2 - 1).to(device)
dut = TrainLyapunovReLU(torch.zeros(2, device=device), device)
history = dut.train_with_line_search(relu, state_samples_all)
print("GPULINT-TRAIN " + json.dumps({"first_loss": history[0], "last_loss": history[-1], "device": device.type}))
