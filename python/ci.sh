#!/usr/bin/env bash
# Builds the Python package from source into a fresh virtual environment and
# runs its tests: python/ci.sh [PYTEST ARGS...]
#
# Installs everything it needs itself (maturin, pytest and mypy from PyPI; the
# extension is compiled by cargo through maturin, into the workspace's
# target/), runs pytest and checks the type stubs against the built module
# (mypy's stubtest); exits non-zero on any failure. PYTHON picks the interpreter
# (default python3, >= 3.9); SHAMAP_VENV the environment's directory
# (default target/python-venv, recreated on every run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

python=${PYTHON:-python3}
venv=${SHAMAP_VENV:-target/python-venv}
start=$(date +%s)

echo "== python package: fresh venv in $venv ($("$python" --version 2>&1))"
rm -rf "$venv"
"$python" -m venv "$venv"
py="$venv/bin/python"

echo "== pip install maturin pytest mypy"
"$py" -m pip install --quiet maturin pytest mypy

echo "== pip install ./python (maturin builds the extension with cargo, release profile)"
"$py" -m pip install --quiet ./python
"$py" -c 'import shamap, sys; print("shamap", shamap.__version__, "from", shamap.__file__, "on", sys.version.split()[0])'

echo "== pytest python/tests"
# -p no:cacheprovider: nothing written into the source tree.
"$py" -m pytest python/tests -q -rs -p no:cacheprovider "$@"

echo "== type stubs against the module (mypy stubtest)"
# From inside the venv: nothing beside the installed package is importable,
# and mypy's cache stays out of the source tree.
(cd "$venv" && bin/python -m mypy.stubtest shamap)

echo "== python package passed in $(( $(date +%s) - start )) s"
