"""sluice: keeps GPUs fed for image training and feature extraction.

    import sluice, torch
    pipe = sluice.Pipeline("shards/", batch_size=256, image_size=224, augment="train",
                           order="global", seed=0, rank=0, world_size=1,
                           dtype="float16", layout="NCHW", device="cpu")
    for epoch in range(10):
        pipe.set_epoch(epoch)
        for images, labels in pipe:
            images = torch.from_dlpack(images)   # zero-copy
            labels = torch.from_numpy(labels)

The pipeline runs in C++ threads; the GIL is released while waiting for a
batch and during I/O and decoding.
"""

from ._sluice import (PIPELINE_OPTIONS, Batch, DataError, Pipeline, __version__, convert,
                      finish_convert, inspect)

__all__ = ["Pipeline", "Batch", "DataError", "convert", "finish_convert", "inspect",
           "PIPELINE_OPTIONS"]
