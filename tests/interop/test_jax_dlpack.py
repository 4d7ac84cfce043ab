"""JAX takes sluice's batches through DLPack (issue 13, check 4).

jax.dlpack.from_dlpack on a CPU batch shares its memory (no copy), holds
the same values NumPy sees, and keeps the batch's ring slot until the JAX
array is gone, in every dtype sluice makes (bfloat16 too, which NumPy
cannot hold)."""

import gc

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sluice as sl
from conftest import sluice

OPTS = dict(batch_size=8, image_size=16, seed=3, workers=2, memory_budget_mb=256)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    sluice("synth", str(root / "images"), "--classes", "4", "--per-class", "15", "--size", "24")
    sluice("convert", str(root / "images" / "train"), "-o", str(root / "shards"), "--shards", "2", "-q")
    return str(root / "shards")


def first_batch(shards, **options):
    return next(iter(sl.Pipeline(shards, **{**OPTS, **options})))


@pytest.mark.parametrize("dtype,layout,shape", [
    ("float32", "NCHW", (8, 3, 16, 16)), ("float16", "NHWC", (8, 16, 16, 3)), ("uint8", "NHWC", (8, 16, 16, 3))])
def test_values_equal_numpys_view_and_share_memory(shards, dtype, layout, shape):
    images, labels = first_batch(shards, dtype=dtype, layout=layout)
    view = images.numpy()
    array = jax.dlpack.from_dlpack(images)
    assert array.shape == shape and array.dtype == np.dtype(dtype)
    assert array.devices() == {jax.devices("cpu")[0]}
    assert array.unsafe_buffer_pointer() == view.__array_interface__["data"][0]  # zero-copy
    np.testing.assert_array_equal(np.asarray(array), view)
    assert labels.dtype == np.int64
    np.testing.assert_array_equal(np.asarray(jnp.asarray(labels)), labels)


def test_bfloat16_is_float32_rounded_to_nearest_even(shards):
    wide = jnp.asarray(first_batch(shards)[0].numpy())
    narrow = jax.dlpack.from_dlpack(first_batch(shards, dtype="bfloat16")[0])
    assert narrow.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(narrow), np.asarray(wide.astype(jnp.bfloat16)))


def test_the_slot_is_held_while_the_jax_array_lives(shards):
    pipe = sl.Pipeline(shards, **{**OPTS, "prefetch": 2})
    it = iter(pipe)
    arrays = []
    for _ in range(2):
        images, _ = next(it)
        arrays.append(jax.dlpack.from_dlpack(images))
        want = images.numpy().copy()
        del images  # only the JAX array holds the slot now
        gc.collect()
        np.testing.assert_array_equal(np.asarray(arrays[-1]), want)
    with pytest.raises(RuntimeError, match="batch slots are held"):
        next(it)
    snapshot = [np.asarray(a).copy() for a in arrays]
    del arrays
    gc.collect()
    images, _ = next(it)  # a slot came back
    assert images.shape == (8, 3, 16, 16)
    assert not any(np.shares_memory(images.numpy(), s) for s in snapshot)
