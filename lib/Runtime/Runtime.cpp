//===- Runtime.cpp - Loading, checking and running compiled models --------===//
//
// A model library describes its functions in the text `rnn_manifest`. Loading
// parses it once into signatures; every call is then checked against them
// before the model sees its tensors as MLIR memref descriptors, because the
// compiled code trusts its descriptors completely and a wrong size there is
// an out-of-bounds write, not an error.
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
// Signatures
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

using rnn::runtime::checkLibraryFile;
using rnn::runtime::dtypeName;
using rnn::runtime::LibraryFileProblem;

namespace {

/// One size of a signature: static, or a symbol that every call binds.
struct Dim {
  /// The size when static, -1 when dynamic.
  int64_t size = 0;
  /// For a dynamic size, the symbol's dense index in its function (see
  /// Function::symbolNames); -1 when static.
  int32_t symbol = -1;
};

struct TensorSpec {
  rnn_dtype dtype = RNN_F32;
  int32_t rank = 0;
  Dim dims[RNN_MAX_RANK];
};

/// Where a symbol first appears among a function's arguments: each call binds
/// the symbol to the size it finds there, and every other use must agree.
struct Binder {
  int32_t arg = -1;
  int32_t dim = -1;
};

struct Function {
  std::string name;
  std::vector<TensorSpec> args;
  std::vector<TensorSpec> results;
  /// The manifest's number k of each symbol `s<k>`, by dense index. Symbols
  /// are renumbered densely so that a call can keep its bindings in an array
  /// however large the manifest's numbers are.
  std::vector<int64_t> symbolNames;
  std::vector<Binder> binders;
  void (*call)(void **descriptors) = nullptr;
  /// For a function compiled with --training: its training forward and
  /// backward, how many saved tensors the forward adds to this function's
  /// results, and the arguments whose gradients the backward returns.
  std::string trainName, backwardName;
  int32_t numSaved = 0;
  std::vector<int32_t> gradientArgs;
};

} // namespace

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

namespace {

//===----------------------------------------------------------------------===//
// The manifest
//===----------------------------------------------------------------------===//

/// Parses `rnn_manifest`: a header line, then per function a `function` line,
/// its `arg` and `result` lines, and `end`. Tokens are separated by spaces or
/// tabs; lines end in '\n', which the last line may omit.
class ManifestParser {
public:
  explicit ManifestParser(std::string_view text) : text(text) {}

  /// Parses the whole text into `functions`; on failure returns false and
  /// leaves the reason in `error`.
  bool parse(std::vector<Function> &functions, std::string &error);

private:
  bool nextLine();
  bool failHere(std::string &error, const std::string &message) const;
  bool parseFunctionLine(Function &function, int64_t &numArgs,
                         int64_t &numResults, std::string &error);
  bool parseTensorLine(std::string_view keyword, int64_t index,
                       Function &function, TensorSpec &spec,
                       std::string &error);
  bool checkSymbols(const Function &function, std::string &error) const;
  bool parseTrainingLine(Function &function, std::string &error);
  static bool checkTraining(const std::vector<Function> &functions,
                            std::string &error);

  std::string_view text;
  size_t position = 0;
  int lineNumber = 0;
  std::string_view line;
  std::vector<std::string_view> tokens;
};

} // namespace

static bool isDigits(std::string_view token) {
  if (token.empty())
    return false;
  for (char c : token)
    if (c < '0' || c > '9')
      return false;
  return true;
}

/// A non-negative decimal integer without sign; false if malformed or if it
/// does not fit in an int64_t.
static bool parseCount(std::string_view token, int64_t &value) {
  if (!isDigits(token))
    return false;
  value = 0;
  for (char c : token) {
    int digit = c - '0';
    if (value > (INT64_MAX - digit) / 10)
      return false;
    value = value * 10 + digit;
  }
  return true;
}

static bool isIdentifier(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9'))
    return false;
  for (char c : name) {
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9');
    if (!alnum && c != '_')
      return false;
  }
  return true;
}

bool ManifestParser::nextLine() {
  if (position >= text.size())
    return false;
  size_t end = text.find('\n', position);
  if (end == std::string_view::npos)
    end = text.size();
  line = text.substr(position, end - position);
  position = end + 1;
  ++lineNumber;
  tokens.clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
      ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t')
      ++i;
    if (i > start)
      tokens.push_back(line.substr(start, i - start));
  }
  return true;
}

bool ManifestParser::failHere(std::string &error,
                              const std::string &message) const {
  error = "rnn_manifest line " + std::to_string(lineNumber) + ": " + message +
          " (the line is '" + std::string(line) + "')";
  return false;
}

