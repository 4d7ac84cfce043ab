import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))

SLUICE = os.environ["SLUICE_BIN"]


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    """A small synthetic dataset converted to two shards (60 train images, 4 classes)."""
    root = tmp_path_factory.mktemp("data")
    subprocess.run([SLUICE, "synth", str(root / "images"), "--classes", "4", "--per-class", "15",
                    "--size", "24"], check=True, capture_output=True)
    import sluice
    sluice.convert(str(root / "images" / "train"), str(root / "shards"), shards=2)
    return root
