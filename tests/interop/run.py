"""Runs one interop test file under pytest in the project's Python
environment (build/venv, made by scripts/python_env.sh), with Debian's
python3 only as the launcher. A missing or stale environment is a failure
that says how to make it, never a skip: these tests are the only proof that
real TensorFlow, TensorBoard, JAX and DALI read what sluice writes.

    run.py TEST_FILE.py [PYTEST ARGS...]   (CTest passes SLUICE_VENV, SLUICE_BIN, ...)"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    venv = os.environ["SLUICE_VENV"]
    python = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, ".pinned-interop-requirements")
    if not (os.access(python, os.X_OK) and os.path.exists(stamp)):
        print(f"interop: no Python environment at {venv} with tests/interop/requirements.txt "
              "installed.\n  Make it with scripts/python_env.sh (needs PyPI; `make test` runs it "
              "through scripts/bootstrap.sh --interop).", file=sys.stderr)
        return 1
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONDONTWRITEBYTECODE="1")
    args = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", HERE,
            os.path.join(HERE, sys.argv[1]), *sys.argv[2:]]
    os.execve(python, args, env)


if __name__ == "__main__":
    sys.exit(main())
