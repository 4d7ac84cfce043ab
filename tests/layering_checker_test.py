#!/usr/bin/env python3
"""scripts/check_layering.py on made-up trees: it passes a tree whose
includes follow its links, and names each kind of violation."""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = sys.argv.pop(1) if len(sys.argv) > 1 else "scripts/check_layering.py"


def tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


MANIFEST = """layer base sluice_base
headers status.h
public
private
layer image sluice_image
headers image.h
public sluice::base
private
layer device sluice_device
headers
public
private sluice::base dl
layer cli sluice
headers
public
private sluice::image CLI11::CLI11
"""

GOOD = {
    "include/sluice/status.h": "#pragma once\n",
    "include/sluice/image.h": '#include "sluice/status.h"\n',
    "src/base/status.cc": '#include "sluice/status.h"\n',
    "src/image/decode.cc": '#include "sluice/image.h"\n#include "image/inner.h"\n',
    "src/image/inner.h": '#include "sluice/status.h"\n#include <vector>\n',
    "src/device/kernels.h": '#include "sluice/status.h"\n',
    "src/cli/main.cc": '#include "sluice/image.h"\n#include "sluice/status.h"\n#include "CLI/CLI.hpp"\n',
}


class LayeringCheckerTest(unittest.TestCase):
    def check(self, files, manifest=MANIFEST):
        with tempfile.TemporaryDirectory() as root:
            tree(root, files)
            with open(os.path.join(root, "layering.txt"), "w") as f:
                f.write(manifest)
            return subprocess.run([sys.executable, CHECKER, os.path.join(root, "layering.txt"), root],
                                  capture_output=True, text=True)

    def test_a_tree_that_follows_its_links_passes(self):
        p = self.check(GOOD)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("layering holds: 4 layers", p.stdout)

    def test_an_include_without_a_link_is_named(self):
        p = self.check(dict(GOOD, **{"src/cli/main.cc": '#include "device/kernels.h"\n'}))
        self.assertEqual(p.returncode, 1)
        self.assertIn("src/cli/main.cc: includes device/kernels.h of device, but sluice does not link device",
                      p.stdout)

    def test_a_private_edge_is_not_passed_on(self):
        # cli links image; image links device only PRIVATE: cli may not use device.
        manifest = MANIFEST.replace("layer image sluice_image\nheaders image.h\npublic sluice::base\nprivate\n",
                                    "layer image sluice_image\nheaders image.h\npublic sluice::base\n"
                                    "private sluice::device\n")
        p = self.check(dict(GOOD, **{"src/cli/main.cc": '#include "device/kernels.h"\n'}), manifest)
        self.assertEqual(p.returncode, 1)
        self.assertIn("does not link device", p.stdout)

    def test_an_interface_header_needs_a_public_edge(self):
        manifest = MANIFEST.replace("layer image sluice_image\nheaders image.h\npublic sluice::base\nprivate\n",
                                    "layer image sluice_image\nheaders image.h\npublic sluice::base\n"
                                    "private sluice::device\n")
        p = self.check(dict(GOOD, **{"include/sluice/image.h": '#include "device/kernels.h"\n'}), manifest)
        self.assertEqual(p.returncode, 1)
        self.assertIn("include/sluice/image.h: an interface header includes device/kernels.h of device, "
                      "which sluice_image does not link PUBLIC", p.stdout)

    def test_an_unneeded_public_edge_is_named(self):
        manifest = MANIFEST.replace("layer image sluice_image\nheaders image.h\npublic sluice::base\n",
                                    "layer image sluice_image\nheaders image.h\npublic sluice::base sluice::device\n")
        p = self.check(GOOD, manifest)
        self.assertEqual(p.returncode, 1)
        self.assertIn("sluice_image links device PUBLIC, but its interface includes nothing of device's: "
                      "PRIVATE serves", p.stdout)

    def test_a_public_header_no_module_owns_is_named(self):
        p = self.check(dict(GOOD, **{"src/cli/main.cc": '#include "sluice/orphan.h"\n'}))
        self.assertEqual(p.returncode, 1)
        self.assertIn("include/sluice/orphan.h: no module owns it", p.stdout)


if __name__ == "__main__":
    unittest.main()
