#!/usr/bin/python3
"""The loader users would pick instead: PyTorch's DataLoader over a
torchvision ImageFolder with the standard ImageNet training transforms
(RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize), batch
256, workers = cores. Prints images/s over the same images sluice reads.

    bench/peers/torch_dataloader.py IMAGE_FOLDER [--batch 256] [--size 224]
        [--workers N] [--epochs 1] [--batches N] [--json FILE]

Uses Debian's python3-torch, python3-torchvision and python3-pil."""

import argparse
import json
import os
import time

import torch
import torchvision
from torchvision import transforms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batches", type=int, default=-1)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(a.size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    ds = torchvision.datasets.ImageFolder(a.data, transform=tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                                     drop_last=True, persistent_workers=a.workers > 0,
                                     prefetch_factor=2 if a.workers > 0 else None)
    images = batches = 0
    t0 = time.perf_counter()
    for _ in range(a.epochs):
        for x, y in dl:
            images += x.shape[0]
            batches += 1
            if a.batches >= 0 and batches >= a.batches:
                break
        if a.batches >= 0 and batches >= a.batches:
            break
    secs = time.perf_counter() - t0
    ips = images / secs if secs > 0 else 0.0
    print(f"torch DataLoader: {images} images in {batches} batches, {secs:.2f} s: {ips:.0f} images/s "
          f"({a.workers} workers, torch {torch.__version__}, torchvision {torchvision.__version__})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"images_per_second": ips, "images": images, "seconds": secs, "workers": a.workers}, f)


if __name__ == "__main__":
    main()
