"""sluice against a real S3-compatible server on loopback (moto, with
SigV4 checked on every request) and through a proxy that injects the
failures object stores and networks produce: byte-identical batches from
s3:// and from the same shards on disk, listing and patterns, 403 and 404
named clearly, retries counted, the shard cache, and convert -o s3://."""

import json
import os
import subprocess
import time

import pytest

from conftest import SLUICE
from s3_server import FaultProxy, HttpServer, S3Server

BUCKET = "sluice-test"


def run(env, *args, check=0, timeout=300):
    p = subprocess.run([SLUICE, *args], capture_output=True, text=True, env=env, timeout=timeout)
    if check is not None:
        assert p.returncode == check, f"sluice {args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def digest(env, source, *extra):
    """The running digest of every batch of two epochs (sluice bench --digest)."""
    out = run(env, "bench", source, "--epochs", "2", "--batch", "16", "--size", "32",
              "--workers", "2", "--digest", *extra).stdout
    lines = [l for l in out.splitlines() if l.startswith("digest all ")]
    assert len(lines) == 1, out
    return lines[0]


def bench_json(env, source, path, *extra):
    run(env, "bench", source, "--epochs", "1", "--batch", "16", "--size", "32", "--workers", "2",
        "--json", str(path), *extra)
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def server():
    s = S3Server()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def dataset(server, tmp_path_factory):
    """A converted dataset on disk, and the same files under s3://BUCKET/ds/
    (with dataset.json) and s3://BUCKET/bare/ (shards and indexes only)."""
    root = tmp_path_factory.mktemp("s3data")
    env = dict(os.environ)
    run(env, "synth", str(root / "img"), "--classes", "4", "--per-class", "40", "--size", "40")
    run(env, "convert", str(root / "img" / "train"), "-o", str(root / "ds"), "--shard-size",
        "0.05", "-q")
    s3 = server.client()
    s3.create_bucket(Bucket=BUCKET)
    names = sorted(os.listdir(root / "ds"))
    for name in names:
        s3.upload_file(str(root / "ds" / name), BUCKET, "ds/" + name)
        if name != "dataset.json":
            s3.upload_file(str(root / "ds" / name), BUCKET, "bare/" + name)
    shards = [n for n in names if n.endswith(".tfrecord")]
    assert len(shards) >= 3
    return root, shards


def test_batches_from_s3_equal_batches_from_disk(server, dataset):
    root, _ = dataset
    env = server.env()
    local = digest(env, str(root / "ds"))
    assert digest(env, f"s3://{BUCKET}/ds") == local
    assert digest(env, f"s3://{BUCKET}/ds/") == local  # the folder, either way
    # Without dataset.json: the folder's record objects, listed.
    assert digest(env, f"s3://{BUCKET}/bare/") == local


def test_shards_over_plain_http(server, dataset):
    root, shards = dataset
    web = HttpServer(str(root / "ds"))
    try:
        env = server.env()
        urls = [f"{web.url}/{name}" for name in shards]
        assert digest(env, *urls[:1]) == digest(env, str(root / "ds" / shards[0]))
        # A dataset folder by URL: its dataset.json names the shards.
        assert digest(env, web.url + "/") == digest(env, str(root / "ds"))
        p = run(env, "inspect", f"{web.url}/no-such.tfrecord", check=None)
        assert p.returncode != 0 and "no such object" in p.stderr and "404" in p.stderr, p.stderr
        assert web.requests > 0
    finally:
        web.stop()


def test_shards_from_a_server_with_weak_etags(server, dataset):
    """A weak ETag cannot be asked for with If-Match (the server would answer
    every read 412): such objects are read without the check."""
    root, shards = dataset
    web = HttpServer(str(root / "ds"), weak_etags=True)
    try:
        env = server.env()
        assert digest(env, f"{web.url}/{shards[0]}") == digest(env, str(root / "ds" / shards[0]))
    finally:
        web.stop()


def test_a_url_with_a_query_is_read_without_an_index(server, dataset):
    """A presigned URL signs only itself: its index cannot be named, so the
    records are found by reading the object."""
    root, shards = dataset
    web = HttpServer(str(root / "ds"))
    try:
        env = server.env()
        url = f"{web.url}/{shards[0]}?X-Amz-Expires=3600&X-Amz-Signature=0123abcd"
        assert digest(env, url) == digest(env, str(root / "ds" / shards[0]))
    finally:
        web.stop()


