"""pip install . — builds the sluice Python module with the project's CMake.

Offline and with Debian's packages only (scripts/bootstrap.sh installs
them): there is no pyproject.toml, so pip builds with the setuptools it
finds instead of fetching one. On Debian, install into a virtual
environment (python3 -m venv --system-site-packages ENV) or with
--break-system-packages, as PEP 668 asks."""

import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    """The version, from its one home: project(sluice VERSION ...) in CMakeLists.txt."""
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(sluice VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("CMakeLists.txt: no project(sluice VERSION ...)")
    return m.group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                               "-DSLUICE_BUILD_TESTS=OFF", "-DSLUICE_BUILD_BENCH=OFF",
                               f"-DPython_EXECUTABLE={sys.executable}"])
        subprocess.check_call(["cmake", "--build", build, "--target", "_sluice", "-j2"])
        built = glob.glob(os.path.join(build, "python", "sluice", "_sluice*.so"))
        if not built:
            raise RuntimeError("the CMake build produced no _sluice module")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy(built[0], target)


setup(
    name="sluice",
    version=project_version(),
    description="Keeps GPUs fed: a C++ input pipeline for image training and feature extraction",
    packages=["sluice"],
    package_dir={"": "python"},
    ext_modules=[Extension("sluice._sluice", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
)
