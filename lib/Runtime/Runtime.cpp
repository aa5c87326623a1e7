//===- Runtime.cpp - Loading, checking and running compiled models --------===//
//
// A model library describes its functions in the text `rnn_manifest`. Loading
// parses it once into signatures (ModelManifest.h); every call is then checked
// against them before the model sees its tensors as MLIR memref descriptors,
// because the compiled code trusts its descriptors completely and a wrong size
// there is an out-of-bounds write, not an error.
//
// Errors are reported as a status plus a per-thread message. Every entry
// point catches allocation failures (the only exceptions that can arise
// here), so that nothing is thrown across the C boundary.
//
//===----------------------------------------------------------------------===//

// Only the C API leaves the library (the target builds with hidden
// visibility); this header declares it.
#pragma GCC visibility push(default)
#include "rnn/Runtime/rnn_runtime.h"
#pragma GCC visibility pop

#include "CpuGemm.h"
#include "Dtypes.h"
#include "LibraryFileCheck.h"
#include "ModelAllocations.h"
#include "ModelManifest.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

// Kept until the next failing call on the thread: a successful call does not
// clear it, so the message of a failure is still there after a cleanup call.
static thread_local std::string lastError;

static rnn_status fail(rnn_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

/// Runs an entry point's body, turning an exception into a status.
template <typename Body> static rnn_status guarded(Body body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    // Short enough for the string's inline buffer, so this cannot allocate.
    lastError.assign("out of memory");
  } catch (...) {
    // Not from the runtime, which only allocates; a model library's C++
    // static constructors run inside dlopen and could throw.
    try {
      lastError.assign("a C++ exception escaped from the model library");
    } catch (...) {
      lastError.clear();
    }
  }
  return RNN_ERROR_INTERNAL;
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

/// The value of an enum that came from C, where it may hold any int. Reading
/// it as the C++ enum would be undefined for values outside the enumerators'
/// range, so its bytes are read as an int instead.
template <typename Enum> static int valueOf(const Enum &value) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are ints");
  int bits;
  memcpy(&bits, &value, sizeof(bits));
  return bits;
}

using rnn::runtime::Binder;
using rnn::runtime::checkLibraryFile;
using rnn::runtime::Dim;
using rnn::runtime::dtypeName;
using rnn::runtime::Function;
using rnn::runtime::LibraryFileProblem;
using rnn::runtime::TensorSpec;

struct rnn_model {
  rnn_model() = default;
  rnn_model(const rnn_model &) = delete;
  rnn_model &operator=(const rnn_model &) = delete;
  // Closing here also covers a load that fails, or throws, after dlopen.
  ~rnn_model() {
    if (releaseCudaGraphs)
      releaseCudaGraphs(graphPrefix.data(), graphPrefix.size());
    if (handle)
      dlclose(handle);
  }

  std::string path;
  void *handle = nullptr;
  std::vector<Function> functions;
  /// Set for a CUDA model (one exporting `rnn_target` = "cuda"): its calls
  /// run on the caller's stream and report CUDA errors through these hooks
  /// of librnn_runtime_cuda, which the model links.
  void (*setCudaStream)(void *) = nullptr;
  int32_t (*takeCudaError)(char *, size_t) = nullptr;
  int32_t (*cudaCall)(void *, void (*)(void **), void **, const char *,
                      size_t) = nullptr;
  void (*releaseCudaGraphs)(const char *, size_t) = nullptr;
  /// Distinguishes this load from any other (the same library loaded again
  /// may land at the same addresses) in the keys of its CUDA graphs.
  std::string graphPrefix;
};

//===----------------------------------------------------------------------===//
// Checking calls
//===----------------------------------------------------------------------===//

static std::string shapeString(const int64_t *shape, int32_t rank) {
  std::string text = "[";
  for (int32_t d = 0; d < rank; ++d) {
    if (d)
      text += ", ";
    text += std::to_string(shape[d]);
  }
  return text + "]";
}

