#!/usr/bin/env bash
# The `gpulab` command's wheel and the wheels it needs, for the portal's /cli/ page: a lab without internet installs
# it from the portal (pip install --no-index --find-links URL/cli/wheels/ gpulab-cli). Pure-Python wheels only, so
# they install on any student's machine and Python >= 3.11. Run where the package index can be reached (make demo,
# the image build); the portal serves what is in the folder and says so when it is empty.
#   bash scripts/cli_wheels.sh [DIR] [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-var/cli-wheels}
python=${2:-.venv/bin/python}
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
"$python" -m pip wheel --quiet --no-deps --wheel-dir "$fresh" ./cli
"$python" -m pip download --quiet --dest "$fresh" --only-binary=:all: --platform any --implementation py \
  --python-version 3.11 "$fresh"/gpulab_cli-*.whl
mkdir -p "$dir"
rm -f "$dir"/*.whl
cp "$fresh"/*.whl "$dir"/
echo "[cli-wheels] $(ls "$dir" | wc -l) wheels in $dir"
