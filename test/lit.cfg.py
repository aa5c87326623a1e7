# -*- Python -*-
# lit configuration for the rnn test suite: FileCheck tests of the dialect,
# the passes and the tools, and the examples/ directory (every example is a
# test of its own).

import os

import lit.formats
import lit.util
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "RNN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.rnn_obj_root, "test")
# test/python holds the pytest suite (and its .mlir models), run by
# scripts/test.sh next to lit.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "python", "consumer"]

config.substitutions.append(("%rnn_src_root", config.rnn_src_root))
config.substitutions.append(("%rnn_obj_root", config.rnn_obj_root))
config.substitutions.append(("%examples", os.path.join(config.rnn_src_root, "examples")))
# test/Embedding builds a project against the installed package.
config.substitutions.append(("%cmake", config.cmake))
config.substitutions.append(("%c_compiler", config.c_compiler))
config.substitutions.append(("%cxx_compiler", config.cxx_compiler))

# %rnn_python: python3 for RUN lines that load our libraries into the interpreter.
# In a sanitized build (RNN_ENABLE_SANITIZERS, scripts/test-sanitizers.sh) the
# interpreter is not instrumented: the ASan runtime is preloaded into it, and
# leak detection is off there (LSan would report the interpreter's own memory
# left at exit; the tools and C programs keep it).
python = "python3"
if lit.util.pythonize_bool(config.rnn_sanitizers):
    asan_options = ":".join(o for o in (os.environ.get("ASAN_OPTIONS"), "detect_leaks=0") if o)
    python = f"env LD_PRELOAD={config.rnn_asan_runtime} ASAN_OPTIONS={asan_options} python3"
config.substitutions.append(("%rnn_python", python))

# Variables named in CHECK lines must not leak across CHECK-LABEL blocks.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.rnn_tools_dir, config.llvm_tools_dir]
tools = ["rnn-opt", "rnn-compile", "rnn-runtime-test", "rnn-example-run-lstm", "rnn-import-onnx"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.add_tool_substitutions(["llvm-as", "llvm-nm", "llvm-readelf", "not"], [config.llvm_tools_dir])

# rnn-import-onnx reads models with the onnx Python package.
import subprocess  # noqa: E402

if subprocess.run(["python3", "-c", "import onnx"], capture_output=True).returncode == 0:
    config.available_features.add("onnx")

# The CUDA lowering serialises kernels with the toolkit's ptxas; its tests
# need the toolkit (CI has it), not a GPU.
# The persistent kernels link the device library (built with the toolkit).
cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
device_library = os.path.join(config.rnn_obj_root, "lib", "rnn_device_library.bc")
config.substitutions.append(("%device_library", device_library))
if (
    os.path.exists(os.path.join(cuda_home, "bin", "ptxas"))
    and os.path.exists(os.path.join(config.rnn_obj_root, "lib", "librnn_runtime_cuda.so"))
    and os.path.exists(device_library)
):
    config.available_features.add("cuda-toolkit")
