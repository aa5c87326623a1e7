//===- ModelManifest.cpp - Parsing a model's manifest ---------------------===//
//
// The manifest is text a library carries, so the parser trusts nothing: every
// count, index, symbol and name is checked, a bogus count fails at the end of
// the text rather than allocating, and every error names its line.
//
//===----------------------------------------------------------------------===//

#include "ModelManifest.h"

#include "Dtypes.h"

#include <cstring>
#include <utility>

using namespace rnn::runtime;

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

bool rnn::runtime::parseManifest(std::string_view text,
                                 std::vector<Function> &functions,
                                 std::string &error) {
  return ManifestParser(text).parse(functions, error);
}
