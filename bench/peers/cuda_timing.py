"""Timing CUDA work in the PyTorch peers as tenet's device benchmarks time
theirs (bench/support/device_timing.hpp): three calls first (allocator,
kernel selection, clocks), then the median over 20 timed batches of `calls`
calls each, with CUDA events."""
import statistics

TIMED_BATCHES = 20


def median_seconds(torch, call, calls):
    for _ in range(3):
        call()
    seconds = []
    for _ in range(TIMED_BATCHES):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            call()
        stop.record()
        stop.synchronize()
        seconds.append(start.elapsed_time(stop) / 1e3 / calls)
    return statistics.median(seconds)
