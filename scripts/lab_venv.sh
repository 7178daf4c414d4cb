#!/usr/bin/env bash
# The lab's Python environment on the local cluster: what its jobs run (PyTorch on CPU for the Tiny LM templates,
# JupyterLab for the JupyterLab template). Shared by `make demo` and `make test`; run as root.
#   scripts/lab_venv.sh [DIR] [USER]   make DIR (default /opt/gpulab-lab-venv) unless USER can already import both
# It is made from the system interpreter, so the lab users can run it (a venv of a Python under /root would point
# where they cannot read). Pinned here; the JupyterLab template needs `jupyter lab` and torch in one environment.
set -euo pipefail
LAB_VENV=${1:-${GPULAB_LAB_VENV:-/opt/gpulab-lab-venv}}
LAB_USER=${2:-${GPULAB_SERVICE_USER:-labsvc}}
PACKAGES=(torch==2.13.0 numpy==2.3.4 jupyterlab==4.6.4)
check='import torch, jupyterlab, numpy'
if id "$LAB_USER" >/dev/null 2>&1 && runuser -u "$LAB_USER" -- "$LAB_VENV/bin/python" -c "$check" 2>/dev/null; then
  exit 0
fi
echo "[lab-venv] making $LAB_VENV (${PACKAGES[*]})"
[ -x "$LAB_VENV/bin/python" ] || /usr/bin/python3 -m venv "$LAB_VENV"
"$LAB_VENV/bin/pip" install -q "${PACKAGES[@]}"
chmod -R a+rX "$LAB_VENV"
