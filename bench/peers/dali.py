#!/usr/bin/env python3
"""NVIDIA DALI over sluice's shards and index files, on the CPU only
(device_id=None: no GPU is asked for), doing the same work as `sluice bench`:
fn.readers.tfrecord (shuffled), fn.decoders.image_random_crop on the CPU
(RandomResizedCrop's window, decoding only what it needs), fn.resize to
SIZE x SIZE, fn.crop_mirror_normalize (random flip, normalise, float32,
CHW); batch 256.

    bench/peers/dali.py SHARDS [--batch 256] [--size 224] [--workers N]
        [--epochs 1] [--batches N] [--json FILE]

Runs in build/venv (nvidia-dali-cuda120 from PyPI; scripts/bootstrap.sh
--peers). The same script runs on a GPU machine with --device gpu
(decoding "mixed", the rest on the GPU)."""

from nvidia.dali import fn, pipeline_def, types
import nvidia.dali
import nvidia.dali.tfrecord as tfrec

from common import MEAN, STD, Timer, parse_args, record_files


def build(a, files, indexes):
    gpu = a.device == "gpu"

    @pipeline_def(batch_size=a.batch, num_threads=a.workers, device_id=0 if gpu else None,
                  prefetch_queue_depth=2)
    def pipe():
        r = fn.readers.tfrecord(path=files, index_path=indexes, random_shuffle=True, initial_fill=1024,
                                name="reader",
                                features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                                          "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
        images = fn.decoders.image_random_crop(r["image/encoded"], device="mixed" if gpu else "cpu",
                                               output_type=types.RGB, random_area=[0.08, 1.0],
                                               random_aspect_ratio=[3 / 4, 4 / 3], num_attempts=10)
        images = fn.resize(images, resize_x=a.size, resize_y=a.size)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD],
                                          mirror=fn.random.coin_flip())
        return images, r["image/class/label"]

    p = pipe()
    p.build()
    return p


def main():
    ap = parse_args(__doc__, "sluice dataset folder (shards and .idx from sluice convert)")
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    a = ap.parse_args()
    files, indexes = record_files(a.data)
    timer = Timer(a)
    p = build(a, files, indexes)
    per_epoch = p.epoch_size("reader") // a.batch  # drop the last part batch, as the others do
    going = True
    for _ in range(a.epochs):
        for _ in range(per_epoch):
            images, _labels = p.run()
            if not timer.add(len(images)):
                going = False
                break
        if not going:
            break
    timer.report(f"DALI ({a.device})", {"nvidia-dali": nvidia.dali.__version__})


if __name__ == "__main__":
    main()
