"""`sluice train` and `sluice extract` as a user runs them: real processes,
real shards, Ctrl-C, and the outputs read back by NumPy and a TensorBoard
reader of our own (tests/cli/tfrecord_py.py).

Run by CTest with SLUICE_BIN (the sluice binary, which hands these commands
to sluice-train) and Debian's python3 (numpy from python3-numpy)."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import tfrecord_py  # noqa: E402

SLUICE = os.environ["SLUICE_BIN"]


def run(*args, check=None, timeout=300):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError(f"sluice {' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def event_tags(logdir):
    """Every scalar tag in the TensorBoard event files under logdir."""
    tags = set()
    for name in os.listdir(logdir):
        if not name.startswith("events.out.tfevents."):
            continue
        for _, record in tfrecord_py.read_records(os.path.join(logdir, name)):
            # Event.summary (5) -> Summary.value (1) -> Value.tag (1)
            for field, _, value in tfrecord_py._fields(record):
                if field != 5:
                    continue
                for f2, _, v2 in tfrecord_py._fields(value):
                    if f2 != 1:
                        continue
                    for f3, _, v3 in tfrecord_py._fields(v2):
                        if f3 == 1:
                            tags.add(v3.decode())
    return tags


def wait_for_steps(test, proc, steps):
    """Reads proc's stderr until `steps` step lines have gone by."""
    seen = 0
    deadline = time.time() + 120
    while seen < steps and time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if " step " in line:
            seen += 1
    test.assertEqual(seen, steps, "no step lines")


class TrainCliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sluice-train-cli-")
        images = os.path.join(cls.tmp, "images")
        run("synth", images, "--classes", "3", "--per-class", "16", "--val-per-class", "6",
            "--size", "32", check=0)
        cls.data = os.path.join(cls.tmp, "shards")
        run("convert", os.path.join(images, "train"), "-o", cls.data, "--split", "train", "-q", check=0)
        run("convert", os.path.join(images, "val"), "-o", cls.data, "--split", "val", "-q", check=0)
        cls.common = ["--model", "seed-cnn", "--size", "16", "--batch", "8", "--threads", "1",
                      "--workers", "1", "--lr", "0.02"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_train_then_extract_read_back_by_numpy(self):
        logs = os.path.join(self.tmp, "logs")
        ckpt = os.path.join(self.tmp, "ckpt")
        p = run("train", self.data, *self.common, "--epochs", "2", "--logdir", logs,
                "--checkpoint-dir", ckpt, check=0)
        self.assertIn("epoch 2/2", p.stdout)
        self.assertIn("held-out accuracy:", p.stdout)  # the dataset's val split, found by itself
        self.assertTrue(os.path.exists(os.path.join(ckpt, "last.pt")))
        tags = event_tags(logs)
        for tag in ("train/loss", "train/accuracy", "train/lr", "train/images_per_second",
                    "train/data_wait_share", "train/process_cpu_cores", "epoch/loss",
                    "epoch/val_accuracy", "epoch/val_loss"):
            self.assertIn(tag, tags)

        out = os.path.join(self.tmp, "val.npy")
        p = run("extract", self.data, "--split", "val", "--weights", os.path.join(ckpt, "last.pt"),
                "--out", out, check=0)
        features = np.load(out)
        labels = np.load(os.path.join(self.tmp, "val.labels.npy"))
        keys = np.load(os.path.join(self.tmp, "val.keys.npy"))
        self.assertEqual(features.shape, (18, 1024))
        self.assertEqual(features.dtype, np.float32)
        self.assertTrue(np.isfinite(features).all())
        self.assertEqual(labels.dtype, np.int64)
        self.assertEqual(sorted(labels.tolist()), [0] * 6 + [1] * 6 + [2] * 6)
        self.assertEqual(len(keys), 18)
        self.assertTrue(all(k.endswith((".jpg", ".png")) for k in keys.tolist()))
        self.assertEqual(len(set(keys.tolist())), 18)

        half = os.path.join(self.tmp, "half.npy")
        run("extract", self.data, "--split", "val", "--weights", os.path.join(ckpt, "last.pt"),
            "--out", half, "--features", "float16", "--layer", "conv", "-q", check=0)
        h = np.load(half)
        self.assertEqual(h.dtype, np.float16)
        self.assertEqual(h.shape, (18, 64))

    def test_ctrl_c_flushes_a_checkpoint_and_resume_goes_on(self):
        ckpt = os.path.join(self.tmp, "ckpt-int")
        logs = os.path.join(self.tmp, "logs-int")
        proc = subprocess.Popen([SLUICE, "train", self.data, *self.common, "--epochs", "200",
                                 "--log-every", "1", "--checkpoint-dir", ckpt, "--logdir", logs],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_steps(self, proc, 3)  # then Ctrl-C
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("stopped at epoch", out)
        self.assertIn("checkpoint", out)
        self.assertTrue(os.path.exists(os.path.join(ckpt, "last.pt")))
        self.assertTrue(event_tags(logs), "the logs were not flushed")
        p = run("train", self.data, *self.common, "--epochs", "200", "--max-steps", "12",
                "--checkpoint-dir", ckpt, "--resume", check=0)
        self.assertIn("resumed from", p.stdout)
        self.assertIn("stopped at", p.stdout)

    def test_ctrl_c_stops_every_rank_of_the_launcher_at_one_step(self):
        ckpt = os.path.join(self.tmp, "ckpt-ranks")
        common = [a if a != "8" else "4" for a in self.common]  # --batch 4 a rank
        proc = subprocess.Popen([SLUICE, "train", self.data, *common,
                                 "--procs", "2", "--epochs", "200", "--log-every", "1",
                                 "--checkpoint-dir", ckpt],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_steps(self, proc, 3)
        proc.send_signal(signal.SIGINT)  # the launcher passes it on to each rank once
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 130, err)
        self.assertIn("stopped at epoch", out)
        self.assertTrue(os.path.exists(os.path.join(ckpt, "last.pt")))
        p = run("train", self.data, *common, "--procs", "2", "--epochs", "200",
                "--max-steps", "30", "--checkpoint-dir", ckpt, "--resume", check=0)
        self.assertIn("resumed from", p.stdout)

    def test_doctor_finds_the_trainers_libtorch(self):
        p = run("doctor", "--require", "torch", check=0)
        self.assertRegex(p.stdout, r"ok +library +sluice-train [0-9.]+, LibTorch [0-9.]+")

    def test_top_shows_a_training_job(self):
        status = os.path.join(self.tmp, "train.status")
        run("train", self.data, *self.common, "--epochs", "1", "--status", status, "-q", check=0)
        p = run("top", status, "--once", check=0)
        self.assertIn("training    epoch 1 of 1", p.stdout)
        self.assertIn("data wait", p.stdout)
        self.assertIn("images/s", p.stdout)
        self.assertIn("finished", p.stdout)

    def test_bad_usage_says_what_and_exits_2(self):
        p = run("train", self.data, "--amp", "fp8")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--amp", p.stderr)
        p = run("train", self.data, "--model", "lenet")
        self.assertEqual(p.returncode, 2)
        self.assertIn("lenet", p.stderr)
        p = run("train", os.path.join(self.tmp, "nowhere"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("nowhere", p.stderr)
        p = run("extract", self.data, "--weights", os.path.join(self.tmp, "nope.pt"), "--out",
                os.path.join(self.tmp, "x.npy"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("nope.pt", p.stderr)
        # A rank that fails takes the launcher down with its status.
        p = run("train", self.data, "--procs", "2", "--lr", "-1", timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--lr", p.stderr)
        p = run("train", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("--checkpoint-dir", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
