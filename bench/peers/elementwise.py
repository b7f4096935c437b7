"""The 30-op chain of bench/chain30.hpp in NumPy and jax.jit (CPU), float32,
16M elements, timed with time.perf_counter (median of repeated runs), printed
in the table format of bench/support/ratio_reporter.hpp.

GB/s counts the 3 inputs read once and the output written once, as the C++
benchmarks do; "copy" (np.copyto of the same bytes) is the roofline. With
--probes LOG (host_elementwise's output) the transcription is checked against
the float reference values of chain30.hpp that it printed.
"""
import argparse
import re
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

N = 1 << 24
CHAIN_BYTES = 4 * N * 4  # 3 inputs + 1 output, f32


def chain30(a, b, c, xp):
    """bench/chain30.hpp, line for line (xp: numpy or jax.numpy)."""
    t1 = a * 1.5
    t2 = t1 + 0.25
    t3 = t2 * b
    t4 = t3 - c
    t5 = xp.abs(t4)
    t6 = xp.minimum(t5, 1.5)
    t7 = t6 + 0.5
    t8 = 1.0 / t7
    t9 = t8 * 0.5
    t10 = 0.75 - t9
    t11 = xp.exp(t10)
    t12 = t11 * 0.25
    t13 = t12 - 0.5
    t14 = xp.tanh(t13)
    t15 = t14 * 2.0
    t16 = t15 + 0.125
    t17 = xp.abs(t16)
    t18 = xp.minimum(t17, 1.5)
    t19 = xp.maximum(t18, 0.0625)
    t20 = t19 * 3.0
    t21 = t20 - 1.0
    t22 = xp.abs(t21)
    t23 = t22 + 0.5
    t24 = 1.0 / t23
    t25 = t24 * 0.75
    t26 = t25 - 0.25
    t27 = xp.maximum(t26, -0.5)
    t28 = xp.minimum(t27, 2.0)
    t29 = t28 * 4.0
    return t29 + 1.0


def numpy_chain(a, b, c):
    return chain30(a, b, c, np)


@jax.jit
def jax_chain(a, b, c):
    return chain30(a, b, c, jnp)


def median_seconds(run, min_runs=7, min_seconds=2.0):
    """Median wall time of run() after one warm-up call (JIT compile, page faults)."""
    run()
    times = []
    started = time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - started < min_seconds:
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def check_probes(log, functions):
    """Runs each function on the probe inputs host_elementwise printed."""
    pattern = re.compile(r"chain30 probe: f\(([^,]+), ([^,]+), ([^)]+)\) = (\S+)")
    probes = [tuple(float(x) for x in m.groups()) for m in map(pattern.search, open(log)) if m]
    if not probes:
        print(f"probe check: skipped: no 'chain30 probe' lines in {log}")
        return
    columns = [np.array(column, dtype=np.float32) for column in zip(*probes)]
    for name, f in functions.items():
        got = np.asarray(f(*columns[:3]), dtype=np.float64)
        worst = float(np.max(np.abs(got - columns[3])))
        verdict = "matches" if worst <= 1e-5 else "WARNING: does NOT match"
        print(f"probe check: {name} {verdict} chain30.hpp's float reference (max |diff| {worst:.3g} over {len(probes)} probes)")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--probes", help="host_elementwise's output, with its 'chain30 probe' lines")
    args = parser.parse_args()

    jax.config.update("jax_platforms", "cpu")
    rng = np.random.default_rng(1)
    a, b, c = (rng.random(N, dtype=np.float32) for _ in range(3))
    if args.probes:
        check_probes(args.probes, {"numpy": numpy_chain, "jax.jit": jax_chain})

    ja, jb, jc = (jax.device_put(x) for x in (a, b, c))
    source, target = np.ones(2 * N, dtype=np.float32), np.empty(2 * N, dtype=np.float32)
    seconds = {
        "copy": median_seconds(lambda: np.copyto(target, source)),
        "numpy_f32": median_seconds(lambda: numpy_chain(a, b, c)),
        "jax_jit_f32": median_seconds(lambda: jax_chain(ja, jb, jc).block_until_ready()),
    }
    assert numpy_chain(a, b, c).dtype == np.float32 and jax_chain(ja, jb, jc).dtype == jnp.float32

    print(f"numpy {np.__version__}, jax {jax.__version__} on {jax.devices()[0].platform}; {N} elements")
    print(f"\n{'benchmark':<44} {'GB/s':>10} {'of copy BW':>12}")
    for name, s in seconds.items():
        print(f"{name:<44} {CHAIN_BYTES / s / 1e9:10.2f} {100 * seconds['copy'] / s:11.0f}%")
    print()
    print(f"{'jax_jit_f32':<30} vs {'numpy_f32':<30} {seconds['numpy_f32'] / seconds['jax_jit_f32']:6.2f}x as fast")


if __name__ == "__main__":
    main()
