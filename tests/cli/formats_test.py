"""Every JSON document sluice writes against its specification in
docs/formats.md: the writer's keys are exactly the fields the document's
table names (or, for dataset.json, the example's), and `format` is the
version string the table gives. Real processes, real files; standard
library only.

Run by CTest with SLUICE_BIN, SLUICE_DOCS (docs/formats.md) and
SLUICE_WITH_TRAINER (1 where sluice-train was built)."""

import json
import os
import re
import subprocess
import tempfile
import unittest
import zipfile

SLUICE = os.environ["SLUICE_BIN"]
DOCS = os.environ["SLUICE_DOCS"]
TRAINER = os.environ.get("SLUICE_WITH_TRAINER") == "1"


def sections():
    """{heading: text} of docs/formats.md's level-2 sections."""
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def section(prefix):
    found = [body for head, body in sections().items() if head.startswith(prefix)]
    assert len(found) == 1, f"docs/formats.md: no single section '{prefix}'"
    return found[0]


def table_fields(body):
    """The names in backticks in the first column of the section's table,
    and the format string its `format` row gives."""
    names, fmt = set(), None
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 2 or cells[0] in ("field", "---", "key"):
            continue
        row = re.findall(r"`([^`]+)`", cells[0])
        names.update(row)
        if row == ["format"]:
            m = re.search(r'"([^"]+)"', cells[1])
            fmt = m.group(1) if m else None
    return names, fmt


def run(*args, env=None):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, f"sluice {' '.join(args)}: exit {p.returncode}\n{p.stderr}"
    return p


class FormatsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sluice-formats-")
        cls.images = os.path.join(cls.tmp, "images")
        cls.data = os.path.join(cls.tmp, "data")
        run("synth", cls.images, "--classes", "2", "--per-class", "12", "--size", "40")
        run("convert", os.path.join(cls.images, "train"), "-o", cls.data, "-q")

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["rm", "-rf", cls.tmp])

    def check(self, heading, doc):
        names, fmt = table_fields(section(heading))
        self.assertEqual(set(doc), names, f"{heading}: keys written vs docs/formats.md")
        self.assertEqual(doc["format"], fmt, heading)

    def test_bench_summary_state_and_status(self):
        out = os.path.join(self.tmp, "bench")
        os.makedirs(out, exist_ok=True)
        j, state, status = (os.path.join(out, n) for n in ("b.json", "state.json", "status.json"))
        run("bench", self.data, "--batch", "4", "--size", "32", "--ceiling", "--json", j,
            "--state-out", state, "--status", status, "-q")
        with open(j) as f:
            bench = json.load(f)
        # "device" and the ceiling's figures appear only when asked for; the
        # ceiling was, and the device part is checked by the GPU tests;
        # "remote" only for remote shards (tests/interop/test_s3.py reads it).
        names, fmt = table_fields(section("Bench summary"))
        self.assertEqual(set(bench), names - {"device", "remote"})
        self.assertEqual(bench["format"], fmt)
        self.assertEqual(set(bench["stages"]["decode"]),
                         {"items", "bytes", "busy_seconds", "wait_seconds", "busy_share"})
        with open(state) as f:
            self.check("Pipeline state", json.load(f))
        with open(status) as f:
            doc = json.load(f)
        names, fmt = table_fields(section("Run status"))
        training = {"epoch", "epochs", "step", "loss", "accuracy", "lr"}
        self.assertEqual(set(doc), names - training)
        self.assertEqual(doc["format"], fmt)
        self.assertEqual(doc["job"], "bench")

    def test_gpu_catalogue_measurement_keys(self):
        names, _ = table_fields(section("GPU catalogue"))
        with open(os.path.join(os.path.dirname(DOCS), "..", "data", "gpus.json")) as f:
            catalogue = json.load(f)
        self.assertGreater(len(catalogue["measurements"]), 0)
        optional = {"family"}  # absent: the framework string
        self.assertTrue(any("family" in m for m in catalogue["measurements"]))
        for m in catalogue["measurements"]:
            self.assertLessEqual(names - optional, set(m), m)
            self.assertLessEqual(set(m), names, m)

    def test_dataset_json_keys_are_the_examples(self):
        body = section("`dataset.json`")
        example = json.loads(body.split("```json", 1)[1].split("```", 1)[0])
        with open(os.path.join(self.data, "dataset.json")) as f:
            doc = json.load(f)
        self.assertEqual(set(doc), set(example))
        self.assertEqual((doc["format"], doc["version"]), (example["format"], example["version"]))
        self.assertEqual(set(doc["keys"]), set(example["keys"]))
        split, want = doc["splits"]["train"], example["splits"]["train"]
        self.assertEqual(set(split), set(want))
        self.assertEqual(set(split["shards"][0]), set(want["shards"][0]))

    def test_convert_part_record(self):
        out = os.path.join(self.tmp, "parts")
        run("convert", os.path.join(self.images, "train"), "-o", out, "-q", "--shards", "2",
            "--part", "1/2")
        with open(os.path.join(out, ".parts", "train-part-00001-of-00002.json")) as f:
            doc = json.load(f)
        self.check("Part record", doc)
        with open(os.path.join(self.data, "dataset.json")) as f:
            manifest = json.load(f)
        self.assertEqual(set(doc["shards"][0]), set(manifest["splits"]["train"]["shards"][0]))

    @unittest.skipUnless(TRAINER, "sluice-train was not built (no LibTorch)")
    def test_training_summary_status_and_checkpoint(self):
        out = os.path.join(self.tmp, "train")
        summary, status, ckpt = (os.path.join(out, n) for n in ("s.json", "status.json", "ck"))
        run("train", self.data, "--model", "seed-cnn", "--size", "32", "--batch", "4", "--epochs", "1",
            "--max-steps", "3", "--no-val", "--summary", summary, "--status", status,
            "--checkpoint-dir", ckpt, "-q")
        with open(summary) as f:
            doc = json.load(f)
        self.check("Training summary", doc)
        self.assertEqual(doc["gpu"], "cpu")
        with open(status) as f:
            doc = json.load(f)
        names, fmt = table_fields(section("Run status"))
        self.assertEqual(set(doc), names)
        self.assertEqual((doc["format"], doc["job"]), (fmt, "train"))
        # The checkpoint's description: a JSON string inside LibTorch's zip.
        with zipfile.ZipFile(os.path.join(ckpt, "last.pt")) as z:
            pickle = b"".join(z.read(n) for n in z.namelist() if n.endswith("data.pkl"))
        start = pickle.index(b'{"')
        meta, _ = json.JSONDecoder().raw_decode(pickle[start:].decode("utf-8", "replace"))
        row = next(line for line in section("Training checkpoints").splitlines()
                   if line.startswith("| `meta` |"))
        documented = set(re.findall(r"`([^`]+)`", row.split("|")[2]))
        self.assertEqual(set(meta), documented)
        self.assertEqual(meta["format"], "sluice checkpoint 1")


if __name__ == "__main__":
    unittest.main()
