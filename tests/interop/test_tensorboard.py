"""TensorBoard reads sluice's event files (issue 13, check 3).

TensorBoard's own loaders (the legacy EventAccumulator and the plugin
accumulator its server uses) load the --logdir of `sluice bench` and of
`sluice train`: every tag that the JSON lines beside the event file carry,
with the same steps, values and Unix wall times, and nothing else; also
while bench is still writing, and from a file cut inside a record."""

import json
import math
import os
import shutil
import signal
import struct
import subprocess
import time

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.util import tensor_util

from conftest import SLUICE, sluice

TRAIN_TAGS = {"train/loss", "train/accuracy", "train/lr", "train/images_per_second",
              "train/data_wait_share", "train/process_cpu_cores", "epoch/loss", "epoch/accuracy",
              "epoch/images_per_second", "epoch/data_wait_share", "epoch/val_loss", "epoch/val_accuracy"}


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    sluice("synth", str(root / "images"), "--classes", "4", "--per-class", "15", "--val-per-class", "4",
           "--size", "64")
    for split in ("train", "val"):
        sluice("convert", str(root / "images" / split), "-o", str(root / "shards"), "--split", split,
               "--shards", "1", "-q")
    return root / "shards"


def scalars(logdir, live=False):
    """{tag: [(step, value, wall_time)]} through both of TensorBoard's loaders,
    after checking they agree. live: the file is still being written, so the
    second loader, reading later, may see more; what the first saw must be
    the start of what the second did."""
    legacy = event_accumulator.EventAccumulator(str(logdir), size_guidance={event_accumulator.SCALARS: 0})
    legacy.Reload()
    assert legacy.file_version == 2.0  # TensorBoard's reading of "brain.Event:2"
    got = {t: [(e.step, e.value, e.wall_time) for e in legacy.Scalars(t)] for t in legacy.Tags()["scalars"]}
    served = plugin_event_accumulator.EventAccumulator(str(logdir), size_guidance={plugin_event_accumulator.TENSORS: 0})
    served.Reload()
    plugins = served.ActivePlugins()
    assert set(served.PluginTagToContent("scalars") if "scalars" in plugins else {}) == set(got)
    for tag, events in got.items():
        tensors = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto)), e.wall_time) for e in served.Tensors(tag)]
        if live:
            assert tensors[:len(events)] == events, tag
        else:
            assert tensors == events, tag
    return got


def json_lines(path, prefix=""):
    """The same shape from a JSON lines file: {prefix + name: [(step, value, time)]}."""
    out = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            for name, value in row.items():
                if name not in ("step", "time"):
                    out.setdefault(prefix + name, []).append((row["step"], value, row["time"]))
    return out


def assert_same(events, lines):
    """Same steps and wall times, values equal once rounded to float32 (an
    event's simple_value is a float)."""
    assert set(events) == set(lines)
    for tag in events:
        assert len(events[tag]) == len(lines[tag]), tag
        for (step, value, wall), (l_step, l_value, l_time) in zip(events[tag], lines[tag]):
            assert step == l_step and wall == l_time, tag
            want = np.float32(math.nan if l_value is None else l_value)
            assert np.float32(value) == want or (math.isnan(want) and math.isnan(value)), (tag, step)


def assert_wall_times(events, start, end):
    """Wall times are Unix seconds within the run, increasing in file order."""
    for tag, rows in events.items():
        walls = [w for _, _, w in rows]
        assert walls == sorted(walls), tag
        assert all(start - 1 <= w <= end + 1 for w in walls), (tag, walls, start, end)


def whole_records(data):
    """Offsets of the records wholly inside `data` (TFRecord framing)."""
    offsets, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack("<Q", data[pos:pos + 8])
        if pos + 16 + length > len(data):
            break
        offsets.append(pos)
        pos += 16 + length
    return offsets


def only_event_file(logdir):
    files = [f for f in os.listdir(logdir) if "tfevents" in f]
    assert len(files) == 1, files
    return logdir / files[0]


def test_bench_logdir(shards, tmp_path):
    start = time.time()
    sluice("bench", str(shards), "--batch", "8", "--size", "64", "--epochs", "200", "--logdir",
           str(tmp_path), "-q")
    end = time.time()
    events = scalars(tmp_path)
    assert "bench/images_per_second_total" in events
    assert_same(events, json_lines(tmp_path / "bench.jsonl", "bench/"))
    assert_wall_times(events, start, end)
    (total,) = events["bench/images_per_second_total"]
    assert total[0] == 200 * (60 // 8)  # the step is the batch count (the last part batch dropped)


@pytest.mark.skipif(os.environ.get("SLUICE_HAS_TRAINER") != "1",
                    reason="built without LibTorch: no sluice-train (scripts/bootstrap.sh installs it)")
def test_train_logdir(shards, tmp_path):
    start = time.time()
    sluice("train", str(shards), "--model", "seed-cnn", "--size", "16", "--batch", "8", "--epochs", "2",
           "--log-every", "2", "--logdir", str(tmp_path))
    end = time.time()
    events = scalars(tmp_path)
    assert set(events) == TRAIN_TAGS
    assert_same(events, json_lines(tmp_path / "train.jsonl"))
    assert_wall_times(events, start, end)
    assert [s for s, _, _ in events["epoch/loss"]] == [1, 2]  # epochs count from 1, as printed
    # every --log-every steps and at each epoch's end (7 steps an epoch)
    assert [s for s, _, _ in events["train/loss"]] == [2, 4, 6, 7, 8, 10, 12, 14]


def test_a_file_still_being_written(shards, tmp_path):
    logdir = tmp_path / "live"
    start = time.time()
    bench = subprocess.Popen([SLUICE, "bench", str(shards), "--batch", "8", "--size", "64", "--epochs",
                              "1000000", "--logdir", str(logdir), "-q"], stdout=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        events = {}
        while len(events.get("bench/images_per_second", [])) < 2:
            assert bench.poll() is None and time.time() < deadline, "bench ended or never logged twice"
            time.sleep(0.2)
            events = scalars(logdir, live=True) if os.path.exists(logdir) else {}
        lines = json_lines(logdir / "bench.jsonl", "bench/")  # read after: it is written first
        assert_wall_times(events, start, time.time())
        for tag, rows in events.items():
            assert [(s, np.float32(v), w) for s, v, w in rows] == \
                [(s, np.float32(v), w) for s, v, w in lines[tag][:len(rows)]], tag
        # A reader may meet a record that is not all there yet: TensorBoard
        # takes what is whole and waits for the rest.
        cut = tmp_path / "cut"
        cut.mkdir()
        source = only_event_file(logdir)
        data = source.read_bytes()
        offsets = whole_records(data)
        assert len(offsets) >= 3
        (cut / source.name).write_bytes(data[:offsets[-1] + 20])  # inside the last record
        partial = scalars(cut)
        assert sum(len(v) for v in partial.values()) == len(offsets) - 2  # all but file_version and the cut one
    finally:
        bench.send_signal(signal.SIGTERM)
        bench.wait(timeout=60)
    shutil.rmtree(logdir, ignore_errors=True)
