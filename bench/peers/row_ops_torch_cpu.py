"""softmax, log_softmax, layer norm forward and backward, cross-entropy
forward and backward, and a row sum in PyTorch eager on the CPU, with the
sizes, byte counts and JSON lines of bench/host_row_ops.cpp: f32, 2^24
elements as [2^24 / N, N] for N = 1024, 4096, 16384, on every core.

Each op is timed two ways:
  torch      the call a PyTorch program makes (torch.softmax,
             torch.native_layer_norm and native_layer_norm_backward -- what
             autograd runs, saving mean and rstd --, F.cross_entropy,
             autograd's backward of it, x.sum(-1)):
             each call allocates its [rows, N] output, and glibc serves a
             64 MiB block with a fresh mmap, so the time includes its page faults
  torch_out  the same ATen kernels writing into preallocated outputs (out=),
             like tenet, which writes into existing tensors
GB/s counts the inputs read once and the outputs written once, plus gamma
and beta (and their gradients), mean and rstd, labels (4 bytes) and the mask
(1 byte), as tenet's bench does; "copy" (x.copy_ into an existing tensor) is the roofline. Best of 15
runs after 2 warm-ups (the least disturbed by other work), time.perf_counter.

  row_ops_torch_cpu.py                  measure; JSON lines on stdout
  row_ops_torch_cpu.py --compare FILE   per op and N, "tenet vs torch: X.XXx as
                                        fast" from FILE's JSON lines (tenet's
                                        and this script's)
"""
import argparse
import json
import os
import time

TOTAL = 1 << 24
LENGTHS = (1024, 4096, 16384)
TENSOR_BYTES = TOTAL * 4


def best_ms(run, warmups=2, repetitions=15):
    for _ in range(warmups):
        run()
    best = float("inf")
    for _ in range(repetitions):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return 1e3 * best


def ops(torch, n):
    """{op: (bytes, eager call, preallocated call)} at row length n; inputs as host_row_ops.cpp's."""
    f = torch.nn.functional
    aten = torch.ops.aten
    rows = TOTAL // n
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(rows, n, generator=gen)
    gamma = 1 + 0.1 * torch.randn(n, generator=gen)
    beta = torch.randn(n, generator=gen)
    labels = torch.randint(0, n, (rows,), generator=gen)
    valid = torch.rand(rows, generator=gen) < 0.95
    targets = torch.where(valid, labels, torch.full_like(labels, -100))
    dy = torch.randn(rows, n, generator=gen)
    y, log_probs, grad, dx = (torch.empty_like(x) for _ in range(4))
    dgamma, dbeta = torch.empty(n), torch.empty(n)
    mean, rstd = torch.empty(rows, 1), torch.empty(rows, 1)
    row_sum = torch.empty(rows)

    # The saved statistics layer norm's backward reads.
    _, saved_mean, saved_rstd = torch.native_layer_norm(x, [n], gamma, beta, 1e-5)
    all_three = [True, True, True]

    # Autograd's backward of the loss, the graph kept for repeated calls.
    x_grad = x.clone().requires_grad_()
    loss = f.cross_entropy(x_grad, targets, ignore_index=-100)

    def cross_entropy_out():
        torch._log_softmax(x, -1, False, out=log_probs)
        return aten.nll_loss_forward(log_probs, targets, None, 1, -100)  # 1: mean

    # The two kernels autograd runs, into preallocated buffers, from the saved log_probs.
    _, total_weight = cross_entropy_out()
    one = torch.tensor(1.0)

    def cross_entropy_backward_out():
        aten.nll_loss_backward.grad_input(one, log_probs, targets, None, 1, -100, total_weight, grad_input=grad)
        return torch._log_softmax_backward_data(grad, log_probs, -1, torch.float32, out=dx)

    both = 2 * TENSOR_BYTES
    return x, y, {
        "softmax": (both, lambda: torch.softmax(x, -1), lambda: torch._softmax(x, -1, False, out=y)),
        "log_softmax": (both, lambda: torch.log_softmax(x, -1), lambda: torch._log_softmax(x, -1, False, out=y)),
        "layernorm": (
            both + 8 * rows + 8 * n,
            lambda: torch.native_layer_norm(x, [n], gamma, beta, 1e-5),
            lambda: aten.native_layer_norm.out(x, [n], gamma, beta, 1e-5, out0=y, out1=mean, out2=rstd),
        ),
        "layernorm_backward": (
            3 * TENSOR_BYTES + 8 * rows + 12 * n,
            lambda: aten.native_layer_norm_backward(dy, x, [n], saved_mean, saved_rstd, gamma, beta, all_three),
            lambda: aten.native_layer_norm_backward.out(dy, x, [n], saved_mean, saved_rstd, gamma, beta, all_three,
                                                        out0=dx, out1=dgamma, out2=dbeta),
        ),
        "cross_entropy": (
            both + 5 * rows,
            lambda: f.cross_entropy(x, targets, ignore_index=-100),
            cross_entropy_out,
        ),
        "cross_entropy_backward": (
            both + 5 * rows,
            lambda: torch.autograd.grad(loss, x_grad, retain_graph=True),
            cross_entropy_backward_out,
        ),
        "row_sum": (TENSOR_BYTES + 4 * rows, lambda: x.sum(-1), lambda: torch.sum(x, -1, out=row_sum)),
    }