/// A signature's shape, with each symbol shown as `s<k>=<size>` once a call
/// has bound it and as `s<k>` before.
static std::string specString(const Function &function, const TensorSpec &spec,
                              const int64_t *bound) {
  std::string text = "[";
  for (int32_t d = 0; d < spec.rank; ++d) {
    if (d)
      text += ", ";
    const Dim &dim = spec.dims[d];
    if (dim.symbol < 0) {
      text += std::to_string(dim.size);
      continue;
    }
    text += "s" + std::to_string(function.symbolNames[dim.symbol]);
    if (bound && bound[dim.symbol] >= 0)
      text += "=" + std::to_string(bound[dim.symbol]);
  }
  return text + "]";
}

static std::string dtypeString(int dtype) {
  if (const char *name = dtypeName(dtype))
    return name;
  return "<invalid dtype " + std::to_string(dtype) + ">";
}

/// Checks one tensor against its spec. For an argument (`isArg`), binds the
/// symbols it is the binder of; for a result, every symbol is already bound
/// and the spec's shape is what the call computes. Messages are built only
/// on failure, as a run checks every tensor on every call.
static rnn_status checkTensor(const Function &function, const TensorSpec &spec,
                              const rnn_tensor &tensor, bool isArg,
                              int32_t index, int64_t *bound) {
  auto what = [&] {
    return function.name + ": " + (isArg ? "arg #" : "result #") +
           std::to_string(index);
  };
  auto expects = [&] {
    return std::string(isArg ? " but the model expects "
                             : " but the model computes ");
  };
  auto actual = [&] { return shapeString(tensor.shape, tensor.rank); };

  if (tensor.rank < 0 || tensor.rank > RNN_MAX_RANK)
    return fail(RNN_ERROR_SHAPE_MISMATCH,
                what() + " has rank " + std::to_string(tensor.rank) +
                    ", outside the supported 0 to " +
                    std::to_string(RNN_MAX_RANK) + expects() + "rank " +
                    std::to_string(spec.rank) + " " +
                    specString(function, spec, bound));
  int dtype = valueOf(tensor.dtype);
  if (dtype != int(spec.dtype))
    return fail(RNN_ERROR_DTYPE_MISMATCH, what() + " has dtype " +
                                              dtypeString(dtype) + expects() +
                                              dtypeName(spec.dtype));
  if (tensor.rank != spec.rank)
    return fail(RNN_ERROR_SHAPE_MISMATCH,
                what() + " has rank " + std::to_string(tensor.rank) + " " +
                    actual() + expects() + "rank " + std::to_string(spec.rank) +
                    " " + specString(function, spec, bound));

  int64_t elements = 1;
  for (int32_t d = 0; d < tensor.rank; ++d) {
    int64_t size = tensor.shape[d];
    if (size < 0)
      return fail(RNN_ERROR_SHAPE_MISMATCH, what() + " has shape " + actual() +
                                                ", with the negative size " +
                                                std::to_string(size) +
                                                " in dim " + std::to_string(d));
    if (__builtin_mul_overflow(elements, size, &elements))
      return fail(RNN_ERROR_SHAPE_MISMATCH,
                  what() + " has shape " + actual() +
                      ", whose element count overflows int64");
  }
  if (!tensor.data && elements != 0)
    return fail(RNN_ERROR_INVALID_ARGUMENT,
                what() + " has a null data pointer but shape " + actual() +
                    " (" + std::to_string(elements) + " elements)");

  for (int32_t d = 0; d < spec.rank; ++d) {
    const Dim &dim = spec.dims[d];
    int64_t size = tensor.shape[d];
    if (dim.symbol < 0) {
      if (size != dim.size)
        return fail(RNN_ERROR_SHAPE_MISMATCH,
                    what() + " has shape " + actual() + expects() +
                        specString(function, spec, bound) + ": dim " +
                        std::to_string(d) + " is " + std::to_string(size) +
                        ", not " + std::to_string(dim.size));
      continue;
    }
    const Binder &binder = function.binders[dim.symbol];
    if (isArg && binder.arg == index && binder.dim == d) {
      bound[dim.symbol] = size;
      continue;
    }
    int64_t expected = bound[dim.symbol];
    if (size == expected)
      continue;
    return fail(RNN_ERROR_SHAPE_MISMATCH,
                what() + " has shape " + actual() + expects() +
                    specString(function, spec, bound) + ": dim " +
                    std::to_string(d) + " is " + std::to_string(size) +
                    ", not " + std::to_string(expected) + " (s" +
                    std::to_string(function.symbolNames[dim.symbol]) +
                    " is the size bound by arg #" + std::to_string(binder.arg) +
                    " dim " + std::to_string(binder.dim) + ")");
  }
  return RNN_OK;
}