bool ManifestParser::parseFunctionLine(Function &function, int64_t &numArgs,
                                       int64_t &numResults,
                                       std::string &error) {
  if (tokens.size() != 4 || tokens[0] != "function")
    return failHere(error, "expected 'function <name> <num_args> "
                           "<num_results>'");
  if (!isIdentifier(tokens[1]))
    return failHere(error, "the function name '" + std::string(tokens[1]) +
                               "' is not a C identifier");
  // The counts come back through int32_t in rnn_model_signature.
  if (!parseCount(tokens[2], numArgs) || numArgs > INT32_MAX)
    return failHere(error,
                    "bad argument count '" + std::string(tokens[2]) + "'");
  if (!parseCount(tokens[3], numResults) || numResults > INT32_MAX)
    return failHere(error, "bad result count '" + std::string(tokens[3]) + "'");
  function.name = std::string(tokens[1]);
  return true;
}

bool ManifestParser::parseTensorLine(std::string_view keyword, int64_t index,
                                     Function &function, TensorSpec &spec,
                                     std::string &error) {
  std::string expected =
      "expected '" + std::string(keyword) + " " + std::to_string(index) +
      " <dtype> <rank> <sizes...>' of function '" + function.name + "'";
  int64_t lineIndex = -1;
  if (tokens.size() < 4 || tokens[0] != keyword ||
      !parseCount(tokens[1], lineIndex) || lineIndex != index)
    return failHere(error, expected);

  static constexpr rnn_dtype allDtypes[] = {RNN_F32, RNN_F64, RNN_BF16,
                                            RNN_F16, RNN_I32, RNN_I64};
  bool knownDtype = false;
  for (rnn_dtype dtype : allDtypes) {
    if (tokens[2] == dtypeName(dtype)) {
      spec.dtype = dtype;
      knownDtype = true;
    }
  }
  if (!knownDtype)
    return failHere(error, "unknown dtype '" + std::string(tokens[2]) +
                               "' (expected f32, f64, bf16, f16, i32 or i64)");

  int64_t rank = -1;
  if (!parseCount(tokens[3], rank) || rank > RNN_MAX_RANK)
    return failHere(error, "bad rank '" + std::string(tokens[3]) +
                               "' (the runtime takes ranks 0 to " +
                               std::to_string(RNN_MAX_RANK) + ")");
  spec.rank = int32_t(rank);
  if (int64_t(tokens.size()) != 4 + rank)
    return failHere(error, "rank " + std::to_string(rank) + " needs " +
                               std::to_string(rank) + " sizes, found " +
                               std::to_string(tokens.size() - 4));

  for (int32_t d = 0; d < spec.rank; ++d) {
    std::string_view token = tokens[4 + d];
    Dim &dim = spec.dims[d];
    if (!token.empty() && token[0] == 's') {
      int64_t name = -1;
      if (!parseCount(token.substr(1), name))
        return failHere(error, "bad size '" + std::string(token) +
                                   "' (expected an integer or s<k>)");
      dim.size = -1;
      int32_t dense = 0;
      while (dense < int32_t(function.symbolNames.size()) &&
             function.symbolNames[dense] != name)
        ++dense;
      if (dense == int32_t(function.symbolNames.size())) {
        function.symbolNames.push_back(name);
        function.binders.push_back(Binder());
      }
      dim.symbol = dense;
      continue;
    }
    if (!parseCount(token, dim.size))
      return failHere(error, "bad size '" + std::string(token) +
                                 "' (expected a non-negative integer or s<k>)");
    dim.symbol = -1;
  }
  return true;
}

bool ManifestParser::checkSymbols(const Function &function,
                                  std::string &error) const {
  for (size_t r = 0; r < function.results.size(); ++r) {
    const TensorSpec &spec = function.results[r];
    for (int32_t d = 0; d < spec.rank; ++d) {
      int32_t symbol = spec.dims[d].symbol;
      if (symbol >= 0 && function.binders[symbol].arg < 0) {
        error = "rnn_manifest: function '" + function.name + "' result #" +
                std::to_string(r) + " dim " + std::to_string(d) +
                " has size s" + std::to_string(function.symbolNames[symbol]) +
                ", which no argument binds";
        return false;
      }
    }
  }
  return true;
}

bool ManifestParser::parseTrainingLine(Function &function, std::string &error) {
  std::string expected = "expected 'training <forward> <backward> "
                         "<num_saved> <argument indices...>' in function '" +
                         function.name + "'";
  int64_t numSaved = -1;
  if (tokens.size() < 4 || !isIdentifier(tokens[1]) ||
      !isIdentifier(tokens[2]) || !parseCount(tokens[3], numSaved) ||
      numSaved > INT32_MAX)
    return failHere(error, expected);
  function.trainName = std::string(tokens[1]);
  function.backwardName = std::string(tokens[2]);
  function.numSaved = int32_t(numSaved);
  for (size_t i = 4; i < tokens.size(); ++i) {
    int64_t arg = -1;
    if (!parseCount(tokens[i], arg) || arg >= int64_t(function.args.size()))
      return failHere(error, "'" + std::string(tokens[i]) +
                                 "' is not an argument of function '" +
                                 function.name + "'");
    function.gradientArgs.push_back(int32_t(arg));
  }
  return true;
}

static bool sameTensorType(const TensorSpec &a, const TensorSpec &b) {
  if (a.dtype != b.dtype || a.rank != b.rank)
    return false;
  for (int32_t d = 0; d < a.rank; ++d)
    if ((a.dims[d].symbol < 0 || b.dims[d].symbol < 0) &&
        a.dims[d].size != b.dims[d].size)
      return false;
  return true;
}

