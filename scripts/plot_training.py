#!/usr/bin/env python3
"""Plots of training runs from tenet's TensorBoard event files
(fashion_mnist --log-dir, char_lm --log-dir, profile::tensorboard_writer)
and of layer profiles (fashion_mnist / char_lm --profile-json):

    python3 scripts/plot_training.py runs [more runs, event files or profile.json] [--out plots]
    python3 scripts/plot_training.py runs profile.json --check

Each run directory (or event file) is one curve per plot:
    loss.png       train/loss against step (and validation/loss where logged)
    accuracy.png   epoch/test_accuracy (solid) and epoch/train_accuracy (dashed)
    lr.png         the learning-rate schedule (train/lr)
    throughput.png train/samples_per_second
A plot with no data for any run is not drawn. The event files are read here
(TFRecord framing with its CRCs checked, the few Event fields tenet writes):
no TensorBoard needed.

A path ending in .json is a layer profile (layer_profile::json(): its
"steps" and "sections"); each one is drawn as
    profile.png    (profile.<file stem>.png when several are given) one
                   horizontal bar per layer, in ms per step (the section's
                   ms over the profile's steps): forward and backward stacked
                   and coloured by pass; the loss, optimizer, data wait and
                   collectives as bars of their own in grey; the top 25 rows
                   by time, the rest summed in one "other" bar, then the step
                   time outside every section ("unattributed"). A bar is
                   annotated with its time and, where the peak is known, the
                   fraction of the roofline bound it reached ("fwd 48% / bwd
                   87% of compute peak").

--check reads every input (CRCs and JSON checked as for drawing), prints one
line about each ("runs/a: 12 scalar tags, 340 points", "p.json: profile of 20
steps, 22 sections, step 111.6 ms") and draws nothing. Unreadable input ends
the script with "plot_training.py: PATH: what is wrong" (exit status 1).

matplotlib is needed only to draw: it comes from a venv this script makes
(build/plot-venv) when the running Python lacks it.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ensure_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    venv = os.path.join(ROOT, "build", "plot-venv")
    python = os.path.join(venv, "bin", "python")
    if os.environ.get("TENET_PLOT_VENV") == python:
        sys.exit("plot_training.py: matplotlib did not install into " + venv)
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "matplotlib"], check=True)
    os.environ["TENET_PLOT_VENV"] = python
    os.execv(python, [python] + sys.argv)


# --- TFRecord and the Event protobuf -----------------------------------------

def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc32c_table()


def masked_crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    """The records of a TFRecord file; a truncated last record ends it."""
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        if length_crc != masked_crc32c(data[at:at + 8]):
            raise ValueError(f"{path}: offset {at}: the length's CRC does not match")
        end = at + 12 + length
        if end + 4 > len(data):
            break  # (a writer stopped mid-record)
        body = data[at + 12:end]
        if struct.unpack_from("<I", data, end)[0] != masked_crc32c(body):
            raise ValueError(f"{path}: offset {at}: the record's CRC does not match")
        yield body
        at = end + 4


def _varint(buf, at):
    value = shift = 0
    while True:
        b = buf[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, at


def fields(buf):
    """(field number, wire type, value) of a protobuf message."""
    at = 0
    while at < len(buf):
        key, at = _varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(buf, at)
        elif wire == 1:
            value, at = buf[at:at + 8], at + 8
        elif wire == 2:
            length, at = _varint(buf, at)
            value, at = buf[at:at + length], at + length
        elif wire == 5:
            value, at = buf[at:at + 4], at + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value


def scalars(path):
    """{tag: [(step, value)]} of an event file."""
    out = {}
    for record in records(path):
        step, values = 0, []
        for number, _, value in fields(record):
            if number == 2:  # step (int64)
                step = value - (1 << 64) if value >= 1 << 63 else value
            elif number == 5:  # summary
                for n, _, v in fields(value):
                    if n != 1:
                        continue
                    tag, simple = None, None
                    for vn, wire, vv in fields(v):
                        if vn == 1:
                            tag = vv.decode()
                        elif vn == 2 and wire == 5:
                            simple = struct.unpack("<f", vv)[0]
                    if tag is not None and simple is not None:
                        values.append((tag, simple))
        for tag, value in values:
            out.setdefault(tag, []).append((step, value))
    return out


def runs_of(paths):
    """(run name, {tag: [(step, value)]}) for each run directory or event file."""
    runs = []
    for path in paths:
        if os.path.isfile(path):
            runs.append((os.path.basename(os.path.dirname(os.path.abspath(path))), scalars(path)))
            continue
        found = False
        for directory, _, files in sorted(os.walk(path)):
            merged = {}
            for name in sorted(files):
                if "tfevents" in name:
                    for tag, points in scalars(os.path.join(directory, name)).items():
                        merged.setdefault(tag, []).extend(points)
            if merged:
                found = True
                name = os.path.relpath(directory, path)
                runs.append((os.path.basename(path.rstrip("/")) if name == "." else name, merged))
        if not found:
            sys.exit(f"plot_training.py: no event files under {path}")
    return runs


# --- layer profiles (layer_profile::json()) ------------------------------------

def _fail(path, what):
    sys.exit(f"plot_training.py: {path}: {what}")


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_profile(path):
    """The profile a --profile-json file holds, as json.load gives it, its
    sections with "pass", "kind", "fraction_of_peak" and "bound" filled in
    where missing. Not a profile (unreadable, not JSON, no "steps" or
    "sections", a section without "name" or "ms"): SystemExit naming path."""
    try:
        with open(path, encoding="utf-8") as f:
            profile = json.load(f)
    except OSError as e:
        _fail(path, e.strerror or str(e))
    except ValueError as e:  # (json.JSONDecodeError, UnicodeDecodeError)
        _fail(path, f"not valid JSON ({e})")
    if not isinstance(profile, dict):
        _fail(path, "not a layer profile: the top level is not a JSON object")
    for key in ("steps", "sections"):
        if key not in profile:
            _fail(path, f'not a layer profile: no "{key}" (write one with --profile-json)')
    steps = profile["steps"]
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        _fail(path, f'"steps" is {steps!r}, not a count of steps')
    if steps == 0:
        _fail(path, '"steps" is 0: no step was measured (were they all warm-up?)')
    if not isinstance(profile["sections"], list):
        _fail(path, '"sections" is not a list')
    for key in ("step_ms", "data_ms", "unattributed_ms"):
        if key in profile and not _is_number(profile[key]):
            _fail(path, f'"{key}" is {profile[key]!r}, not a number')
    for index, section in enumerate(profile["sections"]):
        if not isinstance(section, dict):
            _fail(path, f"section {index} is not a JSON object")
        if not isinstance(section.get("name"), str):
            _fail(path, f'section {index} has no "name"')
        if not _is_number(section.get("ms")):
            _fail(path, f'section {index} ({section["name"]}) has no "ms" number')
        section.setdefault("pass", "")
        section.setdefault("kind", "")
        section.setdefault("fraction_of_peak", -1)
        section.setdefault("bound", "")
        if not _is_number(section["fraction_of_peak"]):
            _fail(path, f'section {index} ({section["name"]}): "fraction_of_peak" is not a number')
    return profile


_PASS_SHORT = {"forward": "fwd", "backward": "bwd"}


def _percent(fraction):
    p = 100 * fraction
    return f"{p:.0f}%" if p >= 9.5 else f"{p:.1f}%"


def _peak_note(sections):
    """ "62% of compute peak", or per pass: "fwd 48% / bwd 87% of compute
    peak" (one bound), "fwd 7.2% of memory peak / bwd 20% of compute peak"
    (two); "" where no section's fraction is known."""
    order = {"forward": 0, "backward": 1}
    known = sorted((s for s in sections if s["fraction_of_peak"] >= 0), key=lambda s: order.get(s["pass"], 2))
    if not known:
        return ""
    prefix = len(sections) > 1

    def part(s):
        short = _PASS_SHORT.get(s["pass"], s["pass"])
        return (f"{short} " if prefix and short else "") + _percent(s["fraction_of_peak"])

    def of(bound):
        return f"of {bound} peak" if bound else "of peak"

    bounds = {s["bound"] for s in known}
    if len(bounds) == 1:
        return " / ".join(part(s) for s in known) + " " + of(known[0]["bound"])
    return " / ".join(part(s) + " " + of(s["bound"]) for s in known)