/// Finds `name`, checking the model and name pointers first. `api` names the
/// entry point for messages that cannot name a function.
static rnn_status findFunction(const rnn_model *model, const char *name,
                               const char *api, const Function *&function) {
  if (!model)
    return fail(RNN_ERROR_INVALID_ARGUMENT,
                std::string(api) + ": the model is null");
  if (!name)
    return fail(RNN_ERROR_INVALID_ARGUMENT,
                std::string(api) + ": the function name is null");
  for (const Function &candidate : model->functions) {
    if (candidate.name == name) {
      function = &candidate;
      return RNN_OK;
    }
  }
  std::string known;
  for (const Function &candidate : model->functions)
    known += (known.empty() ? "" : ", ") + candidate.name;
  return fail(RNN_ERROR_NOT_FOUND,
              std::string(api) + ": no function '" + name + "' in model " +
                  model->path +
                  " (it has: " + (known.empty() ? "none" : known) + ")");
}

/// Everything rnn_model_run and rnn_model_result_shapes check about the
/// arguments and the counts; on success `bound` holds each symbol's size.
static rnn_status checkCall(const Function &function, const rnn_tensor *args,
                            int32_t numArgs, const rnn_tensor *results,
                            int32_t numResults, std::vector<int64_t> &bound) {
  const std::string &name = function.name;
  if (numArgs != int32_t(function.args.size()))
    return fail(RNN_ERROR_INVALID_ARGUMENT,
                name + ": expected " + std::to_string(function.args.size()) +
                    " arguments, got " + std::to_string(numArgs));
  if (numResults != int32_t(function.results.size()))
    return fail(RNN_ERROR_INVALID_ARGUMENT,
                name + ": expected " + std::to_string(function.results.size()) +
                    " results, got " + std::to_string(numResults));
  if (!args && numArgs > 0)
    return fail(RNN_ERROR_INVALID_ARGUMENT, name + ": args is null but " +
                                                std::to_string(numArgs) +
                                                " arguments are expected");
  if (!results && numResults > 0)
    return fail(RNN_ERROR_INVALID_ARGUMENT, name + ": results is null but " +
                                                std::to_string(numResults) +
                                                " results are expected");

  bound.assign(function.symbolNames.size(), -1);
  for (int32_t i = 0; i < numArgs; ++i)
    if (rnn_status status = checkTensor(function, function.args[i], args[i],
                                        /*isArg=*/true, i, bound.data()))
      return status;
  return RNN_OK;
}

/// The bytes `tensor` covers: [begin, end), empty for a tensor without
/// elements. Tensors are dense, so this is its whole extent.
static std::pair<uintptr_t, uintptr_t> byteRange(const rnn_tensor &tensor) {
  int64_t count = 1;
  for (int32_t d = 0; d < tensor.rank; ++d)
    count *= tensor.shape[d];
  auto begin = reinterpret_cast<uintptr_t>(tensor.data);
  return {begin,
          begin + uintptr_t(count * rnn::runtime::dtypeBytes(tensor.dtype))};
}

