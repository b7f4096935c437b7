"""Reads write_trace's Chrome trace files with Python's own JSON reader
(json.load: any malformed byte fails) and checks them as the trace-event
format defines them: complete events ("ph": "X") with name, cat, integer
pid, tid, ts and dur; thread names as metadata events; each layer's slice
carrying its shapes and lying inside its step on the same track. A run
ended abruptly (--stop-early) must leave a closed file holding the slices
of the steps that ended. Perfetto's own trace processor is not used: it
downloads a binary at run time."""
import json
import os
import subprocess
import sys
import tempfile


def check(path, steps):
    with open(path, "rb") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    assert isinstance(events, list) and events, path
    names = {}
    slices = []
    for e in events:
        assert e["ph"] in ("X", "M"), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] == "M":
            if e["name"] == "thread_name":
                names[e["tid"]] = e["args"]["name"]
            continue
        for key in ("ts", "dur"):
            assert isinstance(e[key], int) and e[key] >= 0, e
        assert isinstance(e["name"], str) and isinstance(e["cat"], str), e
        slices.append(e)
    for e in slices:
        assert e["tid"] in names, "a slice on an unnamed track: %r" % e
    step_slices = [e for e in slices if e["name"] == "step"]
    assert len(step_slices) == steps, (len(step_slices), steps)
    layers = [e for e in slices if e["cat"] == "layer"]
    want = {"0 Linear forward", "0 Linear backward", "2.0 Linear forward", "2.1 tanh forward",
            "2 residual add forward", "3 layer forward", "4 Linear backward"}
    missing = want - {e["name"] for e in layers}
    assert not missing, missing
    for e in layers:
        assert " -> " in e["args"]["shape"], e
        step = [s for s in step_slices if s["tid"] == e["tid"] and s["ts"] <= e["ts"] <= s["ts"] + s["dur"] + 1]
        assert step, "a layer slice outside every step: %r" % e
    for name in ("loss forward", "loss backward", "optimizer", "data"):
        assert any(e["name"] == name for e in slices), name
    return len(slices)


writer = sys.argv[1]
with tempfile.TemporaryDirectory() as d:
    whole = os.path.join(d, "whole.json")
    subprocess.run([writer, whole], check=True)
    n = check(whole, 4)
    early = os.path.join(d, "early.json")
    r = subprocess.run([writer, early, "--stop-early"])
    assert r.returncode == 3, r.returncode
    m = check(early, 2)  # steps 1 and 2 ended; the third stopped in its backward
    assert m < n
    print("trace.read_back: %d slices, and %d from a run ended in its third step; both read by json.load" % (n, m))
