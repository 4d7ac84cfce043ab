"""The Python module over the C++ pipeline (tests/python, run by make test)."""
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

import sluice
import tfrecord_py

SLUICE = os.environ["SLUICE_BIN"]
OPTS = dict(batch_size=8, image_size=16, seed=3, workers=2, memory_budget_mb=256)


def digest(images, labels):
    """The digest `sluice bench --digest` prints for a batch."""
    raw = images.numpy().tobytes() if images.dtype != "bfloat16" else None
    lab = labels.astype(np.int64).tobytes()
    lo = tfrecord_py.crc32c(lab, tfrecord_py.crc32c(raw))
    hi = tfrecord_py.crc32c(lab, tfrecord_py.crc32c(raw, 0x9E3779B9))
    return f"{(hi << 32) | lo:016x}"


def bench_digests(path, *args):
    p = subprocess.run([SLUICE, "bench", path, "--digest", "-q", *args], check=True, capture_output=True, text=True)
    return [l.split()[3] for l in p.stdout.splitlines() if l.startswith("digest ") and l.split()[1] != "all"]


def test_same_batches_as_the_cli(dataset):
    shards = str(dataset / "shards")
    pipe = sluice.Pipeline(shards, **OPTS)
    got = [digest(images, labels) for images, labels in pipe]
    assert len(got) == len(pipe) == 7
    cli = bench_digests(shards, "--batch", "8", "--size", "16", "--seed", "3", "--workers", "1",
                        "--memory-budget", "256")
    assert got == cli


def test_views_share_memory_and_match_the_dtype(dataset):
    pipe = sluice.Pipeline(str(dataset / "shards"), **OPTS)
    images, labels = next(iter(pipe))
    t = torch.from_dlpack(images)
    a = images.numpy()
    assert t.shape == (8, 3, 16, 16) and t.dtype == torch.float32
    assert images.__dlpack_device__() == (1, 0)
    assert np.shares_memory(a, t.numpy())
    assert a.__array_interface__["data"][0] == t.data_ptr()
    n = np.from_dlpack(images)  # NumPy's own DLPack consumer
    assert n.shape == (8, 3, 16, 16) and np.shares_memory(n, a)
    assert labels.dtype == np.int64 and labels.shape == (8,)
    assert ((labels >= 0) & (labels < 4)).all()
    for dtype, torch_dtype in (("float16", torch.float16), ("bfloat16", torch.bfloat16), ("uint8", torch.uint8)):
        p = sluice.Pipeline(str(dataset / "shards"), **{**OPTS, "dtype": dtype, "layout": "NHWC"})
        images, _ = next(iter(p))
        t = torch.from_dlpack(images)
        assert t.dtype == torch_dtype and t.shape == (8, 16, 16, 3)
    with pytest.raises(TypeError, match="bfloat16"):
        images_bf16 = next(iter(sluice.Pipeline(str(dataset / "shards"), **{**OPTS, "dtype": "bfloat16"})))[0]
        images_bf16.numpy()


def test_normalised_values_match_the_uint8_pixels(dataset):
    # uint8 is the resampled value rounded; float32 keeps its fraction, so
    # back on the 0..255 scale the two differ by at most half a level.
    a = sluice.Pipeline(str(dataset / "shards"), **{**OPTS, "dtype": "uint8"})
    b = sluice.Pipeline(str(dataset / "shards"), **OPTS)
    u8 = next(iter(a))[0].numpy().astype(np.float32)
    f32 = next(iter(b))[0].numpy()
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)
    levels = (f32 * std + mean) * 255
    assert np.abs(levels - u8).max() <= 0.5 + 1e-3