/// A training record names functions of the same model whose signatures fit
/// it: the forward returns the function's results and then `numSaved`
/// tensors; the backward takes the function's arguments, its results, those
/// tensors and one gradient per result, and returns one per listed argument.
bool ManifestParser::checkTraining(const std::vector<Function> &functions,
                                   std::string &error) {
  auto find = [&](const std::string &name) -> const Function * {
    for (const Function &f : functions)
      if (f.name == name)
        return &f;
    return nullptr;
  };
  for (const Function &f : functions) {
    if (f.trainName.empty())
      continue;
    const Function *train = find(f.trainName);
    const Function *backward = find(f.backwardName);
    auto bad = [&](const std::string &why) {
      error = "rnn_manifest: the training record of function '" + f.name +
              "' " + why;
      return false;
    };
    if (!train || !backward)
      return bad("names a function the model does not list");
    size_t numArgs = f.args.size(), numResults = f.results.size();
    size_t numSaved = size_t(f.numSaved);
    if (train->args.size() != numArgs ||
        train->results.size() != numResults + numSaved)
      return bad("does not fit the signature of '" + train->name + "'");
    if (backward->args.size() != numArgs + 2 * numResults + numSaved ||
        backward->results.size() != f.gradientArgs.size())
      return bad("does not fit the signature of '" + backward->name + "'");
    for (size_t i = 0; i < numResults; ++i)
      if (!sameTensorType(train->results[i], f.results[i]) ||
          !sameTensorType(backward->args[numArgs + i], f.results[i]) ||
          !sameTensorType(backward->args[numArgs + numResults + numSaved + i],
                          f.results[i]))
        return bad("does not match result #" + std::to_string(i));
    for (size_t i = 0; i < numSaved; ++i)
      if (!sameTensorType(backward->args[numArgs + numResults + i],
                          train->results[numResults + i]))
        return bad("saves tensor #" + std::to_string(i) +
                   " in a type the backward does not take");
    for (size_t i = 0; i < f.gradientArgs.size(); ++i)
      if (!sameTensorType(backward->results[i], f.args[f.gradientArgs[i]]))
        return bad("gives gradient #" + std::to_string(i) +
                   " a type other than its argument's");
  }
  return true;
}

bool ManifestParser::parse(std::vector<Function> &functions,
                           std::string &error) {
  if (!nextLine() || tokens.size() != 2 || tokens[0] != "rnn-manifest")
    return failHere(error, "expected the header 'rnn-manifest 1'");
  if (tokens[1] != "1")
    return failHere(error, "manifest version " + std::string(tokens[1]) +
                               " is not supported (this runtime reads 1)");

  while (nextLine()) {
    Function function;
    int64_t numArgs = 0, numResults = 0;
    if (!parseFunctionLine(function, numArgs, numResults, error))
      return false;
    for (const Function &other : functions)
      if (other.name == function.name)
        return failHere(error,
                        "function '" + function.name + "' is listed twice");

    // Line by line rather than reserving numArgs entries up front, so that a
    // bogus count fails at the end of the text instead of allocating.
    for (int64_t i = 0; i < numArgs; ++i) {
      if (!nextLine())
        return failHere(error, "the text ends inside function '" +
                                   function.name + "'");
      TensorSpec spec;
      if (!parseTensorLine("arg", i, function, spec, error))
        return false;
      // An argument binds each symbol it is the first to use.
      for (int32_t d = 0; d < spec.rank; ++d) {
        int32_t symbol = spec.dims[d].symbol;
        if (symbol >= 0 && function.binders[symbol].arg < 0)
          function.binders[symbol] = {int32_t(i), d};
      }
      function.args.push_back(spec);
    }
    for (int64_t i = 0; i < numResults; ++i) {
      if (!nextLine())
        return failHere(error, "the text ends inside function '" +
                                   function.name + "'");
      TensorSpec spec;
      if (!parseTensorLine("result", i, function, spec, error))
        return false;
      function.results.push_back(spec);
    }
    if (!nextLine())
      return failHere(error, "the text ends before the 'end' of function '" +
                                 function.name + "'");
    if (!tokens.empty() && tokens[0] == "training") {
      if (!parseTrainingLine(function, error))
        return false;
      if (!nextLine())
        return failHere(error, "the text ends before the 'end' of function '" +
                                   function.name + "'");
    }
    if (tokens.size() != 1 || tokens[0] != "end")
      return failHere(error,
                      "expected 'end' after the " + std::to_string(numResults) +
                          " result lines of function '" + function.name + "'");
    if (!checkSymbols(function, error))
      return false;
    functions.push_back(std::move(function));
  }
  return checkTraining(functions, error);
}

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
  ManifestParser parser(std::string_view(manifest, length));
  if (!parser.parse(model.functions, error))
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
      if (model->takeCudaError(message, sizeof(message)))
        return fail(RNN_ERROR_INTERNAL, function->name + ": " + message);
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
