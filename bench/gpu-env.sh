# Sourced by the scripts that run on the GPU machine: the runtime libraries
# carried in $GPU/lib first, then the CUDA toolkit's cuBLAS, else the one
# PyTorch ships; the Python binding loads the carried runtime.
CUBLAS_DIR=$(python3 -c "import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), 'lib'))" 2>/dev/null || true)
export LD_LIBRARY_PATH="$GPU/lib:/usr/local/cuda/lib64:${CUBLAS_DIR}:${LD_LIBRARY_PATH:-}"
export RNN_RUNTIME_LIB="$GPU/lib/librnn_runtime.so"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
