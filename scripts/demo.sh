#!/usr/bin/env bash
# The built-in default job behind `make demo`: render a small synthetic
# image dataset with sluice's own generator, convert it into shards, and
# print what `sluice inspect` sees. Usage: demo.sh SLUICE_BINARY WORK_DIR
set -euo pipefail
sluice="$1"
work="$2"
rm -rf "$work"
mkdir -p "$work"

echo "== 1. sluice synth: 10 classes of shapes, rendered to JPEG and PNG"
"$sluice" synth "$work/images" --classes 10 --per-class 200 --val-per-class 40 --size 64

echo
echo "== 2. sluice convert: ImageFolder -> TFRecord shards + .idx + dataset.json"
"$sluice" convert "$work/images/train" -o "$work/shards" --split train --shards 4
"$sluice" convert "$work/images/val" -o "$work/shards" --split val --shards 1

echo
echo "== 3. sluice inspect --verify"
"$sluice" inspect --verify "$work/shards"

echo
echo "== 4. sluice train: a ResNet-18 on the CPU, fed by the pipeline, tested on the val split"
if ! "$sluice" train --help >/dev/null 2>&1; then
  echo "(skipped: this sluice was built without LibTorch; scripts/bootstrap.sh installs it)"
else
"$sluice" train "$work/shards" --model resnet18 --size 32 --batch 64 --epochs 10 \
  --lr 0.02 --warmup 1 --crop-scale 0.35,1 --log-every 1000 \
  --logdir "$work/logs" --checkpoint-dir "$work/checkpoints"

echo
echo "== 5. sluice extract: the trained model's features of the val images, for NumPy"
"$sluice" extract "$work/shards" --split val --weights "$work/checkpoints/last.pt" \
  --out "$work/features/val.npy"
fi

echo
echo "== 6. sluice bench --ablation: the ladder from raw files to shards with crop decode"
"$sluice" bench "$work/shards" --ablation --batch 64 --size 56 --batches 20

echo
echo "Shards are in $work/shards; TensorFlow reads them with tf.data.TFRecordDataset."
echo "TensorBoard: tensorboard --logdir $work/logs"
