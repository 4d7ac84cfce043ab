"""Images/s from local shards against the same shards in S3 on loopback
(moto's server, as tests/interop/test_s3.py runs it, signatures checked),
without and with the shard cache: `sluice bench` side by side, one run.

    build/venv/bin/python bench/remote_throughput.py SHARD_FOLDER [bench options]

SLUICE_BIN picks the binary (default build/release's). Prints one line per
configuration and the remote counters. moto is a Python server: what this
measures is the cost of reading over HTTP through it, an upper bound on the
overhead rather than a figure for AWS."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "interop"))
from s3_server import S3Server  # noqa: E402

SLUICE = os.environ.get("SLUICE_BIN", os.path.join(HERE, "..", "build", "release", "src", "cli",
                                                   "sluice"))


def bench(env, source, extra, out):
    subprocess.run([SLUICE, "bench", source, "--json", out, *extra], env=env, check=True,
                   capture_output=True, text=True)
    with open(out) as f:
        return json.load(f)


def main():
    folder, extra = sys.argv[1], sys.argv[2:] or ["--epochs", "2"]
    server = S3Server()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket="bench")
        for name in sorted(os.listdir(folder)):
            s3.upload_file(os.path.join(folder, name), "bench", "ds/" + name)
        env = server.env()
        with tempfile.TemporaryDirectory() as tmp:
            cache = os.path.join(tmp, "cache")
            runs = [("local", folder, []),
                    ("s3 loopback", "s3://bench/ds", []),
                    ("s3 + cache, cold", "s3://bench/ds", ["--cache-dir", cache]),
                    ("s3 + cache, warm", "s3://bench/ds", ["--cache-dir", cache])]
            print(f"machine: {os.cpu_count()} cores; bench {' '.join(extra)}")
            for name, source, more in runs:
                j = bench(env, source, extra + more, os.path.join(tmp, "b.json"))
                r = j.get("remote", {})
                print(f"{name:18s} {j['images_per_second']:8.0f} images/s  "
                      f"requests {r.get('requests', 0):6d}  retries {r.get('retries', 0)}  "
                      f"MB {r.get('bytes', 0) / 1e6:7.1f}  cache hits {r.get('cache_hits', 0)}  "
                      f"fills {r.get('cache_fills', 0)}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
