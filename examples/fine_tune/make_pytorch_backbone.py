"""Pretrains the fine-tuning example's CNN in PyTorch on Fashion-MNIST classes
0-4 and writes its backbone (the convolutions and BatchNorms, with their
running statistics) as pytorch_backbone.safetensors under tenet's names.

Run once where torch is installed; the output is committed, so the example
never needs torch:

    python examples/fine_tune/make_pytorch_backbone.py [/usr/share/datasets/fashion-mnist]

The net is the example's (main.cpp): nn.Sequential(backbone, Flatten, Linear(3136, 128),
ReLU, Linear(128, 10)) with backbone = Sequential(Conv2d(1, 32, 3, padding=1), ReLU,
BatchNorm2d(32), MaxPool2d(2), Conv2d(32, 64, 3, padding=1), ReLU, BatchNorm2d(64),
MaxPool2d(2)), so the backbone's names are tenet's ("0.0.weight", "0.2.running_mean",
...). Pixels are normalised as tenet's data::normalize_pixels does.
"""
import gzip
import pathlib
import sys
import time

import numpy as np
import torch
from safetensors.torch import save_file

HERE = pathlib.Path(__file__).resolve().parent
MEAN, STD = 0.2860, 0.3530


def load(folder: pathlib.Path, kind: str):
    with gzip.open(folder / f"{kind}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(folder / f"{kind}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    x = (torch.from_numpy(images.astype(np.float32)) / 255 - MEAN) / STD
    return x, torch.from_numpy(labels.astype(np.int64))


def make_net() -> torch.nn.Sequential:
    backbone = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.BatchNorm2d(32), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.BatchNorm2d(64), torch.nn.MaxPool2d(2))
    return torch.nn.Sequential(backbone, torch.nn.Flatten(), torch.nn.Linear(3136, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10))


def main() -> None:
    folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist")
    torch.manual_seed(0)
    x, y = load(folder, "train")
    keep = y < 5
    x, y = x[keep], y[keep]
    net = make_net()
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=1e-4)
    start = time.time()
    for epoch in range(2):
        order = torch.randperm(len(y))
        for first in range(0, len(y), 256):
            pick = order[first:first + 256]
            loss = torch.nn.functional.cross_entropy(net(x[pick]), y[pick])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch + 1}: last batch loss {loss.item():.4f} ({time.time() - start:.0f} s)")
    net.eval()
    tx, ty = load(folder, "t10k")
    keep = ty < 5
    with torch.no_grad():
        accuracy = (net(tx[keep]).argmax(1) == ty[keep]).float().mean().item()
    backbone = {"0." + n: t.contiguous() for n, t in net[0].state_dict().items() if not n.endswith("num_batches_tracked")}
    save_file(backbone, str(HERE / "pytorch_backbone.safetensors"), metadata={"format": "pt", "torch": torch.__version__})
    print(f"torch {torch.__version__}: test accuracy on classes 0-4 {accuracy:.4f}; wrote {len(backbone)} tensors")


if __name__ == "__main__":
    main()
