"""What every peer shares, so they differ only in the loader: the command
line (that of torch_dataloader.py), the RandomResizedCrop window as
torchvision samples it, the timing and the --json output.

Timing starts just before the loader is built (imports and file listing
excluded) and ends with the last batch, as torch_dataloader.py and `sluice
bench` time: start-up (worker processes, graph tracing, pipeline building)
is part of every run. Excluding the first batch instead would favour a
loader that shuffles decoded images (tf.data as the team wrote it): its
first batch decodes the whole shuffle buffer, and those images would then
arrive for free."""

import argparse
import json
import math
import os
import random
import time

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def parse_args(doc, data_help):
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help=data_help)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batches", type=int, default=-1, help="stop after N batches (all epochs)")
    ap.add_argument("--json")
    return ap


def random_resized_crop(width, height, rng, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """(x, y, w, h) of a crop covering scale of the area with an aspect ratio
    in ratio (log-uniform), ten tries, then the central crop that fits the
    ratio range: the window torchvision's RandomResizedCrop samples."""
    area = width * height
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(*log_ratio))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, width - w), rng.randint(0, height - h), w, h
    aspect = width / height
    if aspect < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif aspect > ratio[1]:
        w, h = int(round(height * ratio[1])), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def image_folder(root):
    """[(path, label)] of an ImageFolder tree, classes in sorted order."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    return [(os.path.join(root, c, f), label) for label, c in enumerate(classes)
            for f in sorted(os.listdir(os.path.join(root, c)))]


def record_files(root):
    """sluice's shards in a dataset folder, with the .idx beside each."""
    files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".tfrecord"))
    return files, [f[: -len(".tfrecord")] + ".idx" for f in files]


class Timer:
    """Counts images and batches from its creation: make it just before the
    loader."""

    def __init__(self, args):
        self.args, self.images, self.batches = args, 0, 0
        self.t0 = time.perf_counter()

    def add(self, n):
        """Adds a batch of n; False once --batches is reached."""
        self.images += n
        self.batches += 1
        return self.args.batches < 0 or self.batches < self.args.batches

    def report(self, name, versions):
        secs = time.perf_counter() - self.t0
        ips = self.images / secs if secs > 0 else 0.0
        v = ", ".join(f"{k} {val}" for k, val in versions.items())
        print(f"{name}: {self.images} images in {self.batches} batches, {secs:.2f} s: "
              f"{ips:.0f} images/s ({self.args.workers} workers; {v})", flush=True)
        if self.args.json:
            with open(self.args.json, "w") as f:
                json.dump({"images_per_second": ips, "images": self.images, "seconds": secs,
                           "workers": self.args.workers, "versions": versions}, f)


def seeded_rng():
    return random.Random(int.from_bytes(os.urandom(8), "little"))
