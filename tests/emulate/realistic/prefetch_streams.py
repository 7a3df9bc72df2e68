"""timm-style prefetching loader: side CUDA stream, pinned memory, normalisation on the GPU, record_stream."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class PrefetchLoader:
    def __init__(self, loader, device=torch.device("cuda")):
        self.loader = loader
        self.device = device
        self.mean = torch.tensor([x * 255 for x in MEAN], device=device).view(1, 3, 1, 1)
        self.std = torch.tensor([x * 255 for x in STD], device=device).view(1, 3, 1, 1)
        self.is_cuda = torch.cuda.is_available() and device.type == "cuda"

    def __iter__(self):
        first = True
        stream = torch.cuda.Stream() if self.is_cuda else None
        stream_context = (lambda: torch.cuda.stream(stream)) if self.is_cuda else None
        for next_input, next_target in self.loader:
            with stream_context():
                next_input = next_input.to(device=self.device, non_blocking=True)
                next_target = next_target.to(device=self.device, non_blocking=True)
                next_input = next_input.float().sub_(self.mean).div_(self.std)
            if not first:
                yield input, target
            else:
                first = False
            if stream is not None:
                torch.cuda.current_stream().wait_stream(stream)
                next_input.record_stream(torch.cuda.current_stream())
                next_target.record_stream(torch.cuda.current_stream())
            input, target = next_input, next_target
        yield input, target

    def __len__(self):
        return len(self.loader)


def main():
    data = TensorDataset(torch.randint(0, 256, (48, 3, 8, 8), dtype=torch.uint8), torch.randint(0, 5, (48,)))
    loader = PrefetchLoader(DataLoader(data, batch_size=8, pin_memory=True, num_workers=0))
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 5)).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x.contiguous(memory_format=torch.channels_last)), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
        print(f"epoch {epoch} loss {loss:.4f}")
    end.record()
    end.synchronize()
    print(f"time {start.elapsed_time(end) >= 0}")


if __name__ == "__main__":
    main()