def profile_bars(profile, top=25):
    """The bars of profile.png, longest first:
    [(label, forward_ms_per_step, backward_ms_per_step, other_ms_per_step, note)].
    One bar per section name: a layer's forward and backward passes in their
    columns; loss, optimizer, data, collective sections (any kind but
    "layer") in the other column. At most `top` of them; the rest summed in
    one "other (N more)" bar; then "unattributed" where the profile has
    unattributed time. note: the fraction of peak (_peak_note)."""
    steps = profile["steps"]
    groups = {}  # (name, is a layer) -> [forward, backward, other, sections]
    for section in profile["sections"]:
        layer = section["kind"] == "layer"
        group = groups.setdefault((section["name"], layer), [0.0, 0.0, 0.0, []])
        column = {"forward": 0, "backward": 1}.get(section["pass"], 2) if layer else 2
        group[column] += section["ms"] / steps
        group[3].append(section)
    rows = [(name, f, b, o, _peak_note(sections)) for (name, _), (f, b, o, sections) in groups.items()]
    rows.sort(key=lambda r: r[1] + r[2] + r[3], reverse=True)  # (stable: ties keep the file's order)
    if len(rows) > top:
        rest = rows[top:]
        rows = rows[:top] + [(f"other ({len(rest)} more)", sum(r[1] for r in rest), sum(r[2] for r in rest),
                              sum(r[3] for r in rest), "")]
    unattributed = profile.get("unattributed_ms", 0)
    if unattributed > 0:
        rows.append(("unattributed", 0.0, 0.0, unattributed / steps, ""))
    return rows