/// A call writes its results while it still reads its arguments (and the
/// other results): a result that shares memory with either would be
/// corrupted, so that is refused. Runs after the tensors were checked, so
/// dtypes are valid.
static rnn_status checkResultsApart(const Function &function,
                                    const rnn_tensor *args, int32_t numArgs,
                                    const rnn_tensor *results,
                                    int32_t numResults) {
  auto overlap = [](std::pair<uintptr_t, uintptr_t> a,
                    std::pair<uintptr_t, uintptr_t> b) {
    return a.first < a.second && b.first < b.second && a.first < b.second &&
           b.first < a.second;
  };
  for (int32_t i = 0; i < numResults; ++i) {
    auto result = byteRange(results[i]);
    for (int32_t j = 0; j < numArgs; ++j)
      if (overlap(result, byteRange(args[j])))
        return fail(RNN_ERROR_INVALID_ARGUMENT,
                    function.name + ": result #" + std::to_string(i) +
                        " shares memory with arg #" + std::to_string(j) +
                        "; results are written while arguments are read, so "
                        "they must not overlap");
    for (int32_t j = 0; j < i; ++j)
      if (overlap(result, byteRange(results[j])))
        return fail(RNN_ERROR_INVALID_ARGUMENT,
                    function.name + ": result #" + std::to_string(i) +
                        " shares memory with result #" + std::to_string(j) +
                        "; every result needs a buffer of its own");
  }
  return RNN_OK;
}

/// The shape the call computes for result `index`, given the bindings.
static void resultShape(const Function &function, int32_t index,
                        const int64_t *bound, rnn_tensor &out) {
  const TensorSpec &spec = function.results[index];
  out.dtype = spec.dtype;
  out.rank = spec.rank;
  for (int32_t d = 0; d < RNN_MAX_RANK; ++d) {
    if (d >= spec.rank)
      out.shape[d] = 0;
    else if (spec.dims[d].symbol < 0)
      out.shape[d] = spec.dims[d].size;
    else
      out.shape[d] = bound[spec.dims[d].symbol];
  }
}

/// An MLIR strided memref descriptor. For rank r the callee reads sizes from
/// sizesAndStrides[0, r) and strides from [r, 2r), which is exactly the
/// `int64_t sizes[r]; int64_t strides[r];` of its own struct; the array is
/// sized for the largest rank so that one type serves every tensor.
namespace {
struct MemRefDescriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizesAndStrides[2 * RNN_MAX_RANK];
};
} // namespace
static_assert(offsetof(MemRefDescriptor, sizesAndStrides) ==
                  2 * sizeof(void *) + sizeof(int64_t),
              "the descriptor must match MLIR's layout");

static void describe(const rnn_tensor &tensor, MemRefDescriptor &descriptor) {
  descriptor.allocated = tensor.data;
  descriptor.aligned = tensor.data;
  descriptor.offset = 0;
  int32_t rank = tensor.rank;
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    descriptor.sizesAndStrides[d] = tensor.shape[d];
    descriptor.sizesAndStrides[rank + d] = stride;
    stride *= tensor.shape[d];
  }
}

static rnn_status tensorInfo(const rnn_model *model, const char *name,
                             int32_t index, rnn_tensor *info, bool isArg) {
  const char *api = isArg ? "rnn_model_arg_info" : "rnn_model_result_info";
  const Function *function = nullptr;
  if (rnn_status status = findFunction(model, name, api, function))
    return status;
  const std::vector<TensorSpec> &specs =
      isArg ? function->args : function->results;
  const char *kind = isArg ? "argument" : "result";
  if (index < 0 || index >= int32_t(specs.size()))
    return fail(RNN_ERROR_INVALID_ARGUMENT,
                function->name + ": " + kind + " index " +
                    std::to_string(index) + " is out of range (there are " +
                    std::to_string(specs.size()) + ")");
  if (!info)
    return fail(RNN_ERROR_INVALID_ARGUMENT,
                function->name + ": " + api + " was given a null info");
  const TensorSpec &spec = specs[index];
  info->data = nullptr;
  info->dtype = spec.dtype;
  info->rank = spec.rank;
  for (int32_t d = 0; d < RNN_MAX_RANK; ++d)
    info->shape[d] = d < spec.rank ? spec.dims[d].size : 0;
  return RNN_OK;
}

