"""sluice reads what TensorFlow writes (issue 13, check 2).

tf.io.TFRecordWriter writes Examples in every compression, with the original
team's keys (`image_raw`, `label`) and with TensorFlow's `image/encoded`
family, into several files (one of them empty); sluice's batches are
TensorFlow's own parse and decode of the same records. A writer that dies
mid-record leaves a file TensorFlow calls truncated: sluice reads the same
records before it and names the same offset."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import sluice as sl
from conftest import SIDE, inspect_json, sluice, tf_decode, tf_encoded_images

COMPRESSIONS = ["", "GZIP", "ZLIB"]
RECORDS_PER_FILE = [7, 5, 0, 3]  # the third file is empty


def example(tf, layout, image, label):
    def b(v):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v]))

    def i(v):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[v]))
    if layout == "image_raw":  # the TensorFlow tutorial's schema, as the team wrote it
        f = {"image_raw": b(image), "label": i(label), "height": i(SIDE), "width": i(SIDE), "depth": i(3)}
    else:
        f = {"image/encoded": b(image), "image/format": b(b"jpeg" if image[:2] == b"\xff\xd8" else b"png"),
             "image/class/label": i(label), "image/height": i(SIDE), "image/width": i(SIDE)}
    return tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString()


@pytest.fixture(scope="module")
def written(tf, tmp_path_factory):
    """{(layout, compression): folder of TFRecordWriter files}, and the
    (image, label) pairs every folder holds, in order."""
    images = [v.numpy() for seed in range(3) for v in tf_encoded_images(tf, seed).values()]
    samples = [(images[k % len(images)], k % 4) for k in range(sum(RECORDS_PER_FILE))]
    out = {}
    for layout in ("image_raw", "image/encoded"):
        for comp in COMPRESSIONS:
            folder = tmp_path_factory.mktemp(f"{layout.replace('/', '_')}-{comp or 'none'}")
            it = iter(samples)
            for n_file, n in enumerate(RECORDS_PER_FILE):
                with tf.io.TFRecordWriter(str(folder / f"part-{n_file:05d}.tfrecord"), options=comp) as w:
                    for _ in range(n):
                        w.write(example(tf, layout, *next(it)))
            out[layout, comp] = folder
    return out, samples


def files_of(folder):
    return sorted(str(folder / f) for f in os.listdir(folder) if f.endswith(".tfrecord"))


@pytest.mark.parametrize("layout", ["image_raw", "image/encoded"])
@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_batches_are_tensorflows_own_decode(tf, written, layout, comp):
    folders, samples = written
    folder = folders[layout, comp]
    image_key, label_key = ("image_raw", "label") if layout == "image_raw" else ("image/encoded", "image/class/label")
    spec = {image_key: tf.io.FixedLenFeature([], tf.string), label_key: tf.io.FixedLenFeature([], tf.int64)}
    want = [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(files_of(folder), compression_type=comp)]
    assert [(w[image_key].numpy(), int(w[label_key])) for w in want] == samples

    pipe = sl.Pipeline(str(folder), batch_size=4, image_size=SIDE, augment="resize", order="none",
                       dtype="uint8", layout="NHWC", drop_last=False, workers=2)
    got, sizes = [], []
    for images, labels in pipe:
        sizes.append(len(labels))
        got += list(zip(images.numpy().copy(), labels.tolist(), images.sample_ids.tolist()))
    assert sizes == [4, 4, 4, 3]
    for k, ((pixels, label, sample_id), w) in enumerate(zip(got, want)):
        assert (sample_id, label) == (k, int(w[label_key]))
        np.testing.assert_array_equal(pixels, tf_decode(tf, w[image_key].numpy()), err_msg=f"record {k}")


@pytest.mark.parametrize("layout", ["image_raw", "image/encoded"])
@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_inspect_counts_what_tensorflow_reads(tf, written, layout, comp):
    folder = written[0][layout, comp]
    files = files_of(folder)
    report = inspect_json(*files)
    assert report["ok"], report["problems"]
    assert [f["records"] for f in report["files"]] == RECORDS_PER_FILE
    assert [sum(1 for _ in tf.data.TFRecordDataset(f, compression_type=comp)) for f in files] == RECORDS_PER_FILE
    assert all(f["compression"] == (comp.lower() or "none") for f in report["files"])
    assert report["images"]["key"] == ("image_raw" if layout == "image_raw" else "image/encoded")
    assert report["labels"] == {"0": 4, "1": 4, "2": 4, "3": 3}


CRASHING_WRITER = """
import os, sys
import numpy as np, tensorflow as tf
rng = np.random.default_rng(0)
writers = {c: tf.io.TFRecordWriter(os.path.join(sys.argv[1], f"crashed-{c or 'none'}.tfrecord"), options=c)
           for c in ("", "GZIP", "ZLIB")}
for k in range(400):
    jpg = tf.io.encode_jpeg(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8), quality=95).numpy()
    ex = tf.train.Example(features=tf.train.Features(feature={
        "image_raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[jpg])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[k % 3]))}))
    for w in writers.values():
        w.write(ex.SerializeToString())
os._exit(0)  # the job dies: no writer is closed, whatever was buffered is lost
"""


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crashed")
    subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(folder)], check=True, timeout=300)
    return folder


def tensorflow_reading(tf, path, comp):
    """(records read, offset of the truncated record) as TensorFlow reports them."""
    n = 0
    with pytest.raises(tf.errors.DataLossError) as e:
        for _ in tf.data.TFRecordDataset(path, compression_type=comp):
            n += 1
    m = re.search(r"truncated record at (\d+)", str(e.value))
    assert m, str(e.value)
    return n, int(m.group(1))


@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_a_crashed_writers_file_fails_where_tensorflow_says(tf, crashed, comp):
    path = str(crashed / f"crashed-{comp or 'none'}.tfrecord")
    n, offset = tensorflow_reading(tf, path, comp)
    assert 0 < n < 400

    report = inspect_json(path, check=1)
    assert report["records"] == n
    assert len(report["problems"]) == 1, report["problems"]
    problem = report["problems"][0]
    assert problem["offset"] == offset
    assert re.search(r"truncated|ends early", problem["reason"]), problem

    with pytest.raises(sl.DataError) as e:
        sl.Pipeline(path, batch_size=8, image_size=SIDE)
    assert str(e.value).startswith(f"{path}: offset {offset}: "), str(e.value)
