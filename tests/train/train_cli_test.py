"""`sluice train` and `sluice extract` as a user runs them: real processes,
real shards, Ctrl-C, and the outputs read back by NumPy and a TensorBoard
reader of our own (tests/cli/tfrecord_py.py).

Run by CTest with SLUICE_BIN (the sluice binary, which hands these commands
to sluice-train) and Debian's python3 (numpy from python3-numpy)."""

import json
import os
import re
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

    def test_kill_9_mid_epoch_then_resume_equals_an_uninterrupted_run(self):
        """kill -9 of the launcher and both Gloo ranks inside an epoch, then
        --resume: the continued run's losses, step by step, and its final
        weights (through the features they give) equal an uninterrupted run's."""
        common = [a if a != "8" else "4" for a in self.common]  # --batch 4 a rank
        # 48 images, 2 ranks x 4: 6 steps an epoch; a checkpoint every 3
        # steps puts one inside each epoch.
        args = [*common, "--procs", "2", "--epochs", "3", "--checkpoint-every", "3",
                "--log-every", "1"]

        def losses(logdir):
            out = {}
            with open(os.path.join(logdir, "train.jsonl")) as f:
                for line in f:
                    rec = json.loads(line)
                    if "train/loss" in rec:
                        out[rec["step"]] = rec["train/loss"]
            return out

        def features(ckpt, name):
            out = os.path.join(self.tmp, name + ".npy")
            run("extract", self.data, "--split", "val", "--weights", os.path.join(ckpt, "last.pt"),
                "--out", out, "--threads", "1", "-q", check=0)
            return np.load(out)

        whole_ckpt = os.path.join(self.tmp, "ckpt-whole")
        whole_logs = os.path.join(self.tmp, "logs-whole")
        run("train", self.data, *args, "--checkpoint-dir", whole_ckpt, "--logdir", whole_logs,
            check=0)
        whole = losses(whole_logs)
        self.assertEqual(sorted(whole), list(range(1, 19)))

        ckpt = os.path.join(self.tmp, "ckpt-killed")
        proc = subprocess.Popen([SLUICE, "train", self.data, *args, "--checkpoint-dir", ckpt,
                                 "--logdir", os.path.join(self.tmp, "logs-killed")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        # Past the checkpoint of step 3, well before the epoch's end (6).
        wait_for_steps(self, proc, 4)
        os.killpg(proc.pid, signal.SIGKILL)  # the launcher and every rank
        proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, -signal.SIGKILL)

        logs = os.path.join(self.tmp, "logs-resumed")
        p = run("train", self.data, *args, "--checkpoint-dir", ckpt, "--logdir", logs,
                "--resume", check=0)
        m = re.search(r"resumed from .* at epoch (\d+), batch (\d+) \(step (\d+)\)", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        self.assertGreater(int(m.group(2)), 0, "the kill did not land inside an epoch")
        print(f"killed; resumed at epoch {m.group(1)}, batch {m.group(2)}, step {m.group(3)}", file=sys.stderr)
        resumed = losses(logs)
        step = int(m.group(3))
        self.assertEqual(sorted(resumed), list(range(step + 1, 19)))
        for s in resumed:
            self.assertEqual(resumed[s], whole[s], f"loss at step {s}")
        self.assertTrue(np.array_equal(features(whole_ckpt, "whole"), features(ckpt, "resumed")))
        self.assertEqual(os.listdir(ckpt), ["last.pt"])  # no temporary left behind

    def mount_tmpfs(self, name, size):
        """A tmpfs of `size` at a fresh folder, unmounted after the test;
        skips the test without root."""
        if os.geteuid() != 0:
            self.skipTest("mounting a tmpfs needs root")
        disk = os.path.join(self.tmp, name)
        os.makedirs(disk)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", disk],
                          capture_output=True).returncode != 0:
            self.skipTest("cannot mount a tmpfs here")
        self.addCleanup(subprocess.run, ["umount", disk], check=True)
        return disk

    def test_checkpoints_onto_a_full_disk_fail_clearly_and_keep_the_last_one(self):
        # seed-cnn at 16x16 is a 33.6 MB checkpoint: 48 MB holds one, not the
        # second beside it (written whole to a temporary, then renamed).
        disk = self.mount_tmpfs("full-ckpt", "48m")
        ckpt = os.path.join(disk, "ckpt")
        p = run("train", self.data, *self.common, "--epochs", "3", "--checkpoint-dir", ckpt,
                check=1)
        self.assertRegex(p.stderr, re.escape(ckpt) + r"/last\.pt\S*: write: No space left on device")
        self.assertEqual(os.listdir(ckpt), ["last.pt"])  # the temporary is gone
        # The first epoch's checkpoint is whole: a resume goes on from it.
        os.makedirs(os.path.join(self.tmp, "ckpt-rescued"))
        shutil.copy(os.path.join(ckpt, "last.pt"), os.path.join(self.tmp, "ckpt-rescued"))
        p = run("train", self.data, *self.common, "--epochs", "2", "--resume",
                "--checkpoint-dir", os.path.join(self.tmp, "ckpt-rescued"), check=0)
        self.assertIn("resumed from", p.stdout)
        self.assertIn("at epoch 2", p.stdout)

    def test_logs_onto_a_full_disk_warn_once_and_training_goes_on(self):
        disk = self.mount_tmpfs("full-logs", "8k")
        logs = os.path.join(disk, "logs")
        ckpt = os.path.join(self.tmp, "ckpt-full-logs")
        p = run("train", self.data, *self.common, "--epochs", "4", "--log-every", "1",
                "--logdir", logs, "--checkpoint-dir", ckpt, check=0)
        warnings = [line for line in p.stderr.splitlines() if "the logs stop here" in line]
        self.assertEqual(len(warnings), 1, p.stderr)
        self.assertRegex(warnings[0], re.escape(logs) + r"/\S+: write: No space left on device")
        self.assertIn("epoch 4/4", p.stdout)
        self.assertTrue(os.path.exists(os.path.join(ckpt, "last.pt")))

    def test_the_trainer_lists_what_each_option_takes(self):
        # What `sluice train --ablation` reads instead of a copy of the flags.
        trainer = os.path.join(os.path.dirname(SLUICE), "..", "train", "sluice-train")
        p = subprocess.run([trainer, "train", "--list-options"], capture_output=True, text=True,
                           check=True)
        takes = dict(line.split(" ", 1) for line in p.stdout.splitlines())
        for name, what in (("--resume", "flag"), ("--nesterov", "flag"), ("-q", "flag"),
                           ("--no-val", "flag"), ("--epochs", "value"), ("--batch", "value"),
                           ("--val", "values")):
            self.assertEqual(takes.get(name), what, name)
        # And the ladder refuses what the trainer does not know, before any rung.
        p = run("train", self.data, "--ablation", "--no-such-option", "3", check=2)
        self.assertIn("--no-such-option: not an option of sluice train", p.stderr)

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