def test_listing_patterns_and_inspect(server, dataset):
    root, shards = dataset
    env = server.env()
    report = json.loads(run(env, "inspect", "--json", "--verify", f"s3://{BUCKET}/ds/").stdout)
    assert report["problems"] == []
    assert len(report["files"]) == len(shards)
    local = json.loads(run(env, "inspect", "--json", str(root / "ds")).stdout)
    assert report["records"] == local["records"]
    picked = json.loads(run(env, "inspect", "--json",
                            f"s3://{BUCKET}/bare/train-0000[01]-*").stdout)
    assert [f["path"].rsplit("/", 1)[1] for f in picked["files"]] == shards[:2]


def test_listing_follows_continuation_tokens(server, dataset):
    """S3 answers at most 1,000 keys a page: a shard listed after them is found."""
    root, shards = dataset
    s3 = server.client()
    for i in range(1005):
        s3.put_object(Bucket=BUCKET, Key=f"many/a-{i:04d}.txt", Body=b"x")
    s3.upload_file(str(root / "ds" / shards[0]), BUCKET, "many/z-" + shards[0])
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="many/")["IsTruncated"]
    picked = json.loads(run(server.env(), "inspect", "--json",
                            f"s3://{BUCKET}/many/z-*.tfrecord").stdout)
    assert [f["path"].rsplit("/", 1)[1] for f in picked["files"]] == ["z-" + shards[0]]


def test_missing_object_and_folder_are_named(server, dataset):
    env = server.env()
    p = run(env, "inspect", f"s3://{BUCKET}/ds/no-such.tfrecord", check=None)
    assert p.returncode != 0
    assert f"s3://{BUCKET}/ds/no-such.tfrecord" in p.stderr and "no such object" in p.stderr
    p = run(env, "bench", f"s3://{BUCKET}/nothing-here/", "--epochs", "1", check=None)
    assert p.returncode != 0 and "nothing-here" in p.stderr


def test_wrong_secret_and_no_rights_are_access_denied(server, dataset):
    url = f"s3://{BUCKET}/ds/dataset.json"
    bad = server.env(key=(server.key[0], "not-the-secret"))
    p = run(bad, "inspect", f"s3://{BUCKET}/ds/", check=None)
    assert p.returncode != 0 and "access denied" in p.stderr and url in p.stderr, p.stderr
    assert "environment (AWS_ACCESS_KEY_ID)" in p.stderr  # where the credentials came from
    shard = f"s3://{BUCKET}/bare/" + dataset[1][0]
    p = run(server.env(key=server.no_rights_key), "inspect", shard, check=None)
    assert p.returncode != 0 and "access denied" in p.stderr and shard in p.stderr, p.stderr


def test_credentials_from_the_shared_file(server, dataset, tmp_path):
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(
        f"[default]\naws_access_key_id = nobody\naws_secret_access_key = x\n\n"
        f"[test]\naws_access_key_id = {server.key[0]}\n"
        f"aws_secret_access_key = {server.key[1]}\n")
    env = server.env(home=str(tmp_path))
    del env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
    env["AWS_PROFILE"] = "test"
    root, _ = dataset
    assert digest(env, f"s3://{BUCKET}/ds") == digest(env, str(root / "ds"))


