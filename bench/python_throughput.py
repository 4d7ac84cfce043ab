#!/usr/bin/python3
"""Throughput of the same pipeline from Python and from `sluice bench`, in one run.

    PYTHONPATH=build/release/python bench/python_throughput.py SHARDS [--batch 256] [--size 224]

Python's loop touches every batch the way a training loop does (torch.from_dlpack),
so the difference is what the module and the GIL cost. Target: within 5 %."""
import argparse
import json
import os
import subprocess
import tempfile
import time

import torch

import sluice


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--sluice", default=os.path.join(os.path.dirname(__file__), "..", "build", "release", "src",
                                                    "cli", "sluice"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "b.json")
        subprocess.run([a.sluice, "bench", a.data, "--batch", str(a.batch), "--size", str(a.size), "--epochs",
                        str(a.epochs), "--json", out, "-q"], check=True)
        cpp = json.load(open(out))["images_per_second"]
    pipe = sluice.Pipeline(a.data, batch_size=a.batch, image_size=a.size)
    images_seen = 0
    t0 = time.perf_counter()
    for epoch in range(a.epochs):
        pipe.set_epoch(epoch)
        for images, labels in pipe:
            t = torch.from_dlpack(images)
            images_seen += t.shape[0]
    py = images_seen / (time.perf_counter() - t0)
    print(f"C++ sluice bench: {cpp:.0f} images/s; Python loop: {py:.0f} images/s ({100 * (py / cpp - 1):+.1f} %)")


if __name__ == "__main__":
    main()
