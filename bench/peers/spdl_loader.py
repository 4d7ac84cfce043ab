#!/usr/bin/env python3
"""SPDL (Meta's Scalable and Performant Data Loading) over the image folder,
doing the same work as `sluice bench`: per image, RandomResizedCrop's window
(torchvision's sampling), then FFmpeg's crop, scale to SIZE x SIZE, optional
horizontal flip and RGB conversion in one filter graph as SPDL decodes; per
batch of 256, normalise to float32 CHW in NumPy. SPDL's pipeline runs the
decodes on a thread pool (its decoders release the GIL).

    bench/peers/spdl_loader.py IMAGE_FOLDER [--batch 256] [--size 224]
        [--workers N] [--epochs 1] [--batches N] [--json FILE]

Runs in build/venv (spdl from PyPI; scripts/bootstrap.sh --peers, which
also installs FFmpeg 5's libraries from Debian: SPDL loads them at run
time)."""

import numpy as np
import spdl.io
from spdl.pipeline import PipelineBuilder

import spdl
from common import MEAN, STD, Timer, image_folder, parse_args, random_resized_crop, seeded_rng

MEAN_255 = np.array(MEAN, np.float32).reshape(1, 3, 1, 1) * 255
STD_255 = np.array(STD, np.float32).reshape(1, 3, 1, 1) * 255


def loader(size):
    rng = seeded_rng()

    def load(item):
        path, label = item
        packets = spdl.io.demux_image(path)
        x, y, w, h = random_resized_crop(packets.width, packets.height, rng)
        flip = ",hflip" if rng.random() < 0.5 else ""
        frames = spdl.io.decode_packets(
            packets, filter_desc=f"crop={w}:{h}:{x}:{y},scale={size}:{size}{flip},format=rgb24")
        return spdl.io.to_numpy(spdl.io.convert_frames(frames)), label
    return load


def collate(items):
    images = np.stack([i for i, _ in items]).transpose(0, 3, 1, 2).astype(np.float32)
    return (images - MEAN_255) / STD_255, np.array([l for _, l in items], np.int64)


def epoch_pipeline(a, samples):
    order = list(samples)
    seeded_rng().shuffle(order)
    return (PipelineBuilder()
            .add_source(order)
            .pipe(loader(a.size), concurrency=a.workers)
            .aggregate(a.batch, drop_last=True)
            .pipe(collate)
            .add_sink(2)
            .build(num_threads=a.workers))


def main():
    a = parse_args(__doc__, "ImageFolder tree (CLASS/*.jpg)").parse_args()
    samples = image_folder(a.data)
    timer = Timer(a)
    going = True
    for _ in range(a.epochs):
        pipeline = epoch_pipeline(a, samples)
        with pipeline.auto_stop():
            for images, _labels in pipeline:
                if not timer.add(len(images)):
                    going = False
                    break
        if not going:
            break
    timer.report("SPDL", {"spdl": getattr(spdl, "__version__", "?"), "numpy": np.__version__})


if __name__ == "__main__":
    main()