def test_injected_faults_are_retried_and_counted(server, dataset, tmp_path):
    root, _ = dataset
    kinds = ["503", "drop", "reset"]
    # Every fourth request fails, in turn each way.
    proxy = FaultProxy(server.port, lambda n, line: kinds[(n // 4) % 3] if n % 4 == 0 else None)
    try:
        env = server.env(endpoint=proxy.url)
        assert digest(env, f"s3://{BUCKET}/ds") == digest(env, str(root / "ds"))
        stats = bench_json(env, f"s3://{BUCKET}/ds", tmp_path / "b.json")
        assert stats["remote"]["retries"] > 0
        assert stats["remote"]["failures"] == 0
        assert proxy.faults > 0
    finally:
        proxy.close()


def test_a_server_that_keeps_failing_fails_the_run_naming_the_object(server, dataset):
    proxy = FaultProxy(server.port, lambda n, line: "503" if line.startswith("GET /sluice-test/ds/train") else None)
    try:
        env = dict(server.env(endpoint=proxy.url), SLUICE_REMOTE_ATTEMPTS="3")
        p = run(env, "bench", f"s3://{BUCKET}/ds", "--epochs", "1", check=None)
        assert p.returncode != 0
        assert f"s3://{BUCKET}/ds/train-" in p.stderr and "gave up after 3 attempts" in p.stderr, p.stderr
        assert "SlowDown" in p.stderr
    finally:
        proxy.close()


def test_cache_serves_later_runs_and_refetches_a_damaged_copy(server, dataset, tmp_path):
    root, shards = dataset
    env = server.env()
    cache = tmp_path / "cache"
    local = digest(env, str(root / "ds"))
    assert digest(env, f"s3://{BUCKET}/ds", "--cache-dir", str(cache)) == local
    # Shards are fetched whole in the background; a run that ends first
    # abandons the one in flight, and the next run goes on with it.
    for attempt in range(6):
        warm = bench_json(env, f"s3://{BUCKET}/ds", tmp_path / "w.json", "--cache-dir", str(cache))
        if warm["remote"]["cache_hits"] == len(shards):
            break
    assert warm["remote"]["cache_hits"] == len(shards) and warm["remote"]["cache_fills"] == 0
    # Opening still reads dataset.json (which gives the compression) and each
    # shard's index; every record comes from disk.
    opening = os.path.getsize(root / "ds" / "dataset.json") + sum(
        os.path.getsize(root / "ds" / s.replace(".tfrecord", ".idx")) for s in shards)
    assert warm["remote"]["bytes"] == opening
    copies = sorted(p for p in cache.iterdir() if p.suffix == ".tfrecord")
    assert len(copies) == len(shards)
    data = bytearray(copies[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    copies[0].write_bytes(bytes(data))
    third = bench_json(env, f"s3://{BUCKET}/ds", tmp_path / "3.json", "--cache-dir", str(cache))
    assert third["remote"]["cache_hits"] == len(shards) - 1
    assert digest(env, f"s3://{BUCKET}/ds", "--cache-dir", str(cache)) == local


def test_cache_stays_within_its_size(server, dataset, tmp_path):
    root, shards = dataset
    env = server.env()
    cache = tmp_path / "small"
    one = os.path.getsize(root / "ds" / shards[0])
    limit_gb = 2.5 * one / (1 << 30)
    for attempt in range(3):  # fills run in the background: give them runs to land
        digest(env, f"s3://{BUCKET}/ds", "--cache-dir", str(cache), "--cache-size",
               f"{limit_gb:.9f}")
        held = sum(p.stat().st_size for p in cache.iterdir() if p.suffix == ".tfrecord")
        assert held <= 2.5 * one
    assert held > 0


def test_cache_evicts_the_least_recently_used_shards(server, dataset, tmp_path):
    root, shards = dataset
    env = server.env()
    cache = tmp_path / "lru"
    one = max(os.path.getsize(root / "ds" / s) for s in shards)
    limit = ["--cache-dir", str(cache), "--cache-size", f"{2.5 * one / (1 << 30):.9f}"]

    def cached():
        return sorted(p.name.split("-", 1)[1] for p in cache.iterdir() if p.suffix == ".tfrecord")

    def fill(pattern, names):
        for attempt in range(6):
            j = bench_json(env, f"s3://{BUCKET}/bare/{pattern}", tmp_path / "l.json", *limit)
            if j["remote"]["cache_hits"] == len(names):
                return
        raise AssertionError(f"{names} never all cached: {cached()}")

    fill("train-0000[01]-*", shards[:2])
    assert cached() == shards[:2]
    fill("train-0000[23]-*", shards[2:4])  # room only by evicting the first two
    assert cached() == shards[2:4]


def test_cache_clears_what_killed_runs_left(server, dataset, tmp_path):
    """A download cut off by a kill (its .tmp-PID, PID gone) and a copy whose
    sidecar was never written go when room is next made; live ones stay."""
    root, shards = dataset
    env = server.env()
    cache = tmp_path / "killed"
    cache.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (cache / f"0badc0de-{shards[0]}.tmp-{dead.pid}").write_bytes(b"x" * 1000)
    alive = cache / f"0badc0de-{shards[0]}.tmp-{os.getpid()}"
    alive.write_bytes(b"x" * 1000)
    orphan = cache / f"1badc0de-{shards[1]}"
    orphan.write_bytes(b"y" * 1000)
    (cache / f"1badc0de-{shards[1]}.lock").write_bytes(b"")
    hour_ago = time.time() - 3600
    os.utime(orphan, (hour_ago, hour_ago))
    for attempt in range(6):
        j = bench_json(env, f"s3://{BUCKET}/ds", tmp_path / "k.json", "--cache-dir", str(cache))
        if j["remote"]["cache_hits"] == len(shards):
            break
    assert j["remote"]["cache_hits"] == len(shards)
    names = {p.name for p in cache.iterdir()}
    assert f"0badc0de-{shards[0]}.tmp-{dead.pid}" not in names and orphan.name not in names
    assert alive.name in names


def test_python_module_reads_s3(server, dataset, monkeypatch):
    import sluice as sl
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    root, _ = dataset
    labels = {}
    for src in (str(root / "ds"), f"s3://{BUCKET}/ds"):
        pipe = sl.Pipeline(src, batch_size=16, image_size=32, order="none", workers=2)
        labels[src] = [l.copy() for _, l in pipe]
        if src.startswith("s3://"):
            assert pipe.stats()["remote"]["requests"] > 0
    a, b = labels.values()
    assert all((x == y).all() for x, y in zip(a, b)) and len(a) == len(b)


def objects(server, prefix):
    listed = server.client().list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"][len(prefix):] for o in listed.get("Contents", []))


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Enough image bytes for a shard over S3's 5 MiB smallest part."""
    root = tmp_path_factory.mktemp("s3img")
    run(dict(os.environ), "synth", str(root), "--classes", "3", "--per-class", "120",
        "--size", "160", "--quality", "97", "--png-fraction", "0.3")
    return root / "train"


def test_convert_to_s3_uploads_in_parts_and_reads_back_the_same(server, images, tmp_path):
    env = dict(server.env(), SLUICE_UPLOAD_PART_MB="5")
    run(env, "convert", str(images), "-o", str(tmp_path / "local"), "--shards", "2", "-q")
    run(env, "convert", str(images), "-o", f"s3://{BUCKET}/conv/", "--shards", "2", "-q")
    local = sorted(os.listdir(tmp_path / "local"))
    assert objects(server, "conv/") == local
    big = max((tmp_path / "local").glob("*.tfrecord"), key=os.path.getsize)
    assert big.stat().st_size > 5 << 20  # so its upload was multipart
    head = server.client().head_object(Bucket=BUCKET, Key="conv/" + big.name)
    assert head["ETag"].strip('"').endswith("-2") or head["ETag"].count("-") == 1  # a multipart ETag
    for name in local:
        if name.endswith((".tfrecord", ".idx")):
            body = server.client().get_object(Bucket=BUCKET, Key="conv/" + name)["Body"].read()
            assert body == (tmp_path / "local" / name).read_bytes(), name
    assert digest(env, f"s3://{BUCKET}/conv") == digest(env, str(tmp_path / "local"))


def test_a_new_convert_to_s3_retires_the_old_shards(server, images):
    env = server.env()
    url = f"s3://{BUCKET}/redo/"
    run(env, "convert", str(images), "-o", url, "--shards", "3", "-q")
    run(env, "convert", str(images), "-o", url, "--shards", "2", "-q")
    names = objects(server, "redo/")
    assert names == ["dataset.json"] + [f"train-0000{i}-of-00002.{e}" for i in range(2)
                                        for e in ("idx", "tfrecord")], names


@pytest.mark.skipif(os.environ.get("SLUICE_HAS_TRAINER") != "1",
                    reason="built without LibTorch: no sluice-train (scripts/bootstrap.sh installs it)")
def test_train_and_extract_from_s3(server, dataset, tmp_path):
    root, _ = dataset
    env = server.env()
    url = f"s3://{BUCKET}/tv/"
    img = root / "img"
    run(env, "convert", str(img / "train"), "-o", url, "--shards", "2", "-q")
    # A second split joins the first in the same dataset.json, fetched and
    # written back as a folder's would be.
    run(env, "convert", str(img / "val"), "-o", url, "--split", "val", "--shards", "1", "-q")
    manifest = json.loads(server.client().get_object(Bucket=BUCKET, Key="tv/dataset.json")["Body"].read())
    assert set(manifest["splits"]) == {"train", "val"}
    out = run(env, "train", url, "--model", "seed-cnn", "--size", "16", "--batch", "8", "--epochs", "1",
              "--checkpoint-dir", str(tmp_path / "ck"), "--summary", str(tmp_path / "s.json")).stdout
    assert "val" in out  # the dataset's own val split is found at the s3 location too
    with open(tmp_path / "s.json") as f:
        assert json.load(f)["images"] > 0
    run(env, "extract", url, "--split", "val", "--weights", str(tmp_path / "ck" / "last.pt"),
        "--size", "16", "--out", str(tmp_path / "f.npy"))
    import numpy as np
    assert len(np.load(tmp_path / "f.npy")) == manifest["splits"]["val"]["records"]


def test_convert_parts_to_s3_then_finish(server, images, tmp_path):
    env = server.env()
    run(env, "convert", str(images), "-o", str(tmp_path / "one"), "--shards", "5", "-q")
    url = f"s3://{BUCKET}/parts/"
    for i in range(3):
        run(env, "convert", str(images), "-o", url, "--shards", "5", "--part", f"{i}/3", "-q")
    assert "dataset.json" not in objects(server, "parts/")
    run(env, "convert", "--finish", url)
    names = objects(server, "parts/")
    assert "dataset.json" in names and not any(n.startswith(".parts/") for n in names)
    assert digest(env, url) == digest(env, str(tmp_path / "one"))


def test_finishing_one_split_leaves_the_other_splits_parts(server, images):
    env = server.env()
    url = f"s3://{BUCKET}/twosplits/"
    for split in ("train", "val"):
        for i in range(2):
            run(env, "convert", str(images), "-o", url, "--split", split, "--shards", "2",
                "--part", f"{i}/2", "-q")
    run(env, "convert", "--finish", url, "--split", "train")
    assert sorted(n for n in objects(server, "twosplits/") if n.startswith(".parts/")) == [
        f".parts/val-part-0000{i}-of-00002.json" for i in range(2)]
    run(env, "convert", "--finish", url, "--split", "val")
    manifest = json.loads(server.client().get_object(
        Bucket=BUCKET, Key="twosplits/dataset.json")["Body"].read())
    assert set(manifest["splits"]) == {"train", "val"}
    assert not any(n.startswith(".parts/") for n in objects(server, "twosplits/"))


def test_finish_names_a_missing_part_on_s3(server, images):
    env = server.env()
    url = f"s3://{BUCKET}/halfdone/"
    run(env, "convert", str(images), "-o", url, "--shards", "4", "--part", "0/2", "-q")
    p = run(env, "convert", "--finish", url, check=None)
    assert p.returncode != 0 and "part 1 of 2" in p.stderr, p.stderr


def test_interrupted_convert_to_s3_leaves_no_dataset_json(server, images):
    # The store refuses the last upload: the shards went up, the manifest not.
    proxy = FaultProxy(server.port,
                       lambda n, line: "503" if "dataset.json" in line and line.startswith("PUT") else None)
    try:
        env = dict(server.env(endpoint=proxy.url), SLUICE_REMOTE_ATTEMPTS="2")
        p = run(env, "convert", str(images), "-o", f"s3://{BUCKET}/cut/", "--shards", "2", "-q",
                check=None)
        assert p.returncode != 0 and "dataset.json" in p.stderr
    finally:
        proxy.close()
    names = objects(server, "cut/")
    assert "dataset.json" not in names and any(n.endswith(".tfrecord") for n in names)
    p = run(server.env(), "bench", f"s3://{BUCKET}/cut/dataset.json", "--epochs", "1", check=None)
    assert p.returncode != 0
