#!/usr/bin/env bash
# Makes the project's own Python environment for the interop tests and the
# peer benchmarks: build/venv, from Debian's /usr/bin/python3 (never another
# python3 on PATH, never into a system Python), with exactly the pinned
# packages of the requirements files given (default: the interop tests').
#
#   scripts/python_env.sh [REQUIREMENTS.txt ...]
#
# Idempotent and fast when done: a stamp per requirements file holds its
# checksum and the interpreter's version, so a second run only compares
# them. A changed file rebuilds the environment from scratch (installing
# over it would leave packages the new pins dropped). Packages come from PyPI
# through pip's cache (~/.cache/pip), wheels only, with --no-deps: the files
# pin the whole environment, and `pip check` proves it is consistent.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${SLUICE_VENV:-$root/build/venv}"
python=/usr/bin/python3
[ $# -gt 0 ] || set -- "$root/tests/interop/requirements.txt"

interpreter="$("$python" -c 'import sys; print(sys.version.split()[0])')"
stamp_of() {  # stamp file name (without checksum) and checksum of one file
  local req="$1" name
  name="$(basename "$(dirname "$(realpath "$req")")")-$(basename "$req" .txt)"
  echo "$venv/.pinned-$name" "$( (cat "$req"; echo "$interpreter") | sha256sum | cut -c1-16)"
}

todo=()
for req in "$@"; do
  read -r stamp sum < <(stamp_of "$req")
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] && continue
  if [ -f "$stamp" ]; then
    echo "python_env: $req changed: making $venv again"
    rm -rf "$venv"
  fi
  todo+=("$req")
done
[ ${#todo[@]} -eq 0 ] && exit 0

if [ ! -x "$venv/bin/python" ]; then
  echo "python_env: creating $venv ($python $interpreter)"
  "$python" -m venv "$venv"
  todo=("$@")  # a new environment needs every file, stamped or not
fi
for req in "${todo[@]}"; do
  echo "python_env: installing $req into $venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    -r "$req"
done
"$venv/bin/pip" check --disable-pip-version-check >/dev/null || {
  "$venv/bin/pip" check --disable-pip-version-check >&2
  echo "python_env: the pinned set is inconsistent (above)" >&2
  exit 1
}
for req in "${todo[@]}"; do
  read -r stamp sum < <(stamp_of "$req")
  echo "$sum" > "$stamp"
done
echo "python_env: ready: $venv"
