"""End-to-end tests of the sluice command line: real processes, real files.

Run by CTest with SLUICE_BIN (the binary) and SLUICE_TEST_DATA (tests/data).
Standard library only."""

import json
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tfrecord_py  # noqa: E402

SLUICE = os.environ["SLUICE_BIN"]
DATA = os.environ["SLUICE_TEST_DATA"]
FAKE_NVML = os.environ.get("SLUICE_FAKE_NVML", "")
CHROMIUM = shutil.which("chromium")
TMUX = shutil.which("tmux")
REPORT_CHARTS = ("chart-throughput", "chart-shares", "chart-stages", "chart-cpu", "chart-queue")


def slurp(path):
    with open(path, "rb") as f:
        return f.read()


def read_png(data):
    """(width, height, pixels) of an 8-bit RGB or RGBA PNG, as Chromium writes
    them; pixels is a list of 3-byte RGB values, row by row."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, []
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG format"
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    bpp = 4 if colour == 6 else 3
    stride = width * bpp
    raw = zlib.decompress(b"".join(idat))
    prev, pixels = bytearray(stride), []
    for y in range(height):
        kind = raw[y * (stride + 1)]
        cur = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride) if kind else ():
            a = cur[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                cur[i] = (cur[i] + a) & 255
            elif kind == 2:
                cur[i] = (cur[i] + b) & 255
            elif kind == 3:
                cur[i] = (cur[i] + ((a + b) >> 1)) & 255
            else:  # Paeth
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels.extend(bytes(cur[x:x + 3]) for x in range(0, stride, bpp))
        prev = cur
    return width, height, pixels


FAKE_GPU_ENV = {k: os.environ.get(v, "") for k, v in (
    ("SLUICE_CUDART_LIBRARY", "SLUICE_FAKE_CUDA"),
    ("SLUICE_KERNELS_LIBRARY", "SLUICE_FAKE_KERNELS"),
    ("SLUICE_NVJPEG_LIBRARY", "SLUICE_FAKE_NVJPEG"))}


def run(*args, check=None, env=None):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **env} if env else None)
    if check is not None:
        assert p.returncode == check, f"{args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


class CliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sluice-cli-")
        cls.images = os.path.join(cls.tmp, "synth")
        run("synth", cls.images, "--classes", "4", "--per-class", "15", "--size", "32", check=0)
        cls.train = os.path.join(cls.images, "train")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def fresh(self, name):
        path = os.path.join(self.tmp, name)
        shutil.rmtree(path, ignore_errors=True)
        return path

    def convert(self, out, *extra, check=0):
        return run("convert", self.train, "-o", out, "-q", *extra, check=check)

    def test_independent_reader_reads_what_convert_writes(self):
        out = self.fresh("indep")
        self.convert(out, "--shards", "3")
        manifest = json.loads(slurp(os.path.join(out, "dataset.json")))
        self.assertEqual(manifest["classes"], ["c00_disc", "c01_square", "c02_triangle", "c03_ring"])
        split = manifest["splits"]["train"]
        self.assertEqual(split["records"], 60)
        labels = []
        for shard in split["shards"]:
            path = os.path.join(out, shard["file"])
            records = list(tfrecord_py.read_records(path))
            self.assertEqual(len(records), shard["records"])
            raw = slurp(path)
            self.assertEqual(len(raw), shard["bytes"])
            self.assertEqual(f"{tfrecord_py.crc32c(raw):08x}", shard["crc32c"])
            idx = [tuple(map(int, line.split())) for line in slurp(os.path.join(out, shard["index"])).splitlines()]
            self.assertEqual(idx, [(off, len(data) + 16) for off, data in records])
            for _, data in records:
                ex = tfrecord_py.parse_example(data)
                kind, (image,) = ex["image/encoded"]
                self.assertEqual(kind, "bytes")
                fmt = ex["image/format"][1][0]
                self.assertIn(fmt, (b"jpeg", b"png"))
                self.assertTrue(image.startswith(b"\xff\xd8" if fmt == b"jpeg" else b"\x89PNG"))
                label = ex["image/class/label"][1][0]
                labels.append(label)
                name = ex["image/filename"][1][0].decode()
                self.assertEqual(slurp(os.path.join(self.train, name)), image)
                self.assertTrue(name.startswith(manifest["classes"][label] + "/"))
        self.assertEqual(sorted(labels), sorted([c for c in range(4) for _ in range(15)]))

    def test_same_bytes_for_any_worker_count(self):
        outs = []
        for w in ("1", "2", "3"):
            out = self.fresh("w" + w)
            self.convert(out, "--workers", w, "--shard-size", "0.05", "--compression", "gzip")
            outs.append(sorted((f, slurp(os.path.join(out, f)))
                               for f in os.listdir(out) if f != "dataset.json"))
        self.assertGreater(len(outs[0]), 2)
        self.assertEqual(outs[0], outs[1])
        self.assertEqual(outs[0], outs[2])

    def test_inspect_summary_and_json(self):
        out = self.fresh("insp")
        self.convert(out)
        p = run("inspect", out, check=0)
        self.assertIn("60 records", p.stdout)
        self.assertIn("no problems found", p.stdout)
        j = json.loads(run("inspect", "--json", "--verify", out, check=0).stdout)
        self.assertTrue(j["ok"])
        self.assertEqual(j["records"], 60)
        self.assertEqual(j["labels"], {"0": 15, "1": 15, "2": 15, "3": 15})

    def damaged_copy(self, damage):
        out = self.fresh("dmg")
        self.convert(out, "--shards", "1")
        shard = os.path.join(out, "train-00000-of-00001.tfrecord")
        raw = bytearray(slurp(shard))
        raw = damage(raw)
        with open(shard, "wb") as f:
            f.write(bytes(raw))
        return out, shard

    def test_inspect_truncated_shard(self):
        out, shard = self.damaged_copy(lambda b: b[:len(b) - 50])
        p = run("inspect", shard, check=1)
        self.assertRegex(p.stderr, r"train-00000-of-00001.tfrecord: offset \d+: truncated record")

    def test_inspect_data_crc_mismatch(self):
        def flip(b):
            b[30] ^= 0xFF
            return b
        out, shard = self.damaged_copy(flip)
        p = run("inspect", out, check=1)
        self.assertIn("train-00000-of-00001.tfrecord: offset 0: data CRC mismatch", p.stderr)

    def test_inspect_length_crc_mismatch(self):
        def flip(b):
            b[9] ^= 0x01
            return b
        out, shard = self.damaged_copy(flip)
        p = run("inspect", shard, check=1)
        self.assertIn("offset 0: length CRC mismatch", p.stderr)

    def test_inspect_huge_length_field(self):
        def huge(b):
            b[0:8] = struct.pack("<Q", 1 << 50)
            b[8:12] = struct.pack("<I", tfrecord_py.masked_crc(bytes(b[0:8])))
            return b
        out, shard = self.damaged_copy(huge)
        p = run("inspect", shard, check=1)
        self.assertIn("offset 0: record of 1125899906842624 bytes is over the limit", p.stderr)

    def test_inspect_payload_not_an_example(self):
        p = run("inspect", os.path.join(DATA, "tfrecord/lingvo/en_fr.tfrecord"), check=0)
        self.assertIn("payload: other x2", p.stdout)
        # Among Examples it is a problem.
        out, shard = self.damaged_copy(lambda b: b)
        lingvo = slurp(os.path.join(DATA, "tfrecord/lingvo/en_fr.tfrecord"))
        with open(shard, "ab") as f:
            f.write(lingvo)
        p = run("inspect", shard, check=1)
        self.assertRegex(p.stderr, r"offset \d+: record is not a tf.train.Example")

    def test_inspect_missing_and_unreadable(self):
        p = run("inspect", os.path.join(self.tmp, "nope.tfrecord"), check=1)
        self.assertIn("nope.tfrecord: no such file or folder", p.stderr)
        empty = self.fresh("emptydir")
        os.makedirs(empty)
        p = run("inspect", empty, check=1)
        self.assertIn("no record files in this folder", p.stderr)
        if os.geteuid() != 0:  # root reads anything
            f = os.path.join(empty, "locked.tfrecord")
            open(f, "wb").close()
            os.chmod(f, 0)
            p = run("inspect", f, check=1)
            self.assertIn("Permission denied", p.stderr)

    def test_inspect_corrupt_third_party_record(self):
        p = run("inspect", os.path.join(DATA, "tfrecord/corrupt/pets_examples.crlf-mangled.record"), check=1)
        self.assertIn("offset 0: data CRC mismatch", p.stderr)
        self.assertIn("offset 18446: length CRC mismatch", p.stderr)

    def test_convert_bad_sources(self):
        out = self.fresh("bad")
        p = run("convert", os.path.join(self.tmp, "missing"), "-o", out, check=1)
        self.assertIn("missing: no such file or folder", p.stderr)
        empty = self.fresh("emptysrc")
        os.makedirs(empty)
        p = run("convert", empty, "-o", out, check=1)
        self.assertIn("no class folders", p.stderr)

    def test_convert_label_outside_class_list(self):
        lst = os.path.join(self.tmp, "list.csv")
        first = sorted(os.listdir(os.path.join(self.train, "c00_disc")))[0]
        with open(lst, "w") as f:
            f.write(f"path,label\nsynth/train/c00_disc/{first},cat\nsynth/train/c00_disc/{first},horse\n")
        classes = os.path.join(self.tmp, "classes.txt")
        with open(classes, "w") as f:
            f.write("cat\ndog\n")
        p = run("convert", lst, "-o", self.fresh("lbl"), "--classes", classes, check=1)
        self.assertIn("list.csv: line 3: label 'horse' is outside the class list", p.stderr)

    def test_convert_on_error_policies(self):
        src = self.fresh("badsrc")
        shutil.copytree(self.train, src)
        shutil.copy(os.path.join(DATA, "images/jpeg/wuffs-peacock.default.truncated.jpeg"),
                    os.path.join(src, "c01_square", "cut.jpg"))
        p = run("convert", src, "-o", self.fresh("pf"), "-q", check=1)
        self.assertIn("cut.jpg", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "pf", "dataset.json")))
        p = run("convert", src, "-o", self.fresh("pw"), "-q", "--on-error", "warn", check=0)
        self.assertIn("warning: skipping", p.stderr)
        self.assertIn("skipped 1 bad file", p.stdout)
        p = run("convert", src, "-o", self.fresh("ps"), "-q", "--on-error", "skip", check=0)
        self.assertNotIn("warning", p.stderr)
        self.assertIn("cut.jpg", p.stdout)

    def test_bad_options(self):
        p = run("convert", self.train, "-o", self.fresh("o"), "--compression", "lz4", check=1)
        self.assertIn("unknown compression 'lz4'", p.stderr)
        p = run("convert", self.train, "-o", self.fresh("o"), "--on-error", "ignore", check=1)
        self.assertIn("unknown error policy", p.stderr)
        self.assertEqual(run("convert", "--no-such-flag").returncode, 2)
        self.assertEqual(run().returncode, 2)

    def bench_digests(self, data, *extra, env=None):
        p = run("bench", data, "--batch", "8", "--size", "24", "--digest", "-q", *extra, check=0,
                env=env)
        lines = [l.split() for l in p.stdout.splitlines() if l.startswith("digest ")]
        per_batch = [l for l in lines if l[1] != "all"]
        total = [l[2] for l in lines if l[1] == "all"]
        return per_batch, total[0] if total else None

    def test_bench_digest_same_for_any_worker_count_and_after_resume(self):
        out = self.fresh("bd")
        self.convert(out, "--shards", "2")
        base, total = self.bench_digests(out, "--workers", "1", "--epochs", "2")
        self.assertEqual(len(base), 14)  # 60 images / 8, two epochs
        for w in ("2", "4"):
            self.assertEqual(self.bench_digests(out, "--workers", w, "--epochs", "2"), (base, total))
        state = os.path.join(self.tmp, "state.json")
        first, _ = self.bench_digests(out, "--epochs", "2", "--batches", "9", "--state-out", state)
        self.assertEqual(json.loads(slurp(state)), {"format": "sluice pipeline state 1", "epoch": 1, "batches": 2})
        rest, _ = self.bench_digests(out, "--epochs", "2", "--state-in", state)
        self.assertEqual(first + rest, base)

    def test_bench_reports_and_json(self):
        out = self.fresh("bj")
        self.convert(out)
        report = os.path.join(self.tmp, "bench.json")
        p = run("bench", out, "--batch", "16", "--size", "32", "--json", report, "--ceiling",
                "--logdir", os.path.join(self.tmp, "tb"), check=0)
        self.assertIn("images/s", p.stdout)
        self.assertIn("verdict: ", p.stdout)
        j = json.loads(slurp(report))
        for key in ("images_per_second", "ceiling_images_per_second", "plan_floor_images_per_second",
                    "workers", "peak_rss_bytes", "stages"):
            self.assertIn(key, j)
        self.assertEqual(j["images"], 48)
        self.assertEqual(set(j["stages"]), {"read", "decode", "augment", "batch", "idle"})
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "tb", "bench.jsonl")))
        events = [f for f in os.listdir(os.path.join(self.tmp, "tb")) if f.startswith("events.out.tfevents.")]
        lines = [json.loads(l) for l in slurp(os.path.join(self.tmp, "tb", "bench.jsonl")).splitlines()]
        for line in lines[:-1]:  # one a second while the run lasts
            self.assertIn("images_per_second", line)
        self.assertEqual(set(lines[-1]), {"step", "time", "images_per_second_total"})
        self.assertEqual(lines[-1]["step"], 3)
        self.assertEqual(len(events), 1)
        records = list(tfrecord_py.read_records(os.path.join(self.tmp, "tb", events[0])))
        self.assertGreaterEqual(len(records), 2)  # file_version + at least the total

    def test_bench_trace(self):
        out = self.fresh("bt")
        self.convert(out)
        trace = os.path.join(self.tmp, "trace.json")
        run("bench", out, "--batch", "16", "--size", "32", "--workers", "2", "--trace", trace, "-q", check=0)
        events = json.loads(slurp(trace))["traceEvents"]
        spans = [e for e in events if e["ph"] == "X"]
        names = {e["name"] for e in spans}
        self.assertTrue({"read", "decode", "augment"} <= names)
        self.assertEqual(len([e for e in spans if e["name"] == "decode"]), 48)  # every sample of 3 batches
        self.assertTrue({e["tid"] for e in spans if e["name"] == "decode"} <= {0, 1})
        self.assertTrue(all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans))
        self.assertIn("consumer", [e["args"]["name"] for e in events if e["ph"] == "M"])

    @unittest.skipUnless(TMUX, "tmux is not installed (scripts/bootstrap.sh installs it)")
    def test_top_in_tmux(self):
        out = self.fresh("tp")
        self.convert(out)
        status = os.path.join(self.tmp, "status.json")
        bench = subprocess.Popen([SLUICE, "bench", out, "--batch", "4", "--size", "64", "--epochs", "400",
                                  "--workers", "1", "--status", status, "-q"], stdout=subprocess.DEVNULL)
        session = f"sluice-top-{os.getpid()}"
        try:
            subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "100", "-y", "30",
                            f"{SLUICE} top {status} --interval 0.2; sleep 30"], check=True)
            screen = ""
            for _ in range(50):
                time.sleep(0.2)
                screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                                        text=True).stdout
                if "decode" in screen:
                    break
            self.assertIn("sluice top", screen)
            self.assertRegex(screen, r"throughput\s+\d+ images/s")
            self.assertRegex(screen, r"decode\s+\d+ %")
            self.assertIn("verdict", screen)
            self.assertEqual(screen.count("sluice top"), 1)  # redrawn in place, not scrolled
        finally:
            bench.kill()
            bench.wait()
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        p = run("top", status, "--once", check=0)
        self.assertIn("throughput", p.stdout)
        self.assertIn("no status file", run("top", os.path.join(self.tmp, "none.json"), "--wait", "0.2",
                                            check=1).stderr)
        odd = os.path.join(self.tmp, "odd-status.json")
        with open(odd, "w") as f:
            json.dump({"job": "bench", "images_per_second": "fast"}, f)
        self.assertIn("odd-status.json: not a sluice status file",
                      run("top", odd, "--once", check=1).stderr)

    def chromium(self, url, *args):
        """Headless Chromium on a fresh profile; its console goes to stderr."""
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.tmp)
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                               "--disable-background-networking", "--disable-component-update",
                               "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                               "--enable-logging=stderr", "--v=0", *args, url],
                              capture_output=True, text=True, timeout=180)

    def console_lines(self, stderr):
        return [l for l in stderr.splitlines() if "CONSOLE" in l]

    @unittest.skipUnless(CHROMIUM, "chromium is not installed (scripts/bootstrap.sh installs it)")
    def test_bench_report_in_headless_chromium(self):
        out = self.fresh("rep")
        self.convert(out)
        folder = self.fresh("report")
        os.makedirs(folder)
        report = os.path.join(folder, "bench report.html")
        p = run("bench", out, "--batch", "8", "--size", "32", "--epochs", "3", "--batches", "6",
                "--ablation", "--report", report, check=0)
        self.assertIn("ablation:", p.stdout)  # the ladder, then the usual run
        self.assertIn(f"report: {report}", p.stdout)
        self.assertEqual(os.listdir(folder), ["bench report.html"])  # no temporary left behind
        url = "file://" + report.replace(" ", "%20")

        page = self.chromium(url, "--dump-dom")
        self.assertEqual(page.returncode, 0, page.stderr[-2000:])
        self.assertEqual(self.console_lines(page.stderr), [])
        dom = page.stdout
        html_tag = re.search(r"<html[^>]*>", dom).group(0)
        self.assertIn('data-ready="1"', html_tag)  # the page's scripts ran to the end
        self.assertNotIn("data-page-error", html_tag)  # and none failed
        for chart in REPORT_CHARTS:
            m = re.search(r'<svg class="chart" id="%s".*?</svg>' % chart, dom, re.S)
            self.assertIsNotNone(m, chart)
            self.assertRegex(m.group(0), r"<(path|circle|rect) ", chart)
        self.assertTrue('id="chart-gpu"' in dom or "No GPU: " in dom)
        self.assertRegex(dom, r'<section id="verdict" class="verdict (input-bound|consumer-bound|balanced)">')
        rows = re.findall(r"<tr><td>(\d) [^<]*</td>", dom)
        self.assertEqual(rows, ["1", "2", "3", "4"])  # every rung of the ladder ran
        self.assertIn("libjpeg-turbo", dom)  # the machine, from doctor

        shot = os.path.join(self.tmp, "report.png")
        s = self.chromium(url, "--window-size=1280,2400", f"--screenshot={shot}")
        self.assertEqual(s.returncode, 0, s.stderr[-2000:])
        self.assertEqual(self.console_lines(s.stderr), [])
        width, height, pixels = read_png(slurp(shot))
        self.assertEqual((width, height), (1280, 2400))
        # What the DOM draws is on screen: the throughput chart's markers and
        # the decode segment of the share bar, in the colours the DOM gives them.
        chart = re.search(r'<svg class="chart" id="chart-throughput".*?</svg>', dom, re.S).group(0)
        line = re.search(r'<path class="line" [^>]*stroke="#([0-9a-f]{6})"', chart)
        bar = re.search(r'fill="#([0-9a-f]{6})"><title>decode: ', dom)
        self.assertGreater(pixels.count(bytes.fromhex(line.group(1))), 20)
        self.assertGreater(pixels.count(bytes.fromhex(bar.group(1))), 100)

    @unittest.skipUnless(CHROMIUM, "chromium is not installed (scripts/bootstrap.sh installs it)")
    def test_report_check_sees_a_script_error(self):
        """The detection the report test relies on: a broken page is caught."""
        out = self.fresh("repbad")
        self.convert(out)
        report = os.path.join(self.tmp, "broken.html")
        run("bench", out, "--batch", "8", "--size", "32", "--report", report, "-q", check=0)
        html = slurp(report).decode().replace("</body>", "<script>no_such_function();</script></body>")
        with open(report, "w") as f:
            f.write(html)
        page = self.chromium("file://" + report, "--dump-dom")
        self.assertTrue(any("no_such_function" in l for l in self.console_lines(page.stderr)),
                        page.stderr[-2000:])
        self.assertIn("data-page-error=", re.search(r"<html[^>]*>", page.stdout).group(0))

    def test_bench_report_bad_path_fails_before_the_run(self):
        out = self.fresh("repbad2")
        self.convert(out)
        missing = os.path.join(self.tmp, "no-such-folder", "r.html")
        p = run("bench", out, "--report", missing, check=1)
        self.assertIn(f"--report {missing}: cannot be written: No such file or directory", p.stderr)
        self.assertNotIn("images/s", p.stdout)
        p = run("bench", out, "--report", self.tmp, check=1)
        self.assertIn("is a folder", p.stderr)

    @unittest.skipUnless(FAKE_NVML, "SLUICE_FAKE_NVML not set (CTest sets it)")
    def test_bench_report_gpu_series_from_the_fake_driver(self):
        out = self.fresh("repgpu")
        self.convert(out)
        report = os.path.join(self.tmp, "gpu.html")
        env = dict(os.environ, SLUICE_NVML_LIBRARY=FAKE_NVML)
        subprocess.run([SLUICE, "bench", out, "--batch", "8", "--size", "32", "--report", report, "-q"],
                       check=True, env=env, timeout=300)
        html = slurp(report).decode()
        self.assertIn('<svg class="chart" id="chart-gpu"', html)
        self.assertIn("GPU 0: NVIDIA H200 busy: 87 %", html)  # what the fake driver reports
        self.assertIn("GPU 1: Tesla P100-PCIE-16GB memory: 0 %", html)
        self.assertNotIn("GPU 1: Tesla P100-PCIE-16GB busy: ", html)  # it refused to say
        self.assertNotIn("No GPU: ", html)

    def test_bench_on_a_fake_gpu(self):
        """--device cuda against the fake CUDA runtime, kernel library and
        nvJPEG the tests build (tests/device): the same CLI path a GPU runs."""
        out = self.fresh("bg")
        self.convert(out)
        host, host_all = self.bench_digests(out)
        # Copy mode: the CPU's batches, byte for byte, through the device ring.
        copy, copy_all = self.bench_digests(out, "--device", "cuda", "--gpu-augment", "off",
                                            env=FAKE_GPU_ENV)
        self.assertEqual((copy, copy_all), (host, host_all))
        report = os.path.join(self.tmp, "bench-gpu.json")
        p = run("bench", out, "--batch", "8", "--size", "24", "--device", "cuda:0", "--gpu-decode",
                "on", "--json", report, env=FAKE_GPU_ENV, check=0)
        self.assertIn("device: cuda:0, augmentation on the gpu kernel", p.stdout)
        self.assertRegex(p.stdout, r"decode tiers: hardware \d+ .* CUDA \d+ .* CPU \d+")
        j = json.loads(slurp(report))
        d = j["device"]
        tiers = d["tiers"]
        self.assertGreater(tiers["hardware"]["images"] + tiers["cuda"]["images"], 0)
        self.assertGreater(tiers["cpu"]["images"], 0)  # synth writes some PNGs
        self.assertEqual(sum(t["images"] for t in tiers.values()), j["images"])
        self.assertGreater(d["h2d_bytes"], 0)
        self.assertIn("nvJPEG", d["gpu_decode"])
        self.assertIsNone(d["gpu_busy_percent"])  # no NVML here
        self.assertTrue(d["gpu_decode_strict"])
        self.assertGreater(d["gpu_decode_allocations"], 0)
        self.assertEqual(d["gpu_decode_reallocations"], 0)
        self.assertEqual(d["nvjpeg_refused"], [])
        self.assertRegex(p.stdout, r"GPU decode memory: \d+ allocations, 0 of them replacing a buffer; "
                                   r"strict bitstream checks on")
        # Same bytes again, whatever the worker count (fixed engine share).
        a = self.bench_digests(out, "--device", "cuda", "--workers", "1", env=FAKE_GPU_ENV)
        b = self.bench_digests(out, "--device", "cuda", "--workers", "3", env=FAKE_GPU_ENV)
        self.assertEqual(a, b)

    def test_bench_gpu_errors_name_what_is_missing(self):
        out = self.fresh("bge")
        self.convert(out)
        p = run("bench", out, "--device", "cuda", env={"SLUICE_CUDART_LIBRARY": "/nonexistent/libcudart.so"}, check=1)
        self.assertIn("--device cuda:0: no CUDA runtime loads", p.stderr)
        self.assertIn("/nonexistent/libcudart.so", p.stderr)
        env = {**FAKE_GPU_ENV, "SLUICE_KERNELS_LIBRARY": "/nonexistent/libsluice_kernels.so"}
        p = run("bench", out, "--device", "cuda", "--gpu-augment", "on", env=env, check=1)
        self.assertIn("--gpu-augment on: sluice's GPU kernels are not there", p.stderr)
        p = run("bench", out, "--device", "cuda:1", env=FAKE_GPU_ENV, check=1)
        self.assertIn("only 1 CUDA device is visible", p.stderr)
        env = {**FAKE_GPU_ENV, "SLUICE_NVJPEG_LIBRARY": "/nonexistent/libnvjpeg.so"}
        p = run("bench", out, "--device", "cuda", "--gpu-decode", "on", env=env, check=1)
        self.assertIn("--gpu-decode on: nvJPEG is not usable", p.stderr)
        # auto: without nvJPEG the CPU decodes, and the run says so.
        p = run("bench", out, "--device", "cuda", "--batch", "8", env=env, check=0)
        self.assertIn("GPU decoding: off:", p.stdout)
        self.assertIn("device must be cpu, cuda or cuda:N, not 'gpu'", run("bench", out, "--device", "gpu", check=1).stderr)

    def test_bench_bad_options(self):
        out = self.fresh("bo")
        self.convert(out)
        self.assertIn("unknown order", run("bench", out, "--order", "random", check=1).stderr)
        self.assertIn("--workers expected a number within 1..1024, got 'zero'", run("bench", out, "--workers", "zero", check=1).stderr)
        self.assertIn("rank 2 is outside", run("bench", out, "--rank", "2", "--world-size", "2", check=1).stderr)
        self.assertIn("no split 'test'", run("bench", out, "--split", "test", check=1).stderr)
        bad_state = os.path.join(self.tmp, "bad-state.json")
        with open(bad_state, "w") as f:
            f.write("{}")
        self.assertIn("not a sluice state file", run("bench", out, "--state-in", bad_state, check=1).stderr)

    def test_doctor(self):
        p = run("doctor", "--data", self.images, check=None)
        self.assertIn("libjpeg-turbo", p.stdout)
        self.assertRegex(p.stdout, r"sequential read \d+ MB/s")
        j = json.loads(run("doctor", "--json").stdout)
        self.assertGreater(j["cpu"]["cores"], 0)
        levels = {c["level"] for c in j["checks"]}
        self.assertTrue(levels <= {"ok", "warn", "fail", "info"})
        self.assertEqual(p.returncode, 1 if "fail" in levels else 0)
        if not j["gpu"]["devices"]:
            r = run("doctor", "--require", "gpu", check=1)
            self.assertIn("required capability missing: a GPU", r.stderr)
        self.assertIn("--require takes gpu", run("doctor", "--require", "tpu", check=1).stderr)
        env = dict(os.environ, SLUICE_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1")
        q = subprocess.run([SLUICE, "doctor"], capture_output=True, text=True, env=env)
        self.assertIn("no NVIDIA driver found", q.stdout)

    def test_advise(self):
        out = self.fresh("adv")
        self.convert(out)
        bench = os.path.join(self.tmp, "adv.json")
        run("bench", out, "--batch", "16", "--size", "96", "--epochs", "10", "--json", bench, "-q", check=0)
        prices = os.path.join(self.tmp, "prices.json")
        with open(prices, "w") as f:
            f.write('{"per_gpu_hour": {"H100": 3.0}}')
        p = run("advise", "--bench", bench, "--cores", "8", "--prices", prices, "--gpus", "H100,T4", check=0)
        self.assertIn("images/s per CPU core", p.stdout)
        self.assertRegex(p.stdout, r"H100\s+1\s+bf16")
        self.assertRegex(p.stdout, r"T4\s+1\s+fp16")
        self.assertRegex(p.stdout, r"H100\s+8\s+bf16\s+\d+\s+est:ratio")  # MLPerf's is MXNet's
        self.assertIn("How each column is derived", p.stdout)
        d = run("advise", "--bench", bench, "--bench", bench, "--prices", prices, "--gpus", "H100",
                "--deadline", "1000", "--epochs", "90", check=0)
        self.assertIn("deadline 1000 h for 90 epochs: cheapest is", d.stdout)
        self.assertIn("no priced configuration",
                      run("advise", "--bench", bench, "--prices", prices, "--deadline", "0.001",
                          check=0).stdout)
        summary = os.path.join(self.tmp, "summary.json")
        with open(summary, "w") as f:
            f.write('{"format": "sluice train summary 1", "model": "resnet50", "amp": "bf16", '
                    '"device": "cuda:0", "world_size": 1, "images_per_second": 1234.5}')
        s = run("advise", "--bench", bench, "--train-summary", summary, "--gpu", "A10",
                "--gpus", "A10", "--counts", "1", check=0)
        self.assertRegex(s.stdout, r"A10\s+1\s+bf16\s+123[45]\s+your run")
        self.assertIn("needs --gpu", run("advise", "--bench", bench, "--train-summary", summary,
                                         check=1).stderr)
        # A summary that names its GPU (sluice train writes the driver's name) needs no --gpu.
        named = os.path.join(self.tmp, "summary-gpu.json")
        with open(named, "w") as f:
            f.write('{"format": "sluice train summary 1", "model": "resnet50", "amp": "bf16", '
                    '"device": "cuda:0", "gpu": "NVIDIA A10G", "world_size": 1, '
                    '"images_per_second": 1234.5}')
        s = run("advise", "--bench", bench, "--train-summary", named, "--gpus", "A10,H100",
                "--counts", "1", check=0)
        self.assertRegex(s.stdout, r"A10\s+1\s+bf16\s+123[45]\s+your run")
        # Default: PyTorch figures; H100 (no PyTorch source) by MLPerf's same-round ratio.
        h = run("advise", "--bench", bench, "--gpus", "H100", "--counts", "1,8", check=0).stdout
        self.assertRegex(h, r"H100\s+8\s+bf16\s+\d+\s+est:ratio")
        self.assertIn("H100/A100-80GB", h)
        a = run("advise", "--bench", bench, "--gpus", "H100", "--counts", "8", "--framework", "any",
                check=0).stdout
        self.assertRegex(a, r"H100\s+8\s+bf16\s+56184\s+sourced\[1\]")
        self.assertIn("--framework must be", run("advise", "--bench", bench, "--framework", "jax",
                                                 check=1).stderr)
        loo = run("advise", "--leave-one-out", check=0).stdout
        self.assertIn("median error", loo)
        self.assertIn("other frameworks' kept", loo)
        self.assertIn("not a `sluice bench --json` file", run("advise", "--bench", prices, check=1).stderr)
        self.assertIn("'B200' is not in the catalogue",
                      run("advise", "--bench", bench, "--gpus", "B200", check=1).stderr)

    def test_killed_convert_leaves_nothing_that_looks_complete(self):
        src = self.fresh("bigsrc")
        run("synth", src, "--classes", "2", "--per-class", "1500", "--size", "160", "--val-per-class", "0",
            check=0)
        out = self.fresh("killed")
        proc = subprocess.Popen([SLUICE, "convert", os.path.join(src, "train"), "-o", out, "--workers", "1",
                                 "--shards", "4", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.4)
        still_running = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if not still_running:
            self.skipTest("convert finished before it could be killed")
        left = os.listdir(out) if os.path.isdir(out) else []
        self.assertNotIn("dataset.json", left)
        self.assertEqual([f for f in left if f.endswith(".tfrecord") or f.endswith(".idx")], [])

    def test_killed_convert_reruns_to_the_same_bytes_and_leaves_no_temporaries(self):
        # kill -9 at random points of a convert, then rerun it into the same
        # folder: never a manifest before the shards are whole, and the rerun
        # ends with exactly an uninterrupted run's files (its own hidden
        # temporaries and the dead run's removed).
        src = self.fresh("killsrc")
        run("synth", src, "--classes", "2", "--per-class", "500", "--size", "128", "--val-per-class", "0",
            check=0)
        args = [os.path.join(src, "train"), "--workers", "1", "--shards", "3", "-q"]
        ref = self.fresh("kill-ref")
        start = time.monotonic()
        run("convert", args[0], "-o", ref, *args[1:], check=0)
        took = time.monotonic() - start

        def contents(folder):
            out = {}
            for name in sorted(os.listdir(folder)):
                data = slurp(os.path.join(folder, name))
                if name == "dataset.json":  # each split's "command" names the output folder
                    manifest = json.loads(data)
                    for split in manifest.get("splits", {}).values():
                        split.pop("command", None)
                    data = json.dumps(manifest, sort_keys=True).encode()
                out[name] = data
            return out

        want = contents(ref)
        rng = random.Random(14)
        killed = 0
        for trial in range(20):
            out = self.fresh(f"kill-{trial}")
            proc = subprocess.Popen([SLUICE, "convert", args[0], "-o", out, *args[1:]],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0, took))
            if proc.poll() is None:
                killed += 1
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            left = os.listdir(out) if os.path.isdir(out) else []
            if "dataset.json" in left:  # written last, after every shard
                self.assertEqual(contents(out), want, f"trial {trial}")
            run("convert", args[0], "-o", out, *args[1:], check=0)
            self.assertEqual(sorted(os.listdir(out)), sorted(want), f"trial {trial}")
            self.assertEqual(contents(out), want, f"trial {trial}")
        self.assertGreater(killed, 5, "convert finished before most kills: make the input larger")

    def shard_files(self, out):
        return {n: slurp(os.path.join(out, n)) for n in os.listdir(out)
                if n.endswith((".tfrecord", ".idx"))}

    def test_convert_parts_from_job_runner_environments(self):
        # Every way of naming the part gives the bytes of one --shards 3 run.
        ref = self.fresh("parts-ref")
        self.convert(ref, "--shards", "3")
        want = self.shard_files(ref)
        clean = {k: v for k, v in os.environ.items()
                 if not k.startswith("SLURM_") and k != "JOB_COMPLETION_INDEX"}
        slurm = self.fresh("parts-slurm")  # sbatch --array=1-4: ids 1..4
        for task in range(1, 5):
            env = {**clean, "SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_MIN": "1",
                   "SLURM_ARRAY_TASK_COUNT": "4"}
            p = subprocess.run([SLUICE, "convert", self.train, "-o", slurm, "-q", "--shards", "3",
                                "--part", "auto"], capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(f"part {task - 1} of 4 (SLURM_ARRAY_TASK_ID={task}, SLURM_ARRAY_TASK_MIN=1, "
                          "SLURM_ARRAY_TASK_COUNT=4)", p.stdout)
        k8s = self.fresh("parts-k8s")  # an indexed Job of 3 completions
        for index in range(3):
            env = {**clean, "JOB_COMPLETION_INDEX": str(index)}
            p = subprocess.run([SLUICE, "convert", self.train, "-o", k8s, "-q", "--shards", "3",
                                "--parts", "3"], capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(f"part {index} of 3 (JOB_COMPLETION_INDEX={index})", p.stdout)
        xargs = self.fresh("parts-xargs")  # all at once, into one folder
        p = subprocess.run(f"seq 0 2 | xargs -P 3 -I{{}} '{SLUICE}' convert '{self.train}' -o '{xargs}' "
                           f"-q --shards 3 --part {{}}/3", shell=True, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        for out in (slurm, k8s, xargs):
            self.assertFalse(os.path.exists(os.path.join(out, "dataset.json")))
            p = run("convert", "--finish", out, check=0)
            self.assertIn("finished split 'train': 60 of 60 images in 3 shards", p.stdout)
            self.assertEqual(self.shard_files(out), want, out)
            self.assertFalse(os.path.exists(os.path.join(out, ".parts")))

    def test_convert_part_needs_its_index_and_count(self):
        clean = {k: v for k, v in os.environ.items()
                 if not k.startswith("SLURM_") and k != "JOB_COMPLETION_INDEX"}
        out = self.fresh("parts-bad")

        def convert(*extra, env=None):
            return subprocess.run([SLUICE, "convert", self.train, "-o", out, "-q", *extra],
                                  capture_output=True, text=True, env={**clean, **(env or {})})

        p = convert("--part", "auto")
        self.assertEqual(p.returncode, 1)
        self.assertIn("neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set", p.stderr)
        p = convert("--part", "auto", env={"JOB_COMPLETION_INDEX": "2"})
        self.assertEqual(p.returncode, 1)
        self.assertIn("JOB_COMPLETION_INDEX=2 gives the part but not the count: add --parts N", p.stderr)
        p = convert("--part", "auto", env={"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_COUNT": "4"})
        self.assertEqual(p.returncode, 1)
        self.assertIn("use --array=0-3", p.stderr)
        p = convert("--part", "4/4")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--part 4/4: I must be within 0..3", p.stderr)
        for bad in ("x/4", "1/0", "1"):
            p = convert("--part", bad)
            self.assertEqual(p.returncode, 1, bad)
            self.assertIn(f"--part '{bad}': expected I/N", p.stderr)
        # Inside a job array, a plain convert still converts everything: the
        # environment is read only when asked.
        p = convert("--shards", "2", env={"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "dataset.json")))
        self.assertEqual(run("convert", "--finish", out, self.train).returncode, 2)
        self.assertEqual(run("convert", "-o", out).returncode, 2)
        self.assertEqual(run("convert", self.train, "-o", out, "--no-verify").returncode, 1)

    def test_convert_finish_names_a_missing_part_and_a_half_written_shard(self):
        out = self.fresh("parts-damage")
        for i in (0, 2):
            self.convert(out, "--shards", "3", "--part", f"{i}/3")
        p = run("convert", "--finish", out, check=1)
        self.assertIn(os.path.join(out, ".parts", "train-part-00001-of-00003.json") +
                      ": missing: part 1 of 3 has not finished", p.stderr)
        self.convert(out, "--shards", "3", "--part", "1/3")
        shard = os.path.join(out, "train-00001-of-00003.tfrecord")
        size = os.path.getsize(shard)
        os.truncate(shard, size - 10)
        p = run("convert", "--finish", out, "--no-verify", check=1)
        self.assertIn(f"{shard}: {size - 10} bytes where part 1 wrote {size}", p.stderr)
        self.assertIn("rerun part 1 of 3", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "dataset.json")))
        self.convert(out, "--shards", "3", "--part", "1/3")
        run("convert", "--finish", out, check=0)
        run("inspect", out, "--verify", check=0)

    def test_convert_onto_a_full_disk_fails_clearly_and_leaves_nothing(self):
        # A 48 KB tmpfs fills during the first shard (about 100 KB): the error names the
        # file and the reason, the exit status is 1, and the folder holds no
        # shard, index, manifest or temporary. Needs root to mount.
        if os.geteuid() != 0:
            self.skipTest("mounting a tmpfs needs root")
        disk = self.fresh("fulldisk")
        os.makedirs(disk)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", disk],
                          capture_output=True).returncode != 0:
            self.skipTest("cannot mount a tmpfs here")
        try:
            out = os.path.join(disk, "out")
            p = run("convert", self.train, "-o", out, "-q", check=1)
            self.assertRegex(p.stderr, re.escape(out) + r"/\S+: write: No space left on device")
            self.assertEqual(os.listdir(out), [])
        finally:
            subprocess.run(["umount", disk], check=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