def test_state_dict_resumes_exactly(dataset):
    shards = str(dataset / "shards")
    whole = []
    pipe = sluice.Pipeline(shards, **OPTS)
    for epoch in range(2):
        pipe.set_epoch(epoch)
        whole += [digest(i, l) for i, l in pipe]
    first = sluice.Pipeline(shards, **OPTS)
    it = iter(first)
    head = [digest(*next(it)) for _ in range(3)]
    state = first.state_dict()
    assert state == {"epoch": 0, "batches": 3}
    resumed = sluice.Pipeline(shards, **OPTS)
    resumed.load_state_dict(state)
    rest = [digest(i, l) for i, l in resumed]
    resumed.set_epoch(1)
    rest += [digest(i, l) for i, l in resumed]
    assert head + rest == whole


def test_epochs_and_repeated_loops(dataset):
    pipe = sluice.Pipeline(str(dataset / "shards"), **OPTS)
    a = [digest(i, l) for i, l in pipe]
    again = [digest(i, l) for i, l in pipe]  # a finished epoch restarts, as a DataLoader does
    assert a == again
    pipe.set_epoch(1)
    assert [digest(i, l) for i, l in pipe] != a


def test_several_pipelines_at_once(dataset):
    shards = str(dataset / "shards")
    alone = [digest(i, l) for i, l in sluice.Pipeline(shards, **OPTS)]
    p, q = sluice.Pipeline(shards, **OPTS), sluice.Pipeline(shards, **{**OPTS, "seed": 4})
    interleaved = []
    for (i, l), _ in zip(p, q):
        interleaved.append(digest(i, l))
    assert interleaved == alone


def test_two_threads_share_one_pipeline_safely(dataset):
    pipe = sluice.Pipeline(str(dataset / "shards"), **{**OPTS, "batch_size": 4})
    seen, errors = [], []
    lock = threading.Lock()
    it = iter(pipe)

    def consume():
        try:
            while True:
                try:
                    images, labels = next(it)
                except StopIteration:
                    return
                ids = images.sample_ids.tolist()
                images.release()
                with lock:
                    seen.extend(ids)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=consume) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(seen) == len(set(seen)) == 15 * 4  # every sample once, none twice


def test_holding_every_slot_fails_clearly_and_dropping_frees(dataset):
    pipe = sluice.Pipeline(str(dataset / "shards"), **{**OPTS, "prefetch": 2})
    it = iter(pipe)
    held = [torch.from_dlpack(next(it)[0]), torch.from_dlpack(next(it)[0])]
    with pytest.raises(RuntimeError, match="batch slots are held"):
        next(it)
    del held
    images, _ = next(it)
    assert len(images) == 8


def test_released_batch_refuses_views(dataset):
    images, _ = next(iter(sluice.Pipeline(str(dataset / "shards"), **OPTS)))
    images.release()
    with pytest.raises(ValueError, match="released"):
        images.numpy()


def test_bad_arguments(dataset):
    shards = str(dataset / "shards")
    with pytest.raises(FileNotFoundError, match="nope"):
        sluice.Pipeline(str(dataset / "nope"))
    with pytest.raises(ValueError, match="batch_size"):
        sluice.Pipeline(shards, batch_size=0)
    with pytest.raises(ValueError, match="order"):
        sluice.Pipeline(shards, order="random")
    with pytest.raises(TypeError, match="bach_size"):
        sluice.Pipeline(shards, bach_size=8)
    with pytest.raises(TypeError):
        sluice.Pipeline(shards, batch_size=object())
    with pytest.raises(RuntimeError, match="--device cuda:0: .*CUDA"):  # no GPU in CI
        sluice.Pipeline(shards, device="cuda")
    with pytest.raises(ValueError, match="device must be cpu, cuda or cuda:N"):
        sluice.Pipeline(shards, device="gpu")
    with pytest.raises(ValueError, match="rank"):
        sluice.Pipeline(shards, rank=2, world_size=2)
    with pytest.raises(TypeError):
        sluice.Pipeline(42)
    with pytest.raises(ValueError, match="check"):
        sluice.convert(str(dataset / "images" / "val"), str(dataset / "never"), check="pixels")


