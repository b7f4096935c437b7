"""Reads write_sample's event file with TensorBoard's own reader (the
tensorboard package's EventAccumulator) and checks every scalar, as f32.
Exits 0 with a message where the package is not installed (CI has no
Python peers; a machine that has it runs the check)."""
import struct
import subprocess
import sys
import tempfile

try:
    from tensorboard.backend.event_processing import event_accumulator
except ImportError:
    print("tensorboard.read_back: skipped: the tensorboard Python package is not installed")
    sys.exit(0)

writer = sys.argv[1]
with tempfile.TemporaryDirectory() as logs:
    subprocess.run([writer, logs], check=True)
    acc = event_accumulator.EventAccumulator(logs, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
    assert sorted(acc.Tags()["scalars"]) == sorted(["train/loss", "train/lr", "test/accuracy"]), acc.Tags()
    expected = {
        "train/loss": [(s, 2.0 / (1 + s)) for s in range(50)],
        "train/lr": [(s, 1e-3 * s) for s in range(50)],
        "test/accuracy": [(s, 0.5 + s / 100.0) for s in range(0, 50, 10)],
    }
    for tag, points in expected.items():
        got = [(e.step, e.value) for e in acc.Scalars(tag)]
        want = [(s, f32(v)) for s, v in points]
        assert got == want, (tag, got[:3], want[:3])
    print("tensorboard.read_back: TensorBoard read all", sum(map(len, expected.values())), "scalars")
