#!/usr/bin/env bash
# Installs everything the build and the test suite need, and nothing when it
# is all there already. Safe to run again; run as root (or with sudo).
# Arguments name more Debian packages to install the same way
# (scripts/test-sanitizers.sh asks for libclang-rt-22-dev).
set -euo pipefail

APT_PACKAGES=(
  cmake ninja-build
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  clang-22 lld-22
  libopenblas-dev # cblas.h and libopenblas for librnn_runtime's GEMM
  "$@"
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages of the numerics tests (numpy references, pytest): with pip
# where the Python allows it, else Debian's packages (Debian's own python3
# refuses pip installs outside a virtual environment).
if ! python3 -c "import numpy, pytest" 2>/dev/null; then
  echo "install-deps: installing numpy and pytest"
  if ! python3 -m pip install --quiet --disable-pip-version-check numpy pytest 2>/dev/null; then
    SUDO=""
    if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      python3-numpy python3-pytest >/dev/null
  fi
fi

# pytest-xdist, so that scripts/test.sh runs the Python tests on every core (on 2 cores the
# suite's Python part took 7.5 instead of 11.3 minutes).
if ! python3 -c "import xdist" 2>/dev/null; then
  echo "install-deps: installing pytest-xdist (PyPI)"
  python3 -m pip install --quiet --disable-pip-version-check pytest-xdist 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages pytest-xdist
fi

# PyTorch, for rnn.RNN (a torch.nn.Module) and its tests: about 1 GB to download and 5 GB
# installed with its CUDA wheels (PyPI's Linux build; it runs on the CPU where there is no
# GPU), about a minute on a fast connection. Installed once; later runs find it.
if ! python3 -c "import torch" 2>/dev/null; then
  echo "install-deps: installing torch (PyPI; ~5 GB installed, once)"
  python3 -m pip install --quiet --disable-pip-version-check torch 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages torch
fi

# onnx, for rnn.onnx (importing ONNX models) and its tests, which read the package's own
# LSTM / GRU / RNN node tests and check against its reference evaluator (a few MB).
if ! python3 -c "import onnx" 2>/dev/null; then
  echo "install-deps: installing onnx (PyPI)"
  python3 -m pip install --quiet --disable-pip-version-check onnx 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages onnx
fi