def test_corrupt_data_raises_data_error_with_file_and_offset(dataset, tmp_path):
    src = tmp_path / "images"
    shutil.copytree(dataset / "images" / "train", src)
    data = os.path.join(os.environ["SLUICE_TEST_DATA"], "images/jpeg/wuffs-peacock.default.truncated.jpeg")
    shutil.copy(data, src / "c00_disc" / "cut.jpg")
    sluice.convert(str(src), str(tmp_path / "shards"), shards=1, check="header", shuffle=False)
    with pytest.raises(sluice.DataError, match=r"train-00000-of-00001\.tfrecord: offset \d+"):
        for _ in sluice.Pipeline(str(tmp_path / "shards"), **{**OPTS, "on_error": "fail", "drop_last": False}):
            pass
    pipe = sluice.Pipeline(str(tmp_path / "shards"), **{**OPTS, "on_error": "skip", "drop_last": False})
    n = sum(len(images) for images, _ in pipe)
    assert n == 60
    stats = pipe.stats()
    assert stats["bad_samples"] == 1 and "premature end of data" in stats["events"][0]
    with pytest.raises(sluice.DataError):
        sluice.convert(str(src), str(tmp_path / "again"))


def test_convert_inspect_and_stats(dataset, tmp_path):
    report = sluice.convert(str(dataset / "images" / "val"), str(tmp_path / "val"), split="val")
    assert report["written"] == 12 and report["shards"] == ["val-00000-of-00001.tfrecord"]
    info = sluice.inspect(str(tmp_path / "val"), verify=True)
    assert info["ok"] and info["records"] == 12
    pipe = sluice.Pipeline(str(tmp_path / "val"), split="val", **{**OPTS, "batch_size": 4})
    for _ in pipe:
        pass
    s = pipe.stats()
    assert s["batches"] == 3 and set(s["stages"]) >= {"read", "decode", "augment"}
    assert s["verdict"].split(":")[0] in ("input-bound", "consumer-bound", "balanced")
    assert set(sluice.PIPELINE_OPTIONS) >= {"batch_size", "image_size", "augment", "order", "seed", "dtype"}
    assert "batch_size = 256" in sluice.Pipeline.__doc__


FAKE_GPU = {k: os.environ.get(v, "") for k, v in (
    ("SLUICE_CUDART_LIBRARY", "SLUICE_FAKE_CUDA"),
    ("SLUICE_KERNELS_LIBRARY", "SLUICE_FAKE_KERNELS"),
    ("SLUICE_NVJPEG_LIBRARY", "SLUICE_FAKE_NVJPEG"))}


def dl_device(capsule):
    """(device_type, device_id) of a DLPack capsule, read through ctypes."""
    import ctypes
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ptr = get(capsule, b"dltensor")

    class DLTensorHead(ctypes.Structure):  # data, then DLDevice {int32 type, int32 id}
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                    ("device_id", ctypes.c_int32)]
    head = DLTensorHead.from_address(ptr)
    return head.device_type, head.device_id