/// The part of rnn_model_load after dlopen succeeded.
static rnn_status readModel(rnn_model &model) {
  dlerror();
  const void *symbol = dlsym(model.handle, "rnn_manifest");
  if (!symbol)
    return fail(RNN_ERROR_BAD_MODEL,
                model.path +
                    " is not an rnn model: it exports no rnn_manifest");
  const auto *manifest = static_cast<const char *>(symbol);

  // The text is trusted to end in NUL, but where the symbol table knows the
  // array's size, check it, so that a malformed library fails here instead
  // of sending the parser past the end of its data.
  Dl_info info;
  void *entryAddress = nullptr;
  size_t length;
  bool found =
      dladdr1(manifest, &info, &entryAddress, RTLD_DL_SYMENT) && entryAddress;
  const auto *entry = static_cast<const ElfW(Sym) *>(entryAddress);
  if (found && info.dli_saddr == symbol && entry->st_size > 0) {
    const void *nul = memchr(manifest, '\0', entry->st_size);
    if (!nul)
      return fail(RNN_ERROR_BAD_MODEL,
                  model.path + ": rnn_manifest is not NUL-terminated " +
                      "within its " + std::to_string(entry->st_size) +
                      " bytes");
    length = static_cast<const char *>(nul) - manifest;
  } else {
    length = strlen(manifest);
  }

  std::string error;
  if (!rnn::runtime::parseManifest(std::string_view(manifest, length),
                                   model.functions, error))
    return fail(RNN_ERROR_BAD_MODEL, model.path + ": " + error);

  for (Function &function : model.functions) {
    std::string callName = "rnn_call_" + function.name;
    void *call = dlsym(model.handle, callName.c_str());
    if (!call)
      return fail(RNN_ERROR_BAD_MODEL,
                  model.path + ": the manifest lists function '" +
                      function.name + "' but the library exports no " +
                      callName);
    function.call = reinterpret_cast<void (*)(void **)>(call);
  }

  if (const auto *target =
          static_cast<const char *>(dlsym(model.handle, "rnn_target"));
      target && std::string_view(target) == "cuda") {
    model.setCudaStream = reinterpret_cast<void (*)(void *)>(
        dlsym(model.handle, "rnn_cuda_set_stream"));
    model.takeCudaError = reinterpret_cast<int32_t (*)(char *, size_t)>(
        dlsym(model.handle, "rnn_cuda_take_error"));
    model.cudaCall = reinterpret_cast<int32_t (*)(
        void *, void (*)(void **), void **, const char *, size_t)>(
        dlsym(model.handle, "rnn_cuda_call"));
    model.releaseCudaGraphs = reinterpret_cast<void (*)(const char *, size_t)>(
        dlsym(model.handle, "rnn_cuda_release_graphs"));
    static std::atomic<uint64_t> loads{0};
    model.graphPrefix = "model" + std::to_string(++loads) + ":";
    if (!model.setCudaStream || !model.takeCudaError || !model.cudaCall ||
        !model.releaseCudaGraphs)
      return fail(RNN_ERROR_BAD_MODEL,
                  model.path + ": a CUDA model, but librnn_runtime_cuda's "
                               "rnn_cuda_set_stream / rnn_cuda_take_error "
                               "are not reachable from it");
  }
  return RNN_OK;
}

//===----------------------------------------------------------------------===//
// The C API
//===----------------------------------------------------------------------===//

rnn_status rnn_model_load(const char *path, rnn_model **model) {
  return guarded([&]() -> rnn_status {
    if (!model)
      return fail(RNN_ERROR_INVALID_ARGUMENT,
                  "rnn_model_load: the model output pointer is null");
    *model = nullptr;
    if (!path)
      return fail(RNN_ERROR_INVALID_ARGUMENT, "rnn_model_load: path is null");

    auto loaded = std::make_unique<rnn_model>();
    loaded->path = path;
    // dlopen takes a name without a slash as a library to search for in the
    // system's paths (and "" as the program itself); a model is a file.
    std::string file = path;
    if (file.find('/') == std::string::npos)
      file = "./" + file;
    std::string damage;
    if (checkLibraryFile(file, damage) == LibraryFileProblem::Damaged)
      return fail(RNN_ERROR_BAD_MODEL,
                  std::string("cannot load model ") + path + ": " + damage);
    dlerror();
    loaded->handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!loaded->handle) {
      const char *reason = dlerror();
      return fail(RNN_ERROR_LOAD_FAILED,
                  std::string("cannot load model ") + path + ": " +
                      (reason ? reason : "dlopen failed"));
    }
    if (rnn_status status = readModel(*loaded))
      return status;
    *model = loaded.release();
    return RNN_OK;
  });
}

