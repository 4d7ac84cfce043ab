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
echo "== 4. sluice bench --ablation: the ladder from raw files to shards with crop decode"
"$sluice" bench "$work/shards" --ablation --batch 64 --size 56 --batches 20

echo
echo "Shards are in $work/shards; TensorFlow reads them with tf.data.TFRecordDataset."