def first(result):
    return result[0] if isinstance(result, (tuple, list)) else result


def measure(torch):
    print(f"== PyTorch {torch.__version__} eager row ops on the CPU ({torch.backends.cpu.get_cpu_capability()}), "
          f"{torch.get_num_threads()} threads, f32, {TOTAL} elements as [2^24 / N, N]")
    table = []
    for n in LENGTHS:
        x, y, timed = ops(torch, n)
        copy_ms = best_ms(lambda: y.copy_(x))
        copy = 2 * TENSOR_BYTES / copy_ms / 1e6
        print(f"copy (N = {n}): {copy:.2f} GB/s")
        for op, (nbytes, eager, out) in timed.items():
            # the preallocated form must compute what the eager call does
            assert torch.allclose(first(eager()), first(out()), rtol=1e-5, atol=1e-6), op
            for framework, run in (("torch", eager), ("torch_out", out)):
                ms = best_ms(run)
                gbps = nbytes / ms / 1e6
                table.append((framework, op, n, ms, gbps, copy))
                print(json.dumps({"framework": framework, "op": op, "row_length": n, "ms": round(ms, 4),
                                  "gbps": round(gbps, 2)}), flush=True)
    print(f"\n{'framework':<10} {'op':<24} {'N':>6} {'ms':>10} {'GB/s':>10} {'of copy':>10}")
    for framework, op, n, ms, gbps, copy in table:
        print(f"{framework:<10} {op:<24} {n:6d} {ms:10.3f} {gbps:10.2f} {100 * gbps / copy:9.0f}%")


def compare(path):
    """tenet's time against each torch variant's, per op and row length."""
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    ms = {(r["framework"], r["op"], r["row_length"]): r["ms"] for r in rows}
    print(f"{'op':<24} {'N':>6} {'tenet ms':>10} {'torch ms':>10} {'torch_out ms':>13}  tenet vs torch (torch_out)")
    for (framework, op, n), tenet in ms.items():
        if framework != "tenet" or (peer := ms.get(("torch", op, n))) is None:
            continue
        out = ms.get(("torch_out", op, n), float("nan"))
        print(f"{op:<24} {n:6d} {tenet:10.3f} {peer:10.3f} {out:13.3f}  "
              f"tenet vs torch: {peer / tenet:5.2f}x as fast ({out / tenet:5.2f}x)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", metavar="FILE", help="JSON lines of tenet and torch: print the ratios")
    args = parser.parse_args()
    if args.compare:
        compare(args.compare)
        return
    import torch

    torch.set_num_threads(os.cpu_count())
    measure(torch)


if __name__ == "__main__":
    main()
