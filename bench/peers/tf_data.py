#!/usr/bin/env python3
"""tf.data over sluice's shards, the same work as `sluice bench` (train
augment: RandomResizedCrop, horizontal flip, normalise to float32; batch 256,
224 px), in the two forms a TensorFlow user writes:

  --form original  as the original team wrote it: TFRecordDataset,
                   map(parse + decode_jpeg + random crop + flip + normalise,
                   AUTOTUNE), shuffle, batch, prefetch(AUTOTUNE). The whole
                   image is decoded, then cropped; the shuffle holds decoded
                   images.
  --form fast      what a careful user writes (TensorFlow's own ResNet input
                   code does this): files interleaved, records shuffled
                   before decoding, and decode_and_crop_jpeg, which decodes
                   only the crop window.

    bench/peers/tf_data.py SHARDS [--form original|fast] [--batch 256]
        [--size 224] [--workers N] [--epochs 1] [--batches N] [--json FILE]

--workers caps TensorFlow's threads (its private pool; AUTOTUNE tunes within
it). Runs in build/venv (scripts/bootstrap.sh --peers)."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from common import MEAN, STD, Timer, parse_args, record_files  # noqa: E402

WHOLE_IMAGE = tf.constant([0.0, 0.0, 1.0, 1.0], shape=[1, 1, 4])
FEATURES = {"image/encoded": tf.io.FixedLenFeature([], tf.string),
            "image/class/label": tf.io.FixedLenFeature([], tf.int64)}


def crop_window(shape):
    """RandomResizedCrop's window: 8-100 % of the area, aspect 3/4-4/3."""
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        shape, WHOLE_IMAGE, min_object_covered=0.0, aspect_ratio_range=(3 / 4, 4 / 3),
        area_range=(0.08, 1.0), max_attempts=10, use_image_if_no_bounding_boxes=True)
    return begin, size


def finish(image, size):
    image = tf.image.resize(image, [size, size])  # bilinear, to float32
    image = tf.image.random_flip_left_right(image)
    return (image / 255.0 - MEAN) / STD


def original(size):
    def f(record):
        ex = tf.io.parse_single_example(record, FEATURES)
        image = tf.io.decode_jpeg(ex["image/encoded"], channels=3)
        begin, window = crop_window(tf.shape(image))
        return finish(tf.slice(image, begin, window), size), ex["image/class/label"]
    return f


def fast(size):
    def f(record):
        ex = tf.io.parse_single_example(record, FEATURES)
        encoded = ex["image/encoded"]
        begin, window = crop_window(tf.io.extract_jpeg_shape(encoded))
        y, x, _ = tf.unstack(begin)
        h, w, _ = tf.unstack(window)
        image = tf.io.decode_and_crop_jpeg(encoded, tf.stack([y, x, h, w]), channels=3)
        return finish(image, size), ex["image/class/label"]
    return f


def dataset(a, files):
    if a.form == "original":
        ds = tf.data.TFRecordDataset(files)
        ds = ds.map(original(a.size), num_parallel_calls=tf.data.AUTOTUNE)
        ds = ds.shuffle(a.shuffle_buffer)
    else:
        ds = tf.data.Dataset.from_tensor_slices(files).shuffle(len(files))
        ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 4),
                           num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
        ds = ds.shuffle(a.shuffle_buffer)
        ds = ds.map(fast(a.size), num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
    ds = ds.batch(a.batch, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.threading.private_threadpool_size = a.workers
    return ds.with_options(options)


def main():
    ap = parse_args(__doc__, "sluice dataset folder (shards and .idx from sluice convert)")
    ap.add_argument("--form", choices=["original", "fast"], default="original")
    ap.add_argument("--shuffle-buffer", type=int, default=1024,
                    help="elements (decoded images in the original form, records in the fast one)")
    a = ap.parse_args()
    files, _ = record_files(a.data)
    timer = Timer(a)
    ds = dataset(a, files)
    going = True
    for _ in range(a.epochs):
        for images, _labels in ds:
            if not timer.add(int(images.shape[0])):
                going = False
                break
        if not going:
            break
    timer.report(f"tf.data ({a.form})", {"tensorflow": tf.__version__})


if __name__ == "__main__":
    main()
