"""Multi-head self-attention forward + backward in PyTorch on CUDA, with the
sizes, work and output lines of bench/device_attention.cu: width 768, 12
heads of 64, batch 8, sequences of 256 and 1024, plain and causal, bf16 and
fp32.

The layer is what nn.MultiheadAttention computes, written out so the core is
F.scaled_dot_product_attention (flash or memory-efficient kernels, PyTorch's
choice): F.linear in-projection [3D, D], split into heads,
scaled_dot_product_attention(is_causal=...), merge, F.linear out-projection.
One call is the forward and torch.autograd.grad of the parameters (the input
needs no gradient), so nothing accumulates between calls. bf16 runs keep
the parameters in bf16 (tenet's bf16_mixed keeps bf16 copies for its GEMMs).
Timed with CUDA events: a warm-up, then the median of 20 timed batches of 5
calls. TFLOP/s counts the dense work (projections 8 B T D^2, attention
4 B T^2 D forward, twice that backward), causal rows included. Prints
"skipped: ..." and exits 0 without torch or a GPU.
"""
import sys

from cuda_timing import median_seconds

CALLS_PER_BATCH = 5
CONFIGS = [
    ("bf16_mixed", 8, 256, 768, 12, False),
    ("bf16_mixed", 8, 256, 768, 12, True),
    ("bf16_mixed", 8, 1024, 768, 12, False),
    ("bf16_mixed", 8, 1024, 768, 12, True),
    ("fp32", 8, 256, 768, 12, False),
    ("fp32", 8, 256, 768, 12, True),
]


def measure(torch, policy, b, t, d, h, causal):
    f = torch.nn.functional
    dtype = torch.bfloat16 if policy == "bf16_mixed" else torch.float32
    gen = torch.Generator(device="cuda").manual_seed(1)

    def param(*shape, scale):
        return (scale * (2 * torch.rand(*shape, device="cuda", generator=gen) - 1)).to(dtype).requires_grad_()

    bound = d ** -0.5  # nn.Linear's U(-1/sqrt(in), 1/sqrt(in))
    w_in, b_in = param(3 * d, d, scale=bound), param(3 * d, scale=bound)
    w_out, b_out = param(d, d, scale=bound), param(d, scale=bound)
    params = (w_in, b_in, w_out, b_out)
    x = torch.randn(b, t, d, device="cuda", generator=gen).to(dtype)
    dy = torch.randn(b, t, d, device="cuda", generator=gen).to(dtype)

    def call():
        qkv = f.linear(x, w_in, b_in).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        o = f.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=causal)
        y = f.linear(o.transpose(1, 2).reshape(b, t, d), w_out, b_out)
        torch.autograd.grad(y, params, dy)

    seconds = median_seconds(torch, call, CALLS_PER_BATCH)
    flops = 3.0 * (8.0 * b * t * d * d + 4.0 * b * t * t * d)
    print(
        f"attention {policy:<10} B {b} T {t:<5} D {d} H {h:<3} {'causal' if causal else 'full':<7} "
        f"torch {seconds * 1e3:9.3f} ms {flops / seconds / 1e12:8.1f} TFLOP/s"
    )


def main():
    try:
        import torch
    except ImportError:
        print("skipped: PyTorch attention peer (torch is not installed)")
        return 0
    if not torch.cuda.is_available():
        print("skipped: PyTorch attention peer (no CUDA device for torch)")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 GEMMs in fp32, as tenet's fp32 policy
    print(f"== PyTorch {torch.__version__} attention (F.scaled_dot_product_attention); {torch.cuda.get_device_name()}")
    for config in CONFIGS:
        measure(torch, *config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
