"""TensorFlow reads what `sluice convert` writes (issue 13, check 1).

tf.data.TFRecordDataset reads the shards in every compression, and
tf.io.parse_single_example parses every record with the keys the README
documents; what TensorFlow sees (records per file, labels, class texts,
formats, sizes) is what `sluice inspect` reports, and TensorFlow's decode of
each image equals sluice's own at full scale."""

import collections
import os
import shutil
import statistics

import numpy as np
import pytest

from conftest import SIDE, full_scale, inspect_json, sluice, tf_decode, tf_encoded_images

# The README's keys (convert: "Records are tf.train.Examples with TensorFlow's
# image keys") and their types; parse_single_example fails on a missing key.
DOCUMENTED = {
    "image/encoded": "string", "image/format": "string", "image/class/label": "int64",
    "image/class/text": "string", "image/height": "int64", "image/width": "int64",
    "image/channels": "int64", "image/filename": "string",
}
COMPRESSIONS = {"none": "", "gzip": "GZIP", "zlib": "ZLIB"}
PNGSUITE = ["pngsuite-basn4a08.png", "pngsuite-basn6a16.png", "pngsuite-tbbn3p08.png", "pngsuite-basi2c08.png"]


@pytest.fixture(scope="module")
def images(tmp_path_factory, tf):
    """sluice's synthetic JPEGs and PNGs, and a class of TensorFlow-encoded ones."""
    root = tmp_path_factory.mktemp("images")
    sluice("synth", str(root), "--classes", "3", "--per-class", "6", "--size", str(SIDE),
           "--fixed-size", "--png-fraction", "0.3", "--val-per-class", "1")
    tf_class = root / "train" / "c03_tensorflow"
    tf_class.mkdir()
    for name, data in tf_encoded_images(tf).items():
        (tf_class / name).write_bytes(data.numpy())
    # PngSuite's channel layouts (grey + alpha, 16-bit RGBA, palette + tRNS):
    # 32 x 32, so checked for their metadata, not at full scale.
    suite = root / "train" / "c04_pngsuite"
    suite.mkdir()
    for name in PNGSUITE:
        shutil.copy(os.path.join(os.environ["SLUICE_TEST_DATA"], "images", "png", name), suite / name)
    return root / "train"


@pytest.fixture(scope="module")
def datasets(images, tmp_path_factory):
    out = {}
    for name in COMPRESSIONS:
        path = tmp_path_factory.mktemp(f"shards-{name}")
        sluice("convert", str(images), "-o", str(path), "--shards", "2", "--compression", name, "-q")
        out[name] = path
    return out


def shard_files(path):
    return sorted(str(path / f) for f in os.listdir(path) if f.endswith(".tfrecord"))


def tf_records(tf, files, compression):
    return [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type=compression)]


def parse(tf, record):
    spec = {k: tf.io.FixedLenFeature([], getattr(tf, t)) for k, t in DOCUMENTED.items()}
    return {k: v.numpy() for k, v in tf.io.parse_single_example(record, spec).items()}


def schema(tf, records):
    """{key: (kind, records holding it)} as tf.train.Example sees the records."""
    seen = collections.defaultdict(lambda: [None, 0])
    for r in records:
        for key, feature in tf.train.Example.FromString(r).features.feature.items():
            seen[key][0] = feature.WhichOneof("kind")
            seen[key][1] += 1
    return {k: tuple(v) for k, v in seen.items()}


def stats(values):
    return {"count": len(values), "min": min(values), "mean": statistics.fmean(values), "max": max(values)}


def assert_stats(got, want):
    assert got["count"] == want["count"] and got["min"] == want["min"] and got["max"] == want["max"]
    assert got["mean"] == pytest.approx(want["mean"], rel=1e-12)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_every_record_is_what_inspect_reports(tf, datasets, images, compression):
    path = datasets[compression]
    files = shard_files(path)
    report = inspect_json(str(path))
    assert report["ok"] and report["problems"] == []
    per_file = [len(tf_records(tf, [f], COMPRESSIONS[compression])) for f in files]
    assert per_file == [f["records"] for f in report["files"]]
    assert [os.path.basename(f["path"]) for f in report["files"]] == [os.path.basename(f) for f in files]
    assert all(f["compression"] == compression for f in report["files"])

    records = tf_records(tf, files, COMPRESSIONS[compression])
    assert len(records) == report["records"] == sum(1 for _ in images.rglob("*.*"))
    assert sum(len(r) for r in records) == report["record_bytes"]
    want_schema = {k: (v["kind"], v["records"]) for k, v in report["schema"].items()}
    assert schema(tf, records) == want_schema
    assert set(DOCUMENTED) <= set(want_schema)

    examples = [parse(tf, r) for r in records]
    labels = collections.Counter(str(e["image/class/label"]) for e in examples)
    assert labels == report["labels"]
    classes = report["classes"]
    assert classes == sorted(os.listdir(images))
    for e in examples:
        assert e["image/class/text"].decode() == classes[e["image/class/label"]]
        assert os.path.exists(images / e["image/filename"].decode())
    assert sorted(e["image/filename"].decode() for e in examples) == sorted(
        str(p.relative_to(images)) for p in images.rglob("*.*"))
    assert dict(collections.Counter(e["image/format"].decode() for e in examples)) == report["images"]["formats"]

    shapes = [tf.io.decode_image(e["image/encoded"], expand_animations=False).shape for e in examples]
    for e, shape in zip(examples, shapes):
        assert (e["image/height"], e["image/width"], e["image/channels"]) == tuple(shape)
    assert_stats(report["images"]["width"], stats([s[1] for s in shapes]))
    assert_stats(report["images"]["height"], stats([s[0] for s in shapes]))
    assert_stats(report["images"]["bytes"], stats([len(e["image/encoded"]) for e in examples]))


def test_compressions_hold_the_same_records(tf, datasets):
    plain = tf_records(tf, shard_files(datasets["none"]), "")
    for name, tf_name in COMPRESSIONS.items():
        assert tf_records(tf, shard_files(datasets[name]), tf_name) == plain, name


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_decoded_pixels_equal_sluices_own(tf, datasets, compression):
    path = datasets[compression]
    examples = [parse(tf, r) for r in tf_records(tf, shard_files(path), COMPRESSIONS[compression])]
    pixels, labels, ids = full_scale(str(path), len(examples))
    assert ids.tolist() == list(range(len(examples)))  # storage order: TensorFlow's order
    compared = 0
    for i, e in enumerate(examples):
        assert labels[i] == e["image/class/label"]
        want = tf_decode(tf, e["image/encoded"])
        if want.shape != (SIDE, SIDE, 3):
            continue  # PngSuite's 32 x 32: resized here, not full scale
        np.testing.assert_array_equal(pixels[i], want, err_msg=e["image/filename"].decode())
        compared += 1
    assert compared == len(examples) - len(PNGSUITE)