@pytest.mark.skipif(not all(FAKE_GPU.values()), reason="CTest passes the fake GPU libraries")
def test_cuda_batches_through_dlpack_against_a_fake_gpu(dataset):
    """device="cuda" in a child process (the CUDA runtime is chosen once per
    process): batches report CUDA to DLPack, and their bytes are the CPU's."""
    import inspect
    code = "import ctypes\n" + inspect.getsource(dl_device) + r'''
import sys, numpy as np, sluice
opts = dict(batch_size=8, image_size=16, seed=3, workers=2, memory_budget_mb=256)
cpu = [images.numpy().copy() for images, _ in sluice.Pipeline(sys.argv[1], **opts)]
pipe = sluice.Pipeline(sys.argv[1], device="cuda", gpu_augment="off", **opts)
n = 0
for (images, labels), want in zip(pipe, cpu):
    assert images.__dlpack_device__() == (2, 0), images.__dlpack_device__()
    assert images.device == "cuda:0"
    cap = images.__dlpack__(stream=1)
    assert dl_device(cap) == (2, 0), dl_device(cap)
    assert np.array_equal(images.numpy(), want)
    n += 1
assert n == len(cpu) == 7
st = pipe.stats()["device"]
assert st["device"] == "cuda:0" and st["gpu_augment"] == "cpu" and st["h2d_bytes"] > 0, st
assert st["tiers"]["cpu"]["images"] > 0, st
assert st["nvjpeg_refused"] == [] and st["gpu_decode_allocations"] == 0, st
try:
    next(iter(pipe))[0].__dlpack__(stream=0)
    raise AssertionError("stream 0 accepted")
except ValueError as e:
    assert "ambiguous" in str(e)
print("ok")
'''
    env = {**os.environ, **FAKE_GPU}
    p = subprocess.run([sys.executable, "-c", code, str(dataset / "shards")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr


def test_one_version_everywhere():
    """The version lives in CMakeLists.txt only: the module, the CLI and
    setup.py all report it."""
    import re

    import sluice
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(root, "CMakeLists.txt")) as f:
        version = re.search(r"project\(sluice VERSION ([0-9.]+)", f.read()).group(1)
    assert sluice.__version__ == version
    cli = subprocess.run([SLUICE, "--version"], capture_output=True, text=True, check=True)
    assert cli.stdout.split() == ["sluice", version]
    setup = subprocess.run([sys.executable, os.path.join(root, "setup.py"), "--version"],
                           capture_output=True, text=True, check=True, cwd=root)
    assert setup.stdout.strip().splitlines()[-1] == version


def test_partitioned_convert_then_finish_equals_one_run(dataset, tmp_path):
    src = str(dataset / "images" / "train")
    sluice.convert(src, str(tmp_path / "one"), shards=3)
    for i in range(2):
        sluice.convert(src, str(tmp_path / "parts"), shards=3, part=i, parts=2)
    assert not (tmp_path / "parts" / "dataset.json").exists()
    report = sluice.finish_convert(str(tmp_path / "parts"))
    assert report["shards"] == [f"train-0000{i}-of-00003.tfrecord" for i in range(3)]
    for name in report["shards"]:
        assert (tmp_path / "parts" / name).read_bytes() == (tmp_path / "one" / name).read_bytes()
    sluice.convert(src, str(tmp_path / "half"), shards=3, part=0, parts=2)
    with pytest.raises(sluice.DataError, match="part 1 of 2"):
        sluice.finish_convert(str(tmp_path / "half"))


def test_convert_keywords_come_from_one_table(dataset, tmp_path):
    # The signature in the docstring is written from ConvertOptions' own
    # defaults, one entry per keyword the function takes.
    doc = sluice.convert.__doc__
    for default in ("split='train'", "shards=0", "shard_size_mb=128.0", "compression='none'",
                    "workers=0", "max_side=0", "quality=90", "on_error='fail'", "shuffle=True",
                    "seed=0", "check='decode'", "rewrite_progressive=False", "classes=None"):
        assert default in doc, default
    with pytest.raises(TypeError, match="unexpected keyword argument 'shard_size'"):
        sluice.convert(str(dataset / "images" / "val"), str(tmp_path / "x"), shard_size=1)
    # Every keyword of the signature is accepted.
    signature = next(line for line in doc.splitlines() if line.startswith("convert(src, out, "))
    names = [a.split("=")[0] for a in signature.split("(", 1)[1].split(")")[0].split(", ")[2:]]
    assert "max_pixels" in names and "parts" in names and len(names) == 16
    classes = sorted(os.listdir(dataset / "images" / "val"))
    report = sluice.convert(str(dataset / "images" / "val"), str(tmp_path / "all"), split="val", shards=1,
                            shard_size_mb=64, compression="gzip", workers=1, max_side=0, quality=90,
                            on_error="skip", shuffle=False, seed=3, check="header",
                            rewrite_progressive=False, max_pixels=1 << 26, classes=classes)
    assert report["written"] == 12 and report["classes"] == classes