void rnn_model_unload(rnn_model *model) { delete model; }

int32_t rnn_model_num_functions(const rnn_model *model) {
  return model ? int32_t(model->functions.size()) : 0;
}

const char *rnn_model_function_name(const rnn_model *model, int32_t index) {
  if (!model || index < 0 || index >= int32_t(model->functions.size()))
    return nullptr;
  return model->functions[index].name.c_str();
}

rnn_status rnn_model_signature(const rnn_model *model, const char *name,
                               int32_t *num_args, int32_t *num_results) {
  return guarded([&]() -> rnn_status {
    const Function *function = nullptr;
    if (rnn_status status =
            findFunction(model, name, "rnn_model_signature", function))
      return status;
    if (!num_args || !num_results)
      return fail(RNN_ERROR_INVALID_ARGUMENT,
                  function->name +
                      ": rnn_model_signature was given a null count pointer");
    *num_args = int32_t(function->args.size());
    *num_results = int32_t(function->results.size());
    return RNN_OK;
  });
}

rnn_status rnn_model_training_info(const rnn_model *model, const char *name,
                                   rnn_training_info *info) {
  return guarded([&]() -> rnn_status {
    const Function *function = nullptr;
    if (rnn_status status =
            findFunction(model, name, "rnn_model_training_info", function))
      return status;
    if (!info)
      return fail(RNN_ERROR_INVALID_ARGUMENT,
                  function->name +
                      ": rnn_model_training_info was given a null info");
    if (function->trainName.empty())
      return fail(RNN_ERROR_NOT_FOUND,
                  function->name + " has no training forward and backward in " +
                      model->path +
                      " (compile it with rnn-compile --training)");
    info->train_function = function->trainName.c_str();
    info->backward_function = function->backwardName.c_str();
    info->num_saved = function->numSaved;
    info->num_gradients = int32_t(function->gradientArgs.size());
    info->gradient_args = function->gradientArgs.data();
    return RNN_OK;
  });
}

rnn_status rnn_model_arg_info(const rnn_model *model, const char *name,
                              int32_t index, rnn_tensor *info) {
  return guarded(
      [&] { return tensorInfo(model, name, index, info, /*isArg=*/true); });
}

rnn_status rnn_model_result_info(const rnn_model *model, const char *name,
                                 int32_t index, rnn_tensor *info) {
  return guarded(
      [&] { return tensorInfo(model, name, index, info, /*isArg=*/false); });
}

rnn_status rnn_model_result_shapes(const rnn_model *model, const char *name,
                                   const rnn_tensor *args, int32_t num_args,
                                   rnn_tensor *results, int32_t num_results) {
  return guarded([&]() -> rnn_status {
    const Function *function = nullptr;
    if (rnn_status status =
            findFunction(model, name, "rnn_model_result_shapes", function))
      return status;
    std::vector<int64_t> bound;
    if (rnn_status status =
            checkCall(*function, args, num_args, results, num_results, bound))
      return status;
    for (int32_t i = 0; i < num_results; ++i)
      resultShape(*function, i, bound.data(), results[i]);
    return RNN_OK;
  });
}

