"""DALI accepts the index files sluice writes (issue 13, check 5).

The .idx beside each shard is byte for byte what DALI's own tfrecord2idx
writes for it, and DALI's fn.readers.tfrecord, given sluice's index files,
reads every record of the shards (a CPU-only pipeline: no GPU needed)."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from nvidia.dali import fn, pipeline_def
import nvidia.dali.tfrecord as tfrec

from conftest import sluice
import tfrecord_py

BATCH = 7  # divides no shard, so batches span shard boundaries


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    sluice("synth", str(root / "images"), "--classes", "3", "--per-class", "11", "--size", "32")
    sluice("convert", str(root / "images" / "train"), "-o", str(root / "shards"), "--shards", "3", "-q")
    files = sorted(str(root / "shards" / f) for f in os.listdir(root / "shards") if f.endswith(".tfrecord"))
    return files, [f[: -len(".tfrecord")] + ".idx" for f in files]


def test_index_is_what_dalis_tfrecord2idx_writes(shards, tmp_path):
    tool = shutil.which("tfrecord2idx", path=os.path.dirname(sys.executable))
    assert tool, "DALI's tfrecord2idx is not in the environment"
    for record_file, index in zip(*shards):
        theirs = tmp_path / os.path.basename(index)
        subprocess.run([sys.executable, tool, record_file, str(theirs)], check=True, capture_output=True)
        assert open(index, "rb").read() == theirs.read_bytes(), index


def test_dalis_reader_reads_every_record_through_our_index(shards):
    files, indexes = shards
    want = [tfrecord_py.parse_example(r) for f in files for _, r in tfrecord_py.read_records(f)]

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None)  # None: CPU only
    def reader():
        r = fn.readers.tfrecord(path=files, index_path=indexes, random_shuffle=False, name="reader",
                                features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                                          "image/filename": tfrec.FixedLenFeature((), tfrec.string, ""),
                                          "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
        return r["image/encoded"], r["image/filename"], r["image/class/label"]

    pipe = reader()
    pipe.build()
    assert pipe.epoch_size("reader") == len(want)
    got = []
    while len(got) < len(want):
        encoded, names, labels = pipe.run()
        for k in range(len(encoded)):
            got.append((np.array(encoded[k]).tobytes(), np.array(names[k]).tobytes(), int(np.array(labels[k])[0])))
    got = got[: len(want)]
    for (enc, name, label), w in zip(got, want):
        assert name == w["image/filename"][1][0]
        assert label == w["image/class/label"][1][0]
        assert enc == w["image/encoded"][1][0]
