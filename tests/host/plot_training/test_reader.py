"""Checks scripts/plot_training.py's readers without matplotlib:

    python3 tests/host/plot_training/test_reader.py scripts/plot_training.py

read_profile and profile_bars on a profile written here by hand (ms per
step, the top-N bars and their "other" sum, the % of peak notes); that a
truncated profile and one without "sections" or "steps" end with a
SystemExit naming the file; scalars() on a TensorBoard event file framed
here (TFRecord with this file's own CRC32C, not the script's), and that a
corrupted CRC is rejected; and `--check` on all of it, run with a
matplotlib that fails when imported. Exit status 0 when all hold."""
import importlib.util
import json
import os
import struct
import subprocess
import sys
import tempfile

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def equal(got, want, what):
    check(got == want, f"{what}: got {got!r}, want {want!r}")


def load(path):
    spec = importlib.util.spec_from_file_location("plot_training", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def exit_message(function, *args):
    """The message of the SystemExit function(*args) raises, or None; any
    other exception is a failure (and its text the message)."""
    try:
        function(*args)
    except SystemExit as e:
        return str(e.code)
    except Exception as e:  # noqa: BLE001 (reported, not raised)
        failures.append(f"{function.__name__}{args}: raised {type(e).__name__}: {e}, not SystemExit")
        return f"{type(e).__name__}: {e}"
    return None


# --- a profile, as layer_profile::json() writes one ----------------------------

def section(name, pass_, kind, ms, fraction, bound):
    return {"name": name, "pass": pass_, "kind": kind, "shape": "", "calls": 4, "ms": ms,
            "percent_of_step": 0, "flops": 0, "bytes": 0, "gflops_per_second": 0, "gbytes_per_second": 0,
            "fraction_of_peak": fraction, "bound": bound}


PROFILE = {
    "steps": 4, "warmup_steps": 1, "timing": "host wall clock", "captured_steps": 0,
    "step_ms": 30.0, "data_ms": 0.5, "unattributed_ms": 1.0,
    "peak": {"flops_per_second": 1e11, "bytes_per_second": 1e10, "source": "test"},
    "sections": [  # (longest first, as written)
        section("1 Conv2d", "backward", "layer", 12.0, 0.87, "compute"),
        section("1 Conv2d", "forward", "layer", 8.0, 0.62, "compute"),
        section("0 Linear", "forward", "layer", 4.0, 0.05, "memory"),
        section("0 Linear", "backward", "layer", 2.0, 0.3, "compute"),
        section("optimizer", "", "optimizer", 2.0, 1.25, "memory"),
        section("2 ReLU", "forward", "layer", 1.5, 0.25, "memory"),
        section("2 ReLU", "backward", "layer", 1.0, 0.5, "memory"),
        section("loss", "forward", "loss", 0.5, 0.01, "memory"),
        section("data", "", "data", 0.5, -1, ""),
        section("loss", "backward", "loss", 0.25, -1, ""),
    ],
}

# In ms per step (ms / 4 steps: exact in binary, so compared exactly).
BARS = [
    ("1 Conv2d", 2.0, 3.0, 0.0, "fwd 62% / bwd 87% of compute peak"),
    ("0 Linear", 1.0, 0.5, 0.0, "fwd 5.0% of memory peak / bwd 30% of compute peak"),
    ("2 ReLU", 0.375, 0.25, 0.0, "fwd 25% / bwd 50% of memory peak"),
    ("optimizer", 0.0, 0.0, 0.5, "125% of memory peak"),
    ("loss", 0.0, 0.0, 0.1875, "fwd 1.0% of memory peak"),
    ("data", 0.0, 0.0, 0.125, ""),
    ("unattributed", 0.0, 0.0, 0.25, ""),
]


def check_profiles(pt, tmp):
    path = os.path.join(tmp, "run.profile.json")
    with open(path, "w") as f:
        json.dump(PROFILE, f)
    profile = pt.read_profile(path)
    equal(profile["steps"], 4, "read_profile: steps")
    equal(len(profile["sections"]), 10, "read_profile: sections")
    equal(profile["sections"][0]["ms"], 12.0, "read_profile: the first section's ms")
    equal(pt.profile_bars(profile), BARS, "profile_bars(top=25)")
    equal(pt.profile_bars(profile, top=3), BARS[:3] + [("other (3 more)", 0.0, 0.0, 0.8125, ""), BARS[-1]],
          "profile_bars(top=3): non-layer time summed in other")
    equal(pt.profile_bars(profile, top=6), BARS, "profile_bars(top=6): as many bars as rows, no other")
    equal(pt.profile_bars(profile, top=5), BARS[:5] + [("other (1 more)", 0.0, 0.0, 0.125, ""), BARS[-1]],
          "profile_bars(top=5): one row over")
    equal(pt.profile_bars(profile, top=2), BARS[:2] + [("other (4 more)", 0.375, 0.25, 0.8125, ""), BARS[-1]],
          "profile_bars(top=2): a layer's passes summed in other's columns")
    equal(pt.profile_summary(profile), "profile of 4 steps, 10 sections, step 7.5 ms", "profile_summary")

    # Without unattributed time (and without the optional fields): no such bar.
    bare = {"steps": 2, "sections": [{"name": "0 Linear", "pass": "forward", "kind": "layer", "ms": 3.0}]}
    bare_path = os.path.join(tmp, "bare.json")
    with open(bare_path, "w") as f:
        json.dump(bare, f)
    equal(pt.profile_bars(pt.read_profile(bare_path)), [("0 Linear", 1.5, 0.0, 0.0, "")], "profile_bars: a bare profile")

    # Not profiles: each a SystemExit naming the file.
    text = json.dumps(PROFILE)
    bad = {
        "truncated.json": text[:len(text) // 2],
        "no_sections.json": json.dumps({k: v for k, v in PROFILE.items() if k != "sections"}),
        "no_steps.json": json.dumps({k: v for k, v in PROFILE.items() if k != "steps"}),
        "zero_steps.json": json.dumps(dict(PROFILE, steps=0)),
        "list.json": "[1, 2]",
        "section_without_ms.json": json.dumps(dict(PROFILE, sections=[{"name": "x", "pass": "forward"}])),
    }
    for name, content in bad.items():
        bad_path = os.path.join(tmp, name)
        with open(bad_path, "w") as f:
            f.write(content)
        message = exit_message(pt.read_profile, bad_path)
        check(message is not None, f"read_profile({name}): no SystemExit")
        if message is not None:
            check(message.startswith(f"plot_training.py: {bad_path}: "), f"read_profile({name}): {message!r}")
    message = exit_message(pt.read_profile, os.path.join(tmp, "run.profile.json"))
    check(message is None, f"read_profile: a good profile exits: {message!r}")
    check("sections" in (exit_message(pt.read_profile, os.path.join(tmp, "no_sections.json")) or ""),
          'read_profile: the message for no "sections" does not say so')
    check("not valid JSON" in (exit_message(pt.read_profile, os.path.join(tmp, "truncated.json")) or ""),
          "read_profile: the message for a truncated file does not say it is not JSON")
    missing = os.path.join(tmp, "missing.json")
    check((exit_message(pt.read_profile, missing) or "").startswith(f"plot_training.py: {missing}: "),
          "read_profile: a missing file")
    return path


# --- a TensorBoard event file, framed here -------------------------------------

def crc32c(data):
    """CRC-32C (Castagnoli), bit by bit: independent of the script's table."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(body):
    length = struct.pack("<Q", len(body))
    return length + struct.pack("<I", masked(length)) + body + struct.pack("<I", masked(body))


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number, wire):
    return varint(number << 3 | wire)


def delimited(number, payload):
    return key(number, 2) + varint(len(payload)) + payload


def event(wall_time, step=None, values=(), file_version=None):
    """Event: wall_time (1, double), step (2, int64), file_version (3),
    summary (5) -> value (1) -> tag (1), simple_value (2, float)."""
    out = key(1, 1) + struct.pack("<d", wall_time)
    if step is not None:
        out += key(2, 0) + varint(step)
    if file_version is not None:
        out += delimited(3, file_version.encode())
    if values:
        summary = b"".join(delimited(1, delimited(1, tag.encode()) + key(2, 5) + struct.pack("<f", v))
                           for tag, v in values)
        out += delimited(5, summary)
    return out


EVENTS = [
    event(1.5e9, file_version="brain.Event:2"),
    event(1.5e9 + 1, 0, [("train/loss", 2.25), ("train/lr", 0.5)]),
    event(1.5e9 + 2, 1, [("train/loss", 1.75)]),
    event(1.5e9 + 3, 300, [("train/loss", 0.5), ("epoch/test_accuracy", 0.875)]),
    event(1.5e9 + 4, 1 << 40, [("train/lr", 0.125)]),
]
SCALARS = {
    "train/loss": [(0, 2.25), (1, 1.75), (300, 0.5)],
    "train/lr": [(0, 0.5), (1 << 40, 0.125)],
    "epoch/test_accuracy": [(300, 0.875)],
}


def check_events(pt, tmp):
    run = os.path.join(tmp, "runs", "mlp")
    os.makedirs(run)
    data = b"".join(record(e) for e in EVENTS)
    path = os.path.join(run, "events.out.tfevents.1.test")
    with open(path, "wb") as f:
        f.write(data)
    equal(pt.scalars(path), SCALARS, "scalars()")
    equal(pt.runs_of([os.path.join(tmp, "runs")]), [("mlp", SCALARS)], "runs_of(a run directory)")

    # A writer that stopped mid-record: the records before it.
    cut = os.path.join(tmp, "cut.tfevents")
    with open(cut, "wb") as f:
        f.write(data[:-3])
    equal(pt.scalars(cut), {"train/loss": SCALARS["train/loss"], "train/lr": SCALARS["train/lr"][:1],
                            "epoch/test_accuracy": SCALARS["epoch/test_accuracy"]}, "scalars(a truncated file)")

    # One CRC byte wrong (the third record's body CRC; the first's length CRC): rejected.
    third = sum(len(record(e)) for e in EVENTS[:2])
    body_crc = third + len(record(EVENTS[2])) - 4
    for name, at in (("body_crc.tfevents", body_crc), ("length_crc.tfevents", 8)):
        corrupt = bytearray(data)
        corrupt[at] ^= 0x01
        bad = os.path.join(tmp, name)
        with open(bad, "wb") as f:
            f.write(corrupt)
        try:
            pt.scalars(bad)
            failures.append(f"scalars({name}): a wrong CRC was accepted")
        except ValueError as e:
            check(str(e).startswith(bad + ": ") and "CRC" in str(e), f"scalars({name}): {e}")
    return path


def check_cli(script, tmp, profile, events):
    """--check prints a line per input and never imports matplotlib."""
    fake = os.path.join(tmp, "fake", "matplotlib")
    os.makedirs(fake)
    with open(os.path.join(fake, "__init__.py"), "w") as f:
        f.write('import sys\nsys.exit("test_reader: matplotlib was imported")\n')
    env = dict(os.environ, PYTHONPATH=os.path.dirname(fake))
    runs = os.path.join(tmp, "runs")

    def run(*args):
        return subprocess.run([sys.executable, script, *args], capture_output=True, text=True, env=env)

    done = run("--check", profile, events, runs)
    equal(done.returncode, 0, f"--check: exit status (stderr {done.stderr!r})")
    equal(done.stdout.splitlines(), [
        f"{profile}: profile of 4 steps, 10 sections, step 7.5 ms",
        f"{events}: 3 scalar tags, 6 points",
        f"{runs}: 1 run, 3 scalar tags, 6 points",
    ], "--check: its lines")
    for name in ("truncated.json", "no_sections.json", "body_crc.tfevents"):
        bad = os.path.join(tmp, name)
        done = run("--check", profile, bad)
        check(done.returncode != 0, f"--check {name}: exit status 0")
        check(done.stderr.startswith(f"plot_training.py: {bad}: "), f"--check {name}: stderr {done.stderr!r}")
    # Drawing does import it (the fake then ends the script): --check is what keeps it out.
    done = run(profile, "--out", os.path.join(tmp, "plots"))
    check("matplotlib was imported" in done.stderr, f"drawing did not import matplotlib: {done.stderr!r}")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: test_reader.py path/to/scripts/plot_training.py")
    script = os.path.abspath(sys.argv[1])
    pt = load(script)
    with tempfile.TemporaryDirectory() as tmp:
        profile = check_profiles(pt, tmp)
        events = check_events(pt, tmp)
        check("matplotlib" not in sys.modules, "reading imported matplotlib")
        check_cli(script, tmp, profile, events)
    if failures:
        for failure in failures:
            print("plot_training.test_reader: FAILED: " + failure, file=sys.stderr)
        sys.exit(1)
    print("plot_training.test_reader: all checks passed")


if __name__ == "__main__":
    main()
