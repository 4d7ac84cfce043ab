"""Shared by the interop tests: the sluice binary, test data, and images
made by a third-party encoder (TensorFlow's) beside sluice's own."""

import json
import os
import resource
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))  # tfrecord_py, the independent reader

SLUICE = os.environ["SLUICE_BIN"]
SIDE = 40  # every test image is SIDE x SIDE, so the resize path at SIDE is the identity


def sluice(*args, check=0, timeout=300):
    """Runs the CLI with its memory capped at 4 GiB, so a runaway allocation
    fails the test instead of waking the OOM killer on a shared machine."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=timeout,
                       preexec_fn=cap)
    if check is not None:
        assert p.returncode == check, f"sluice {args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def inspect_json(*paths, check=0):
    return json.loads(sluice("inspect", "--json", *paths, check=check).stdout)


def gradient(seed, channels=3):
    """A smooth picture with some texture: what JPEG is made for, and enough
    detail that two IDCTs or upsamplers that differ give different bytes."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32)
    a, b, c = rng.uniform(2, 6, 3)
    img = np.stack([xx * a, yy * b, (xx + yy) * c / 2], -1) + rng.normal(0, 12, (SIDE, SIDE, 3))
    return np.clip(img, 0, 255).astype(np.uint8)[..., :channels]


def tf_encoded_images(tf, seed=0):
    """{name: bytes}: TensorFlow's encoders in the variants a dataset meets
    (4:2:0 and 4:4:4, progressive, grey, PNG grey and RGBA)."""
    rgb = gradient(seed)
    rgba = np.concatenate([rgb, np.full((SIDE, SIDE, 1), 200, np.uint8)], -1)
    return {
        "q90_420.jpg": tf.io.encode_jpeg(rgb, quality=90),
        "q95_444.jpg": tf.io.encode_jpeg(gradient(seed + 1), quality=95, chroma_downsampling=False),
        "progressive.jpg": tf.io.encode_jpeg(gradient(seed + 2), quality=85, progressive=True),
        "grey.jpg": tf.io.encode_jpeg(gradient(seed + 3, 1), quality=90, format="grayscale"),
        "rgb.png": tf.io.encode_png(gradient(seed + 4)),
        "grey.png": tf.io.encode_png(gradient(seed + 5, 1)),
        "rgba.png": tf.io.encode_png(rgba),
    }


def tf_decode(tf, encoded):
    """TensorFlow's decode with the pixels sluice promises: JPEGs with the
    accurate integer IDCT (libjpeg's default, and sluice's; TensorFlow's own
    default is the fast one, a few levels off), PNGs as they are; RGB."""
    if encoded[:2] == b"\xff\xd8":
        return tf.io.decode_jpeg(encoded, channels=3, dct_method="INTEGER_ACCURATE").numpy()
    return tf.io.decode_image(encoded, channels=3, expand_animations=False).numpy()


def full_scale(path, n, **extra):
    """sluice's own decode of every record of `path`, in storage order: the
    resize path at the images' own size, uint8 NHWC, one batch."""
    import sluice as sl
    pipe = sl.Pipeline(path, batch_size=n, image_size=SIDE, augment="resize", order="none",
                       dtype="uint8", layout="NHWC", drop_last=False, workers=2, **extra)
    batches = [(images.numpy().copy(), labels.copy(), images.sample_ids.copy()) for images, labels in pipe]
    assert len(batches) == 1
    return batches[0]


@pytest.fixture(scope="session")
def tf():
    import tensorflow
    return tensorflow