def _ms(value):
    return f"{value:.4g}"


def profile_summary(profile):
    """"profile of 20 steps, 22 sections, step 111.6 ms" """
    text = f"profile of {profile['steps']} steps, {len(profile['sections'])} sections"
    if "step_ms" in profile:
        text += f", step {_ms(profile['step_ms'] / profile['steps'])} ms"
    return text


# --- plots ---------------------------------------------------------------------

def plot(runs, out, filename, title, ylabel, series, log_y=False):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    drawn = 0
    for index, (run, tags) in enumerate(runs):
        color = f"C{index % 10}"
        for tag, style, label in series:
            points = sorted(tags.get(tag, []))
            if not points:
                continue
            ax.plot([s for s, _ in points], [v for _, v in points], style, color=color,
                    label=f"{run} {label}".strip(), marker="o" if len(points) < 30 else None, markersize=3)
            drawn += 1
    if not drawn:
        plt.close(fig)
        return None
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    if log_y:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out, filename)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_profile(profile, out, filename, name, top=25):
    """profile.png: the bars of profile_bars, annotated, longest at the top."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    rows = profile_bars(profile, top)
    if not rows:
        return None
    steps = profile["steps"]
    unattributed = rows[-1][0] == "unattributed" and profile.get("unattributed_ms", 0) > 0
    fig, ax = plt.subplots(figsize=(9, 1.7 + 0.27 * len(rows)))
    y = list(range(len(rows)))
    forward = [r[1] for r in rows]
    backward = [r[2] for r in rows]
    other = [r[3] for r in rows]
    ax.barh(y, forward, height=0.7, color="C0", label="forward")
    ax.barh(y, backward, height=0.7, left=forward, color="C1", label="backward")
    kinds = []  # (of the grey bars, for the legend)
    for section in profile["sections"]:
        kind = section["kind"] or section["name"]
        if section["kind"] != "layer" and kind not in kinds:
            kinds.append(kind)
    grey = ["0.78" if unattributed and i == len(rows) - 1 else "0.5" for i in y]
    ax.barh(y, other, height=0.7, left=[f + b for f, b in zip(forward, backward)], color=grey)
    # (the legend: only what is drawn)
    handles = []
    if any(forward):
        handles.append(Patch(color="C0", label="forward"))
    if any(backward):
        handles.append(Patch(color="C1", label="backward"))
    if any(o for o, g in zip(other, grey) if g == "0.5"):
        handles.append(Patch(color="0.5", label=", ".join(kinds) if kinds else "not a layer"))
    if unattributed:
        handles.append(Patch(color="0.78", label="unattributed"))
    texts = []
    for i, (_, f, b, o, note) in enumerate(rows):
        total = f + b + o
        label = f"{total:.3g} ms" + (f"   {note}" if note else "")
        text = ax.annotate(label, xy=(total, i), xytext=(3, 0), textcoords="offset points", va="center", fontsize=7.5)
        text.set_in_layout(False)  # (the x limit below makes room for it inside the axes)
        texts.append((total, text))
    ax.set_yticks(y)
    ax.set_yticklabels([r[0] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_ylim(len(rows) - 0.4, -0.6)
    title = f"{name}: {steps} steps, {profile.get('timing', 'timing unknown')}"
    if "step_ms" in profile:
        title += f", step {_ms(profile['step_ms'] / steps)} ms"
    if profile.get("data_ms", 0) > 0:
        title += f", data wait {_ms(profile['data_ms'] / steps)} ms"
    peak = profile.get("peak") or {}
    if _is_number(peak.get("flops_per_second")) and peak["flops_per_second"] > 0:
        title += f"\npeak {peak['flops_per_second'] * 1e-9:.1f} GFLOP/s, {peak.get('bytes_per_second', 0) * 1e-9:.1f} GB/s"
        if peak.get("source"):
            title += f" ({peak['source']})"
    if profile.get("captured_steps", 0) > 0:
        title += f"\n{profile['captured_steps']} of the steps were CUDA Graph replays: their layers are not in the bars"
    ax.set_title(title, fontsize=9.5)
    ax.set_xlabel("ms per step")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(handles=handles, fontsize=8, loc="lower right")
    fig.tight_layout()
    # Room on the right for the longest annotation: with the axes W pixels
    # wide, a bar of length t ends at t / xmax * W; its text must end inside.
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width = ax.get_window_extent(renderer).width
    longest = max(total for total, _ in texts) or 1.0
    xmax = longest * 1.05
    for total, text in texts:
        room = 0.98 * width - text.get_window_extent(renderer).width - 10
        if room > 0.2 * width:
            xmax = max(xmax, total * width / room)
    ax.set_xlim(0, xmax)
    path = os.path.join(out, filename)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def read_inputs(paths):
    """[(path, "profile", profile) or (path, "events", runs)] in the order given."""
    inputs = []
    for path in paths:
        if path.lower().endswith(".json") and not os.path.isdir(path):
            inputs.append((path, "profile", read_profile(path)))
        else:
            try:
                inputs.append((path, "events", runs_of([path])))
            except ValueError as e:  # (a CRC that does not match; the message names the file)
                sys.exit(f"plot_training.py: {e}")
    return inputs


def events_summary(path, runs):
    """"12 scalar tags, 340 points" (an event file), "2 runs, ..." (a directory)"""
    tags = {tag for _, run in runs for tag in run}
    points = sum(len(p) for _, run in runs for p in run.values())
    text = f"{len(tags)} scalar tags, {points} points"
    if os.path.isfile(path):
        return text
    return f"{len(runs)} run{'s' if len(runs) != 1 else ''}, " + text


SCALAR_PLOTS = [
    ("loss.png", "loss", "loss (nats)",
     [("train/loss", "-", "train"), ("validation/loss", "--", "validation")], True),
    ("accuracy.png", "accuracy per epoch", "accuracy",
     [("epoch/test_accuracy", "-", "test"), ("epoch/train_accuracy", "--", "train")], False),
    ("lr.png", "learning rate", "learning rate", [("train/lr", "-", "")], False),
    ("throughput.png", "throughput", "samples/s", [("train/samples_per_second", "-", "")], False),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="run directories, event files or layer profiles (.json)")
    parser.add_argument("--out", default="plots", help="where the PNG files go (made if missing)")
    parser.add_argument("--check", action="store_true",
                        help="read every input, print one line about each, draw nothing (no matplotlib)")
    args = parser.parse_args()
    inputs = read_inputs(args.paths)
    if args.check:
        for path, what, data in inputs:
            print(f"{path}: " + (profile_summary(data) if what == "profile" else events_summary(path, data)))
        return
    runs = [run for _, what, data in inputs if what == "events" for run in data]
    profiles = [(path, data) for path, what, data in inputs if what == "profile"]
    plots = [p for p in SCALAR_PLOTS if any(tags.get(tag) for _, tags in runs for tag, _, _ in p[3])]
    if not plots and not profiles:
        print("plot_training.py: nothing to draw: no run has any of the plotted tags", file=sys.stderr)
        return
    ensure_matplotlib()
    os.makedirs(args.out, exist_ok=True)
    made = [plot(runs, args.out, filename, title, ylabel, series, log_y=log_y)
            for filename, title, ylabel, series, log_y in plots]
    names = set()
    for path, profile in profiles:
        stem = os.path.splitext(os.path.basename(path))[0]
        filename = "profile.png" if len(profiles) == 1 else f"profile.{stem}.png"
        at = 2
        while filename in names:  # (two profiles with one file name)
            filename = f"profile.{stem}.{at}.png"
            at += 1
        names.add(filename)
        made.append(plot_profile(profile, args.out, filename, os.path.basename(path)))
    for path in made:
        if path:
            print(path)


if __name__ == "__main__":
    main()
