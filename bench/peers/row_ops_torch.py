"""softmax, layer norm forward and cross-entropy forward in PyTorch eager on
CUDA, with the sizes, byte counts and output lines of bench/device_row_ops.cu:
f32 and bf16, rows 4096 .. 65536 x row lengths 128 .. 4096.

GB/s counts the [rows, N] input read once and the [rows, N] output written
once (plus mean and rstd for layer norm; labels and the padding mask for
cross-entropy), against a device-to-device copy of the [rows, N] tensor.
The ops are what PyTorch's autograd runs for the forward: torch.softmax,
torch.native_layer_norm (returns mean and rstd) and
torch.nn.functional.cross_entropy (log_softmax + nll_loss; padding rows as
ignore_index). Timed with CUDA events: a warm-up, then the median of 20
timed batches. Prints "skipped: ..." and exits 0 without torch or a GPU.
"""
import sys

from cuda_timing import median_seconds

BATCH_BYTES = 1 << 28  # a timed batch moves at least this many bytes
SIZES = [(4096, 128), (65536, 128), (4096, 1024), (65536, 1024), (4096, 4096), (16384, 4096)]


def measure(torch, dtype, type_name, rows, n):
    f = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(rows, n, device="cuda", generator=gen).to(dtype)
    gamma = (1 + 0.1 * torch.randn(n, device="cuda", generator=gen)).to(dtype)
    beta = torch.randn(n, device="cuda", generator=gen).to(dtype)
    labels = torch.randint(0, n, (rows,), device="cuda", generator=gen)
    valid = torch.rand(rows, device="cuda", generator=gen) < 0.95
    targets = torch.where(valid, labels, torch.full_like(labels, -100))
    y = torch.empty_like(x)

    tensor_bytes = x.numel() * x.element_size()
    batch = max(1, int(BATCH_BYTES / (2 * tensor_bytes)))

    def gbs(nbytes, launch):
        return nbytes / median_seconds(torch, launch, batch) / 1e9

    copy = gbs(2 * tensor_bytes, lambda: y.copy_(x))
    results = [
        ("softmax", gbs(2 * tensor_bytes, lambda: torch.softmax(x, -1))),
        ("layernorm", gbs(2 * tensor_bytes + 8 * rows, lambda: torch.native_layer_norm(x, [n], gamma, beta, 1e-5))),
        ("cross_entropy", gbs(2 * tensor_bytes + 5 * rows, lambda: f.cross_entropy(x, targets, ignore_index=-100))),
    ]
    for op, rate in results:
        print(f"{op:<13} {type_name:<4} {rows:6d} x {n:<5d} torch {rate:8.1f} GB/s   copy {copy:8.1f} GB/s   "
              f"{100 * rate / copy:5.1f}% of copy")
    return [(op, type_name, rows, n, rate, copy) for op, rate in results]


def main():
    try:
        import torch
    except ImportError:
        print("skipped: torch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 0
    print(f"== PyTorch {torch.__version__} eager row ops; {torch.cuda.get_device_name()}")
    table = []
    for type_name, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        for rows, n in SIZES:
            table += measure(torch, dtype, type_name, rows, n)
    print(f"\n{'op':<13} {'type':<4} {'rows x N':>14} {'GB/s':>10} {'copy GB/s':>10} {'% of copy':>10}")
    for op, type_name, rows, n, rate, copy in table:
        print(f"{op:<13} {type_name:<4} {rows:6d} x {n:<5d} {rate:10.1f} {copy:10.1f} {100 * rate / copy:9.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
