#!/usr/bin/python3
"""Train a ResNet-18 (torchvision) on sluice shards: a complete script to copy.

    python3 examples/pytorch_train.py SHARDS [--epochs 10] [--batch 256] [--size 224]
    torchrun --nproc_per_node=4 examples/pytorch_train.py SHARDS        # several GPUs

- Batches come from sluice.Pipeline as DLPack tensors (no copy); labels as NumPy.
- Mixed precision (bfloat16 autocast) where a GPU exists; float32 on the CPU.
- Under torchrun (RANK/WORLD_SIZE/LOCAL_RANK set) it wraps the model in
  DistributedDataParallel and gives each rank's pipeline its rank, so every
  rank reads a disjoint, equal part of each epoch.
- Checkpoints (model, optimiser, pipeline state) every epoch; --resume continues.
"""
import argparse
import contextlib
import os
import time

import torch
import torch.distributed as dist
import torchvision

import sluice


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data", help="dataset folder written by `sluice convert`")
    ap.add_argument("--val", help="validation split name in the same folder (e.g. val)")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--workers", default="auto")
    ap.add_argument("--checkpoint", default="checkpoint.pt")
    ap.add_argument("--resume", action="store_true")
    a = ap.parse_args()

    distributed = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    rank = int(os.environ.get("RANK", 0))
    world = int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    cuda = torch.cuda.is_available()
    device = torch.device(f"cuda:{local_rank}" if cuda else "cpu")
    if distributed:
        dist.init_process_group("nccl" if cuda else "gloo")
    if cuda:
        torch.cuda.set_device(device)

    pipe = sluice.Pipeline(a.data, batch_size=a.batch, image_size=a.size, augment="train",
                           order="global", seed=0, rank=rank, world_size=world,
                           dtype="bfloat16" if cuda else "float32", layout="NCHW", workers=a.workers)
    classes = len(pipe.classes) or 1000
    model = torchvision.models.resnet18(num_classes=classes).to(device)
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.epochs * len(pipe))
    loss_fn = torch.nn.CrossEntropyLoss()

    start_epoch = 0
    if a.resume and os.path.exists(a.checkpoint):
        ck = torch.load(a.checkpoint, map_location=device)
        (model.module if distributed else model).load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        pipe.load_state_dict(ck["pipeline"])
        start_epoch = ck["pipeline"]["epoch"]

    for epoch in range(start_epoch, a.epochs):
        if epoch != start_epoch or not a.resume:
            pipe.set_epoch(epoch)
        model.train()
        seen, correct, t0 = 0, 0, time.perf_counter()
        for images, labels in pipe:
            x = torch.from_dlpack(images).to(device, non_blocking=True)
            y = torch.from_numpy(labels).to(device, non_blocking=True)
            amp = torch.autocast(device_type="cuda", dtype=torch.bfloat16) if cuda else contextlib.nullcontext()
            with amp:
                out = model(x if cuda else x.float())
                loss = loss_fn(out.float(), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            seen += len(y)
            correct += (out.argmax(1) == y).sum().item()
        secs = time.perf_counter() - t0
        if rank == 0:
            s = pipe.stats()
            print(f"epoch {epoch}: loss {loss.item():.3f}, train acc {correct / max(seen, 1):.3f}, "
                  f"{seen * world / secs:.0f} images/s; input: {s['verdict']}")
            torch.save({"model": (model.module if distributed else model).state_dict(),
                        "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                        "pipeline": {"epoch": epoch + 1, "batches": 0}}, a.checkpoint + ".tmp")
            os.replace(a.checkpoint + ".tmp", a.checkpoint)

    if a.val and rank == 0:
        val = sluice.Pipeline(a.data, split=a.val, batch_size=a.batch, image_size=a.size, augment="eval",
                              order="none", dtype="float32", drop_last=False)
        model.eval()
        right = total = 0
        with torch.no_grad():
            for images, labels in val:
                out = model(torch.from_dlpack(images).to(device))
                right += (out.argmax(1).cpu() == torch.from_numpy(labels)).sum().item()
                total += len(labels)
        print(f"validation accuracy {right / max(total, 1):.3f} on {total} images")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