rnn_status rnn_model_run(const rnn_model *model, const char *name,
                         const rnn_tensor *args, int32_t num_args,
                         rnn_tensor *results, int32_t num_results,
                         void *stream) {
  return guarded([&]() -> rnn_status {
    const Function *function = nullptr;
    if (rnn_status status =
            findFunction(model, name, "rnn_model_run", function))
      return status;
    bool cuda = model->setCudaStream != nullptr;
    if (stream && !cuda)
      return fail(RNN_ERROR_UNSUPPORTED,
                  function->name +
                      ": a stream was given, but this is a CPU model and the "
                      "stream must be null");
    std::vector<int64_t> bound;
    if (rnn_status status =
            checkCall(*function, args, num_args, results, num_results, bound))
      return status;
    for (int32_t i = 0; i < num_results; ++i) {
      if (rnn_status status =
              checkTensor(*function, function->results[i], results[i],
                          /*isArg=*/false, i, bound.data()))
        return status;
    }
    if (rnn_status status =
            checkResultsApart(*function, args, num_args, results, num_results))
      return status;

    std::vector<MemRefDescriptor> descriptors(num_args + num_results);
    std::vector<void *> pointers(num_args + num_results);
    for (int32_t i = 0; i < num_args + num_results; ++i) {
      describe(i < num_args ? args[i] : results[i - num_args], descriptors[i]);
      pointers[i] = &descriptors[i];
    }
    rnn::runtime::clearGemmFailure();
    if (cuda) {
      // Queue the whole call on the caller's stream; errors detected while
      // queueing (a failed launch or allocation) come back here. Errors of
      // the kernels themselves surface when the caller synchronises.
      // The key of the call's CUDA graph: the function and every buffer's
      // address and shape.
      std::string key = model->graphPrefix + function->name;
      for (const MemRefDescriptor &d : descriptors)
        key.append(reinterpret_cast<const char *>(&d), sizeof(d));
      model->cudaCall(stream, function->call, pointers.data(), key.data(),
                      key.size());
      char message[1024];
      switch (model->takeCudaError(message, sizeof(message))) {
      case 0:
        break;
      case 2: // A failed allocation: the rest of the call was not queued.
        return fail(RNN_ERROR_OUT_OF_MEMORY,
                    function->name + ": out of device memory: " + message);
      default:
        return fail(RNN_ERROR_INTERNAL, function->name + ": " + message);
      }
      return RNN_OK;
    }
    size_t failedBytes = 0;
    if (!rnn::runtime::runWithAllocationGuard(function->call, pointers.data(),
                                              failedBytes))
      return fail(RNN_ERROR_OUT_OF_MEMORY,
                  function->name + ": out of memory: an allocation of " +
                      std::to_string(failedBytes) +
                      " bytes failed (the call's buffers were freed)");
    if (const rnn::runtime::GemmFailure *failure =
            rnn::runtime::getGemmFailure())
      return fail(failure->status, function->name + ": " + failure->message);
    return RNN_OK;
  });
}

const char *rnn_last_error(void) { return lastError.c_str(); }

const char *rnn_status_name(rnn_status status) {
  switch (valueOf(status)) {
  case RNN_OK:
    return "RNN_OK";
  case RNN_ERROR_INVALID_ARGUMENT:
    return "RNN_ERROR_INVALID_ARGUMENT";
  case RNN_ERROR_SHAPE_MISMATCH:
    return "RNN_ERROR_SHAPE_MISMATCH";
  case RNN_ERROR_DTYPE_MISMATCH:
    return "RNN_ERROR_DTYPE_MISMATCH";
  case RNN_ERROR_NOT_FOUND:
    return "RNN_ERROR_NOT_FOUND";
  case RNN_ERROR_LOAD_FAILED:
    return "RNN_ERROR_LOAD_FAILED";
  case RNN_ERROR_BAD_MODEL:
    return "RNN_ERROR_BAD_MODEL";
  case RNN_ERROR_UNSUPPORTED:
    return "RNN_ERROR_UNSUPPORTED";
  case RNN_ERROR_INTERNAL:
    return "RNN_ERROR_INTERNAL";
  case RNN_ERROR_OUT_OF_MEMORY:
    return "RNN_ERROR_OUT_OF_MEMORY";
  default:
    return "RNN_STATUS_UNKNOWN";
  }
}
