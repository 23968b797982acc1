#!/usr/bin/env bash
# Builds the Python package from source into a fresh virtual environment and
# runs its tests: python/ci.sh [PYTEST ARGS...]
#
# Installs everything it needs itself (maturin and pytest from PyPI; the
# extension is compiled by cargo through maturin, into the workspace's
# target/) and exits non-zero on any failure. PYTHON picks the interpreter
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

echo "== pip install maturin pytest"
"$py" -m pip install --quiet maturin pytest

echo "== pip install ./python (maturin builds the extension with cargo, release profile)"
"$py" -m pip install --quiet ./python
"$py" -c 'import shamap, sys; print("shamap", shamap.__version__, "from", shamap.__file__, "on", sys.version.split()[0])'

echo "== pytest python/tests"
# -p no:cacheprovider: nothing written into the source tree.
"$py" -m pytest python/tests -q -rs -p no:cacheprovider "$@"

echo "== python package passed in $(( $(date +%s) - start )) s"
