"""`sluice train DATA --ablation`: the ladder run as a user runs it, each rung
a real sluice-train process on real shards and a real image folder. On a
machine without a GPU rungs 1-3 run on the CPU and 4-5 say why not; on one
with GPUs the test asks for --device cpu, so the same rungs run everywhere.
Timings are printed, never asserted.

Run by CTest with SLUICE_BIN and Debian's python3."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

SLUICE = os.environ["SLUICE_BIN"]
FAKE_NVML = os.environ.get("SLUICE_FAKE_NVML")
FAKE_NVJPEG = os.environ.get("SLUICE_FAKE_NVJPEG")
LADDER_FIELDS = ("epoch_seconds", "images_per_second", "speedup", "gpu_busy_percent",
                 "cpu_cores_busy", "cpu_busy_percent", "data_wait_share")
SUMMARY_FIELDS = ("images", "seconds", "images_per_second", "epoch_seconds",
                  "epoch_seconds_projected", "data_wait_share", "cpu_cores_busy",
                  "gpu_busy_percent", "world_size", "device", "amp")


def run(*args, check=None, timeout=300):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError(f"sluice {' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


class TrainAblationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sluice-ablation-")
        images = os.path.join(cls.tmp, "images")
        run("synth", images, "--classes", "3", "--per-class", "12", "--val-per-class", "2",
            "--size", "24", check=0)
        cls.raw = os.path.join(images, "train")
        cls.data = os.path.join(cls.tmp, "shards")
        run("convert", cls.raw, "-o", cls.data, "--split", "train", "-q", check=0)
        doctor = json.loads(run("doctor", "--json", check=0).stdout)
        cls.has_gpu = bool(doctor["gpu"]["devices"])
        cls.common = ["--model", "seed-cnn", "--size", "16", "--batch", "8", "--threads", "1",
                      "--lr", "0.02", "--max-steps", "3"]
        if cls.has_gpu:
            cls.common += ["--device", "cpu"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_ladder_on_the_cpu(self):
        out = os.path.join(self.tmp, "ladder.json")
        report = os.path.join(self.tmp, "ladder.html")
        p = run("train", self.data, "--ablation", *self.common, "--json", out, "--report", report,
                check=0)
        print(p.stdout)
        self.assertIn("ablation: 3 steps at most per rung, on cpu", p.stdout)
        for col in ("epoch time", "images/s", "speed-up", "GPU busy", "CPU busy", "data wait"):
            self.assertIn(col, p.stdout.splitlines()[1])
        for n in (1, 2, 3):
            self.assertRegex(p.stdout, r"(?m)^%d .*\d+ %%\s*$" % n)  # a row of figures
        gpu_reason = "--device cpu" if self.has_gpu else "no GPU"
        self.assertIn(f"4 + all local GPUs", p.stdout)
        self.assertRegex(p.stdout, r"4 \+ all local GPUs\s+\(skipped: %s\)" % re.escape(gpu_reason))
        self.assertRegex(p.stdout, r"5 \+ GPU decode\s+\(skipped: %s\)" % re.escape(gpu_reason))
        self.assertIn(f"report: {report}", p.stdout)
        # Each rung's own output goes to stderr, under its name.
        self.assertIn("[rung 1] train: seed-cnn on cpu", p.stderr)
        self.assertIn("[rung 3] train: seed-cnn on cpu", p.stderr)
        self.assertIn("amp bf16", [l for l in p.stderr.splitlines() if l.startswith("[rung 3] train:")][0])

        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["format"], "sluice train ablation 1")
        self.assertEqual(os.path.realpath(doc["raw"]), os.path.realpath(self.raw))
        rungs = doc["rungs"]
        self.assertEqual([r["rung"] for r in rungs], [1, 2, 3, 4, 5])
        for r in rungs[:3]:
            self.assertIsNone(r["skipped"], r)
            for field in LADDER_FIELDS:
                self.assertIn(field, r)
            self.assertGreater(r["images_per_second"], 0)
            self.assertTrue(r["epoch_projected"])  # 3 steps do not make an epoch
            self.assertIsNone(r["gpu_busy_percent"])  # no GPU used: n/a
            s = r["summary"]
            for field in SUMMARY_FIELDS:
                self.assertIn(field, s)
            self.assertEqual(s["steps"], 3)
            self.assertEqual(s["images"], 24)
            self.assertEqual(s["device"], "cpu")
            self.assertEqual(s["world_size"], 1)
            self.assertIsNone(s["gpu_busy_percent"])
            self.assertIsNone(s["epoch_seconds"])  # no whole epoch ran
            self.assertGreaterEqual(s["data_wait_share"], 0)
            self.assertLessEqual(s["data_wait_share"], 1)
        self.assertAlmostEqual(rungs[0]["speedup"], 1.0)
        # Rung 1 read the image folder itself, one worker, no prefetch, fp32.
        one = rungs[0]
        self.assertEqual([os.path.realpath(d) for d in one["summary"]["data"]],
                         [os.path.realpath(self.raw)])
        self.assertFalse(os.path.exists(os.path.join(self.raw, "dataset.json")))
        self.assertEqual(one["summary"]["amp"], "off")
        self.assertRegex(one["summary"]["pipeline"], r"workers 1 .*prefetch 1")
        self.assertEqual(rungs[1]["summary"]["data"], [self.data])
        self.assertEqual(rungs[1]["summary"]["amp"], "off")
        self.assertEqual(rungs[2]["summary"]["amp"], "bf16")
        for r in rungs[3:]:
            self.assertEqual(r["skipped"], gpu_reason)
            self.assertIsNone(r["images_per_second"])

        with open(report) as f:
            page = f.read()
        self.assertIn("<title>sluice train ablation", page)
        for n, name in ((1, "raw image files, no prefetch, fp32"),
                        (2, "shards + parallel decode + prefetch"), (3, "+ mixed precision (bf16)")):
            self.assertRegex(page, r"<tr><td>%d %s<div class=\"note\">" % (n, re.escape(name)))
        self.assertIn("<div class=\"note\">image folder " + self.raw, page)
        self.assertEqual(page.count("<td class=\"num\">n/a</td>"), 3)  # GPU busy of rungs 1-3
        self.assertIn("<tr class=\"skipped\"><td>4 + all local GPUs</td><td class=\"num\">&ndash;"
                      f"</td><td colspan=\"6\">{gpu_reason}</td>", page)
        self.assertIn('<section id="machine"', page)
        self.assertNotIn('<section id="throughput"', page)  # no bench run to chart

    def test_dataset_whose_image_folder_is_gone(self):
        """Rung 1 has nothing to read: it says so, and the rest runs."""
        images = os.path.join(self.tmp, "gone")
        shutil.copytree(self.raw, images)
        data = os.path.join(self.tmp, "shards-gone")
        run("convert", images, "-o", data, "-q", check=0)
        shutil.rmtree(images)
        out = os.path.join(self.tmp, "gone.json")
        p = run("train", data, "--ablation", *self.common, "--json", out, check=0)
        reason = f"no image folder: dataset.json's source {images} is not a folder; give --raw DIR"
        self.assertIn(f"(skipped: {reason})", p.stdout)
        with open(out) as f:
            rungs = json.load(f)["rungs"]
        self.assertEqual(rungs[0]["skipped"], reason)
        self.assertIsNone(rungs[1]["skipped"])
        self.assertEqual(rungs[1]["speedup"], 1.0)  # against the first rung that ran

    @unittest.skipUnless(FAKE_NVML and FAKE_NVJPEG, "SLUICE_FAKE_NVML/NVJPEG not set (CTest sets them)")
    def test_plan_on_a_machine_with_two_gpus(self):
        """The fake driver shows two GPUs: every rung goes to CUDA, rung 4 takes both, rung 5
        decodes on them. This LibTorch may have no CUDA: then each rung fails with the
        trainer's reason, and the ladder goes on to the next."""
        env = dict(os.environ, SLUICE_NVML_LIBRARY=FAKE_NVML, SLUICE_NVJPEG_LIBRARY=FAKE_NVJPEG)
        env.pop("CUDA_VISIBLE_DEVICES", None)
        out = os.path.join(self.tmp, "gpus.json")
        common = [a for a in self.common if a not in ("--device", "cpu")]
        p = subprocess.run([SLUICE, "train", self.data, "--ablation", *common, "--json", out],
                           capture_output=True, text=True, timeout=300, env=env)
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        self.assertIn("on cuda", p.stdout)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["gpus"], 2)
        rungs = doc["rungs"]
        def after(args, flag):
            return args[args.index(flag) + 1]
        for r in rungs[:3]:
            self.assertEqual(after(r["args"], "--device"), "cuda")
            self.assertEqual(after(r["args"], "--gpu-decode"), "off")
        self.assertEqual(after(rungs[3]["args"], "--gpus"), "2")
        self.assertEqual(after(rungs[4]["args"], "--gpus"), "2")
        self.assertEqual(after(rungs[4]["args"], "--gpu-decode"), "on")
        self.assertEqual(after(rungs[4]["args"], "--amp"), "bf16")
        for r in rungs:
            if r["skipped"] is not None:  # a CPU-only LibTorch
                self.assertRegex(r["skipped"], r"^failed \(exit 1\): .*CUDA")

    def test_bad_usage(self):
        p = run("train", self.data, "--ablation", "--amp", "bf16", check=2)
        self.assertIn("--amp: set per rung by --ablation", p.stderr)
        p = run("train", "--ablation", "--model", "seed-cnn", check=2)
        self.assertIn("--ablation: give DATA", p.stderr)
        missing = os.path.join(self.tmp, "no-such-folder", "r.html")
        p = run("train", self.data, "--ablation", "--report", missing, check=1)
        self.assertIn(f"--report {missing}: cannot be written", p.stderr)
        self.assertNotIn("rung", p.stdout)
        # sluice-train itself points to the plain command.
        trainer = os.path.join(os.path.dirname(os.path.dirname(SLUICE)), "train", "sluice-train")
        if os.path.exists(trainer):
            q = subprocess.run([trainer, "train", self.data, "--ablation"], capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(q.returncode, 2)
            self.assertIn("run `sluice train DATA --ablation ...`", q.stderr)

    def test_a_failing_rung_stops_the_ladder_with_its_reason(self):
        args = [a for a in self.common if a != "seed-cnn" and a != "--model"]
        p = run("train", self.data, "--ablation", *args, "--model", "nope", check=2)
        self.assertRegex(p.stdout, r"1 raw image files, no prefetch, fp32\s+\(failed "
                                   r"\(exit 2\): --model: unknown model 'nope'")
        self.assertNotIn("\n2 ", p.stdout)  # the same arguments would fail every rung


if __name__ == "__main__":
    unittest.main(verbosity=2)
