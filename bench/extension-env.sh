# Sourced by the GPU machine's scripts that install carried wheels and let torch build CUDA
# extensions there (bench/flashrnn-run.sh, bench/xlstm-run.sh): install_wheels WHEEL...
# installs them offline without their dependencies (into the system interpreter where pip
# refuses otherwise); then ninja's launcher (in the interpreter's scripts directory) and nvcc
# are on PATH, as torch's extension builder looks them up, with one build job per core.
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
install_wheels() {
  python3 -m pip install -q --no-index --no-deps "$@" \
    || python3 -m pip install -q --no-index --no-deps --break-system-packages "$@"
}
export PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
export PATH="$CUDA_HOME/bin:$PATH"
export MAX_JOBS="${MAX_JOBS:-$(nproc)}"
