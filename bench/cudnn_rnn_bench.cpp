//===- cudnn_rnn_bench.cpp - Every cuDNN RNN algorithm, checked and timed -===//
//
// The honest cuDNN baseline (issue 22, item 1). For every shape, cell and
// precision, each algorithm of cuDNN's v8/v9 RNN API (STANDARD,
// PERSIST_STATIC, PERSIST_DYNAMIC, PERSIST_STATIC_SMALL_H) is set up, called
// once, checked against STANDARD in the same precision on the same data, and
// timed: cudnnRNNForward in inference and in training mode,
// cudnnRNNBackwardData_v8, cudnnRNNBackwardWeights_v8, and the training step
// (training forward + backward data + backward weights). "cuDNN best" per
// measurement is the fastest algorithm that ran and passed its check. Any
// cuDNN status other than success while an algorithm is set up or in its
// first call means "not supported": the status (cudnnGetErrorString) and the
// call are recorded and the next algorithm is tried. A CUDA error that may
// have left the device unusable stops the run; the JSON written so far stays.
//
// Build here (no GPU needed): bench/cudnn-bench-build.sh
// Run on the GPU machine:     bench/cudnn-bench-run.sh
// or by hand:
//   cudnn_rnn_bench OUT.json [--configs FILE.json] [--repeats N] [--rounds N]
//     [--warmup N] [--cells lstm,gru,rnn_tanh,rnn_relu]
//     [--precisions fp32,fp32-notf32,fp16,bf16] [--algos standard,...]
//     [--inference-only]   (the forward in inference mode alone; the other
//                           measurements are recorded as NOT_REQUESTED)
//
// Shapes: by default the five of the project's benchmark, FlashRNN's grid
// shape and the off-grid shapes of issue 22 (defaultConfigs below). A
// --configs file holds a list of {name, T, B, I, H, L, cell, bidirectional}
// (I defaults to H, L to 1; cell may be a list), or an object whose
// "configs" and "extra" members are such lists (so bench/configs.json and the
// extras of ../shared/bench/sweep.json work). A config without a cell runs
// the cells of --cells (lstm and gru by default); one with cells runs those
// of them that --cells names.
//
// Precisions (the Precisions table below): data type, math precision and
// math type as cudnnSetRNNDescriptor_v8 takes them, and as PyTorch passes
// them for torch.nn.LSTM/GRU/RNN (aten/src/ATen/cudnn/Descriptors.h):
//   fp32         FLOAT    / FLOAT / CUDNN_DEFAULT_MATH (TF32 allowed)
//   fp32-notf32  FLOAT    / FLOAT / CUDNN_FMA_MATH     (no TF32)
//   fp16         HALF     / FLOAT / CUDNN_TENSOR_OP_MATH
//   bf16         BFLOAT16 / FLOAT / CUDNN_DEFAULT_MATH
// and, on request only, fp16-default, fp16-halfmath and bf16-tensorop.
//
// Data: one fixed seed; weights uniform(-1/sqrt(H), 1/sqrt(H)); x, hx, cx and
// the output gradients dy, dhy, dcy normal-ish (a sum of four uniforms). Each
// weight value is a function of (layer, gate matrix or bias, element), placed
// where cudnnGetRNNWeightParams says, so every algorithm and precision gets
// the same weights whatever its weight-space layout; the weight gradients are
// read back the same way. Sequence-major unpacked layout, every sequence full
// length, seqLengths on the device, no dropout, two biases, unidirectional
// unless a config says otherwise. STANDARD always runs (--algos adds to it):
// it is the reference.
//
// Timing: CUDA events on one stream around each call, after `warmup` (3)
// untimed calls; `repeats` (15) timed calls per round, each followed by a
// synchronisation, so the host's time in cuDNN counts as it does for a
// PyTorch user. With --rounds R > 1 the algorithms of a shape and precision
// are timed in R alternating rounds. Reported: median, min and max in ms.
// The training step is timed as forward, backward data and backward weights
// back to back with events between them (the weight gradients are zeroed,
// untimed, before each step: cuDNN only accumulates them).
//
// Checks: each output (y, hy, cy of both forward modes; dx, dhx, dcx; the
// weight gradients) against STANDARD's, as max|a - b| / max|b|, which must
// not exceed 1e-2 for fp16/bf16, 1e-3 for fp32 (TF32) and 1e-4 for
// fp32-notf32. Beside that, every precision's STANDARD against
// fp32-notf32's STANDARD, for information (it shows, e.g., whether TF32 was
// used at all).
//
// Output: a table on stdout and everything in OUT.json, rewritten after each
// shape and cell: versions, device, per shape/cell/precision/algorithm the
// status, sizes, diffs and timings, the best algorithm per measurement, the
// best per precision class (fp32, 16-bit), and the algorithm PyTorch would
// pick with its time.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// JSON values: written for the results, read for --configs
//===----------------------------------------------------------------------===//

class Json {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  static Json null() { return Json(); }
  static Json boolean(bool Value) {
    Json J;
    J.K = Kind::Bool;
    J.Flag = Value;
    return J;
  }
  static Json number(double Value) {
    Json J;
    J.K = Kind::Number;
    J.Num = Value;
    return J;
  }
  static Json text(std::string Value) {
    Json J;
    J.K = Kind::String;
    J.Str = std::move(Value);
    return J;
  }
  static Json array() {
    Json J;
    J.K = Kind::Array;
    return J;
  }
  static Json object() {
    Json J;
    J.K = Kind::Object;
    return J;
  }

  Kind kind() const { return K; }
  bool isScalar() const { return K != Kind::Array && K != Kind::Object; }
  double asNumber() const { return Num; }
  bool asBool() const { return Flag; }
  const std::string &asString() const { return Str; }
  const std::vector<Json> &items() const { return Items; }

  Json &set(const std::string &Key, Json Value) {
    for (auto &Member : Members)
      if (Member.first == Key) {
        Member.second = std::move(Value);
        return *this;
      }
    Members.emplace_back(Key, std::move(Value));
    return *this;
  }
  Json &push(Json Value) {
    Items.push_back(std::move(Value));
    return *this;
  }
  const Json *find(const std::string &Key) const {
    for (const auto &Member : Members)
      if (Member.first == Key)
        return &Member.second;
    return nullptr;
  }

  void write(std::string &Out, int Indent = 0) const;

private:
  friend class JsonParser;
  Kind K = Kind::Null;
  bool Flag = false;
  double Num = 0;
  std::string Str;
  std::vector<Json> Items;
  std::vector<std::pair<std::string, Json>> Members;
};

} // namespace

static void writeJsonString(std::string &Out, const std::string &S) {
  Out += '"';
  for (unsigned char C : S) {
    switch (C) {
    case '"':
      Out += "\\\"";
      break;
    case '\\':
      Out += "\\\\";
      break;
    case '\n':
      Out += "\\n";
      break;
    case '\t':
      Out += "\\t";
      break;
    case '\r':
      Out += "\\r";
      break;
    default:
      if (C < 0x20) {
        char Buf[8];
        std::snprintf(Buf, sizeof(Buf), "\\u%04x", C);
        Out += Buf;
      } else {
        Out += static_cast<char>(C);
      }
    }
  }
  Out += '"';
}

static void writeJsonNumber(std::string &Out, double V) {
  char Buf[32];
  if (!std::isfinite(V))
    std::snprintf(Buf, sizeof(Buf), "null");
  else if (V == std::floor(V) && std::fabs(V) < 1e15)
    std::snprintf(Buf, sizeof(Buf), "%.0f", V);
  else
    std::snprintf(Buf, sizeof(Buf), "%.6g", V);
  Out += Buf;
}

void Json::write(std::string &Out, int Indent) const {
  auto NewLine = [&Out](int Level) {
    Out += '\n';
    Out.append(static_cast<size_t>(Level), ' ');
  };
  switch (K) {
  case Kind::Null:
    Out += "null";
    break;
  case Kind::Bool:
    Out += Flag ? "true" : "false";
    break;
  case Kind::Number:
    writeJsonNumber(Out, Num);
    break;
  case Kind::String:
    writeJsonString(Out, Str);
    break;
  case Kind::Array: {
    bool Flat = std::all_of(Items.begin(), Items.end(),
                            [](const Json &J) { return J.isScalar(); });
    Out += '[';
    for (size_t I = 0; I < Items.size(); ++I) {
      if (I)
        Out += Flat ? ", " : ",";
      if (!Flat)
        NewLine(Indent + 1);
      Items[I].write(Out, Indent + 1);
    }
    if (!Flat && !Items.empty())
      NewLine(Indent);
    Out += ']';
    break;
  }
  case Kind::Object:
    Out += '{';
    for (size_t I = 0; I < Members.size(); ++I) {
      if (I)
        Out += ',';
      NewLine(Indent + 1);
      writeJsonString(Out, Members[I].first);
      Out += ": ";
      Members[I].second.write(Out, Indent + 1);
    }
    if (!Members.empty())
      NewLine(Indent);
    Out += '}';
    break;
  }
}

namespace {

/// A small recursive-descent JSON reader (RFC 8259, no extensions).
class JsonParser {
public:
  explicit JsonParser(const std::string &Input) : Text(Input) {}

  /// Parses the whole text into Out; on failure returns false and sets Error.
  bool parse(Json &Out, std::string &Error) {
    bool Ok = value(Out, 0);
    if (Ok) {
      skipSpace();
      if (Pos != Text.size())
        Ok = fail("trailing characters");
    }
    if (!Ok)
      Error = Message + " at offset " + std::to_string(Pos);
    return Ok;
  }

private:
  bool fail(const char *What) {
    if (Message.empty())
      Message = What;
    return false;
  }
  void skipSpace() {
    while (Pos < Text.size() && std::strchr(" \t\r\n", Text[Pos]) &&
           Text[Pos] != '\0')
      ++Pos;
  }
  bool literal(const char *Word) {
    size_t N = std::strlen(Word);
    if (Text.compare(Pos, N, Word) != 0)
      return fail("unexpected character");
    Pos += N;
    return true;
  }
  static void appendUtf8(std::string &Out, uint32_t Code) {
    if (Code < 0x80) {
      Out += static_cast<char>(Code);
    } else if (Code < 0x800) {
      Out += static_cast<char>(0xC0 | (Code >> 6));
      Out += static_cast<char>(0x80 | (Code & 0x3F));
    } else if (Code < 0x10000) {
      Out += static_cast<char>(0xE0 | (Code >> 12));
      Out += static_cast<char>(0x80 | ((Code >> 6) & 0x3F));
      Out += static_cast<char>(0x80 | (Code & 0x3F));
    } else {
      Out += static_cast<char>(0xF0 | (Code >> 18));
      Out += static_cast<char>(0x80 | ((Code >> 12) & 0x3F));
      Out += static_cast<char>(0x80 | ((Code >> 6) & 0x3F));
      Out += static_cast<char>(0x80 | (Code & 0x3F));
    }
  }
  bool hex4(uint32_t &Code) {
    if (Pos + 4 > Text.size())
      return fail("short \\u escape");
    Code = 0;
    for (int I = 0; I < 4; ++I) {
      char C = Text[Pos++];
      Code <<= 4;
      if (C >= '0' && C <= '9')
        Code |= static_cast<uint32_t>(C - '0');
      else if (C >= 'a' && C <= 'f')
        Code |= static_cast<uint32_t>(C - 'a' + 10);
      else if (C >= 'A' && C <= 'F')
        Code |= static_cast<uint32_t>(C - 'A' + 10);
      else
        return fail("bad \\u escape");
    }
    return true;
  }
  bool string(std::string &Out) {
    ++Pos; // The opening quote.
    while (Pos < Text.size()) {
      char C = Text[Pos++];
      if (C == '"')
        return true;
      if (static_cast<unsigned char>(C) < 0x20)
        return fail("control character in string");
      if (C != '\\') {
        Out += C;
        continue;
      }
      if (Pos >= Text.size())
        break;
      char E = Text[Pos++];
      switch (E) {
      case '"':
      case '\\':
      case '/':
        Out += E;
        break;
      case 'b':
        Out += '\b';
        break;
      case 'f':
        Out += '\f';
        break;
      case 'n':
        Out += '\n';
        break;
      case 'r':
        Out += '\r';
        break;
      case 't':
        Out += '\t';
        break;
      case 'u': {
        uint32_t Code;
        if (!hex4(Code))
          return false;
        if (Code >= 0xD800 && Code < 0xDC00 &&
            Text.compare(Pos, 2, "\\u") == 0) {
          Pos += 2;
          uint32_t Low;
          if (!hex4(Low))
            return false;
          if (Low < 0xDC00 || Low >= 0xE000)
            return fail("bad surrogate pair");
          Code = 0x10000 + ((Code - 0xD800) << 10) + (Low - 0xDC00);
        }
        appendUtf8(Out, Code);
        break;
      }
      default:
        return fail("bad escape");
      }
    }
    return fail("unterminated string");
  }
  bool number(Json &Out) {
    size_t Start = Pos;
    if (Pos < Text.size() && Text[Pos] == '-')
      ++Pos;
    if (Pos >= Text.size() ||
        !std::isdigit(static_cast<unsigned char>(Text[Pos])))
      return fail("bad number");
    while (Pos < Text.size() &&
           (std::isdigit(static_cast<unsigned char>(Text[Pos])) ||
            std::strchr(".eE+-", Text[Pos])) &&
           Text[Pos] != '\0')
      ++Pos;
    std::string Literal = Text.substr(Start, Pos - Start);
    char *End = nullptr;
    double V = std::strtod(Literal.c_str(), &End);
    if (End != Literal.c_str() + Literal.size())
      return fail("bad number");
    Out = Json::number(V);
    return true;
  }
  bool value(Json &Out, int Depth) {
    if (Depth > 100)
      return fail("nested too deeply");
    skipSpace();
    if (Pos >= Text.size())
      return fail("unexpected end");
    char C = Text[Pos];
    if (C == '{') {
      Out = Json::object();
      ++Pos;
      skipSpace();
      if (Pos < Text.size() && Text[Pos] == '}') {
        ++Pos;
        return true;
      }
      while (true) {
        skipSpace();
        if (Pos >= Text.size() || Text[Pos] != '"')
          return fail("expected a key");
        std::string Key;
        if (!string(Key))
          return false;
        skipSpace();
        if (Pos >= Text.size() || Text[Pos] != ':')
          return fail("expected ':'");
        ++Pos;
        Json Member;
        if (!value(Member, Depth + 1))
          return false;
        Out.Members.emplace_back(std::move(Key), std::move(Member));
        skipSpace();
        if (Pos < Text.size() && Text[Pos] == ',') {
          ++Pos;
          continue;
        }
        if (Pos < Text.size() && Text[Pos] == '}') {
          ++Pos;
          return true;
        }
        return fail("expected ',' or '}'");
      }
    }
    if (C == '[') {
      Out = Json::array();
      ++Pos;
      skipSpace();
      if (Pos < Text.size() && Text[Pos] == ']') {
        ++Pos;
        return true;
      }
      while (true) {
        Json Item;
        if (!value(Item, Depth + 1))
          return false;
        Out.Items.push_back(std::move(Item));
        skipSpace();
        if (Pos < Text.size() && Text[Pos] == ',') {
          ++Pos;
          continue;
        }
        if (Pos < Text.size() && Text[Pos] == ']') {
          ++Pos;
          return true;
        }
        return fail("expected ',' or ']'");
      }
    }
    if (C == '"') {
      std::string S;
      if (!string(S))
        return false;
      Out = Json::text(std::move(S));
      return true;
    }
    if (C == 't') {
      Out = Json::boolean(true);
      return literal("true");
    }
    if (C == 'f') {
      Out = Json::boolean(false);
      return literal("false");
    }
    if (C == 'n') {
      Out = Json::null();
      return literal("null");
    }
    return number(Out);
  }

  const std::string &Text;
  size_t Pos = 0;
  std::string Message;
};

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// A failed cuDNN or CUDA call; nothing failed when Status is empty.
struct Failure {
  std::string Call;   // The function, e.g. "cudnnRNNForward".
  std::string Status; // e.g. "CUDNN_STATUS_NOT_SUPPORTED".
  std::string Detail; // cuDNN's last error message or CUDA's description.
  bool Fatal = false; // The device may be unusable from here on.

  bool failed() const { return !Status.empty(); }
  std::string describe() const {
    std::string S = Status + " (" + Call + ")";
    if (!Detail.empty())
      S += ": " + Detail;
    return S;
  }
  Json toJson() const {
    Json J = Json::object();
    J.set("status", Json::text(Status));
    J.set("call", Json::text(Call));
    J.set("detail", Json::text(Detail));
    return J;
  }
};

} // namespace

/// The function name of a call expression: "cudnnRNNForward(Handle, ...)"
/// gives "cudnnRNNForward".
static std::string callName(const char *Expr) {
  const char *Paren = std::strchr(Expr, '(');
  return Paren ? std::string(Expr, Paren) : std::string(Expr);
}

static Failure cudnnFailure(const std::string &Call, cudnnStatus_t Status) {
  Failure F;
  F.Call = Call;
  F.Status = cudnnGetErrorString(Status);
  char Message[512] = {};
  cudnnGetLastErrorString(Message, sizeof(Message));
  F.Detail = Message;
  return F;
}

static Failure cudaFailure(const std::string &Call, cudaError_t Error) {
  Failure F;
  F.Call = Call;
  F.Status = cudaGetErrorName(Error);
  F.Detail = cudaGetErrorString(Error);
  // A buffer that does not fit makes the shape unsupported; any other error
  // may be sticky and leave the context unusable.
  if (Error == cudaErrorMemoryAllocation) {
    cudaError_t Cleared = cudaGetLastError(); // Resets the (non-sticky) error.
    if (Cleared != cudaSuccess && Cleared != cudaErrorMemoryAllocation)
      F.Fatal = true;
  } else {
    F.Fatal = true;
  }
  return F;
}

#define CUDNN_TRY(Expr)                                                        \
  do {                                                                         \
    cudnnStatus_t TryStatus = (Expr);                                          \
    if (TryStatus != CUDNN_STATUS_SUCCESS)                                     \
      return cudnnFailure(callName(#Expr), TryStatus);                         \
  } while (false)

#define CUDA_TRY(Expr)                                                         \
  do {                                                                         \
    cudaError_t TryError = (Expr);                                             \
    if (TryError != cudaSuccess)                                               \
      return cudaFailure(callName(#Expr), TryError);                           \
  } while (false)

#define TRY(Expr)                                                              \
  do {                                                                         \
    Failure TryFailure = (Expr);                                               \
    if (TryFailure.failed())                                                   \
      return TryFailure;                                                       \
  } while (false)

/// For releases in destructors, which have nowhere to report to but stderr.
static void warnOnError(cudaError_t Error, const char *Call) {
  if (Error != cudaSuccess)
    std::fprintf(stderr, "warning: %s: %s\n", Call, cudaGetErrorName(Error));
}
static void warnOnError(cudnnStatus_t Status, const char *Call) {
  if (Status != CUDNN_STATUS_SUCCESS)
    std::fprintf(stderr, "warning: %s: %s\n", Call,
                 cudnnGetErrorString(Status));
}

/// Exits for a failure before any result exists (device, handle, stream).
static void checkStartup(const Failure &F) {
  if (!F.failed())
    return;
  std::fprintf(stderr, "cudnn_rnn_bench: %s\n", F.describe().c_str());
  std::exit(1);
}

//===----------------------------------------------------------------------===//
// Host-side float <-> half / bfloat16 (round to nearest even)
//===----------------------------------------------------------------------===//

static size_t elementBytes(cudnnDataType_t Type) {
  return Type == CUDNN_DATA_FLOAT ? 4 : 2;
}

static uint32_t floatBits(float F) {
  uint32_t U;
  std::memcpy(&U, &F, sizeof(U));
  return U;
}

static float bitsFloat(uint32_t U) {
  float F;
  std::memcpy(&F, &U, sizeof(F));
  return F;
}

static uint16_t floatToBf16(float F) {
  uint32_t U = floatBits(F);
  if ((U & 0x7FFFFFFFu) > 0x7F800000u) // NaN: keep it a quiet NaN.
    return static_cast<uint16_t>((U >> 16) | 0x40u);
  U += 0x7FFFu + ((U >> 16) & 1u);
  return static_cast<uint16_t>(U >> 16);
}

static float bf16ToFloat(uint16_t B) {
  return bitsFloat(static_cast<uint32_t>(B) << 16);
}

static uint16_t floatToHalf(float F) {
  uint32_t U = floatBits(F);
  uint32_t Sign = (U >> 16) & 0x8000u;
  uint32_t Abs = U & 0x7FFFFFFFu;
  if (Abs >= 0x7F800000u) // Inf or NaN.
    return static_cast<uint16_t>(Sign |
                                 (Abs > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (Abs >= 0x477FF000u) // Rounds to a value above 65504: infinity.
    return static_cast<uint16_t>(Sign | 0x7C00u);
  if (Abs < 0x38800000u) { // Below 2^-14: a subnormal half (or zero).
    float Scaled = bitsFloat(Abs) * 16777216.0f; // In units of 2^-24.
    return static_cast<uint16_t>(Sign |
                                 static_cast<uint32_t>(std::nearbyint(Scaled)));
  }
  uint32_t Rounded = Abs + 0xFFFu + ((Abs >> 13) & 1u);
  return static_cast<uint16_t>(Sign | ((Rounded - 0x38000000u) >> 13));
}

static float halfToFloat(uint16_t H) {
  uint32_t Sign = static_cast<uint32_t>(H & 0x8000u) << 16;
  uint32_t Exp = (H >> 10) & 0x1Fu;
  uint32_t Mant = H & 0x3FFu;
  if (Exp == 0) {
    float V = std::ldexp(static_cast<float>(Mant), -24);
    return Sign ? -V : V;
  }
  if (Exp == 31)
    return bitsFloat(Sign | 0x7F800000u | (Mant << 13));
  return bitsFloat(Sign | ((Exp + 112) << 23) | (Mant << 13));
}

/// Writes Count floats as Type at Dst.
static void fromFloats(const float *Src, size_t Count, cudnnDataType_t Type,
                       void *Dst) {
  if (Type == CUDNN_DATA_FLOAT) {
    std::memcpy(Dst, Src, Count * sizeof(float));
    return;
  }
  auto *Out = static_cast<uint16_t *>(Dst);
  for (size_t I = 0; I < Count; ++I)
    Out[I] =
        Type == CUDNN_DATA_HALF ? floatToHalf(Src[I]) : floatToBf16(Src[I]);
}

/// Appends Count values of Type at Src to Out as floats.
static void toFloats(const void *Src, size_t Count, cudnnDataType_t Type,
                     std::vector<float> &Out) {
  size_t Base = Out.size();
  Out.resize(Base + Count);
  if (Type == CUDNN_DATA_FLOAT) {
    std::memcpy(Out.data() + Base, Src, Count * sizeof(float));
    return;
  }
  const auto *In = static_cast<const uint16_t *>(Src);
  for (size_t I = 0; I < Count; ++I)
    Out[Base + I] =
        Type == CUDNN_DATA_HALF ? halfToFloat(In[I]) : bf16ToFloat(In[I]);
}

//===----------------------------------------------------------------------===//
// Deterministic data: a value per (stream, index), whatever the layout
//===----------------------------------------------------------------------===//

constexpr uint64_t Seed = 0x5EED2026CD0AULL;

static uint64_t splitMix64(uint64_t X) {
  X += 0x9E3779B97F4A7C15ULL;
  X = (X ^ (X >> 30)) * 0xBF58476D1CE4E5B9ULL;
  X = (X ^ (X >> 27)) * 0x94D049BB133111EBULL;
  return X ^ (X >> 31);
}

/// Uniform in [0, 1).
static double unitUniform(uint64_t Stream, uint64_t Index) {
  uint64_t Z = splitMix64(Seed ^ splitMix64(Stream * 0xD1B54A32D192ED03ULL) ^
                          (Index * 0x9E3779B97F4A7C15ULL));
  return static_cast<double>(Z >> 11) * 0x1.0p-53;
}

/// Mean 0, standard deviation 1: a sum of four uniforms (Irwin-Hall).
static float normalish(uint64_t Stream, uint64_t Index) {
  double Sum = 0;
  for (uint64_t K = 0; K < 4; ++K)
    Sum += unitUniform(Stream, 4 * Index + K);
  return static_cast<float>((Sum - 2.0) * std::sqrt(3.0));
}

static std::vector<float> normalVector(uint64_t Stream, size_t Count,
                                       float Scale) {
  std::vector<float> V(Count);
  for (size_t I = 0; I < Count; ++I)
    V[I] = Scale * normalish(Stream, I);
  return V;
}

namespace {

//===----------------------------------------------------------------------===//
// Device memory and cuDNN descriptors, released on scope exit
//===----------------------------------------------------------------------===//

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer(DeviceBuffer &&Other) noexcept
      : Ptr(Other.Ptr), Bytes(Other.Bytes) {
    Other.Ptr = nullptr;
    Other.Bytes = 0;
  }
  DeviceBuffer &operator=(DeviceBuffer &&Other) noexcept {
    if (this != &Other) {
      release();
      std::swap(Ptr, Other.Ptr);
      std::swap(Bytes, Other.Bytes);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  Failure allocate(size_t Size) {
    release();
    if (Size == 0)
      return {};
    void *P = nullptr;
    CUDA_TRY(cudaMalloc(&P, Size));
    Ptr = P;
    Bytes = Size;
    return {};
  }
  void *get() const { return Ptr; }
  size_t size() const { return Bytes; }
  void release() {
    if (Ptr)
      warnOnError(cudaFree(Ptr), "cudaFree");
    Ptr = nullptr;
    Bytes = 0;
  }

private:
  void *Ptr = nullptr;
  size_t Bytes = 0;
};

constexpr char TensorDescName[] = "TensorDescriptor";
constexpr char RnnDescName[] = "RNNDescriptor";
constexpr char RnnDataDescName[] = "RNNDataDescriptor";
constexpr char DropoutDescName[] = "DropoutDescriptor";

template <typename T, cudnnStatus_t (*Create)(T *), cudnnStatus_t (*Destroy)(T),
          const char *Name>
class Descriptor {
public:
  Descriptor() = default;
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;
  Descriptor(Descriptor &&Other) noexcept : Desc(Other.Desc) {
    Other.Desc = nullptr;
  }
  Descriptor &operator=(Descriptor &&Other) noexcept {
    if (this != &Other) {
      reset();
      std::swap(Desc, Other.Desc);
    }
    return *this;
  }
  ~Descriptor() { reset(); }

  void reset() {
    if (Desc)
      warnOnError(Destroy(Desc), (std::string("cudnnDestroy") + Name).c_str());
    Desc = nullptr;
  }
  Failure create() {
    reset();
    if (cudnnStatus_t S = Create(&Desc); S != CUDNN_STATUS_SUCCESS) {
      Desc = nullptr;
      return cudnnFailure(std::string("cudnnCreate") + Name, S);
    }
    return {};
  }
  T get() const { return Desc; }

private:
  T Desc = nullptr;
};

using TensorDesc =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
               cudnnDestroyTensorDescriptor, TensorDescName>;
using RnnDesc = Descriptor<cudnnRNNDescriptor_t, cudnnCreateRNNDescriptor,
                           cudnnDestroyRNNDescriptor, RnnDescName>;
using RnnDataDesc =
    Descriptor<cudnnRNNDataDescriptor_t, cudnnCreateRNNDataDescriptor,
               cudnnDestroyRNNDataDescriptor, RnnDataDescName>;
using DropoutDesc =
    Descriptor<cudnnDropoutDescriptor_t, cudnnCreateDropoutDescriptor,
               cudnnDestroyDropoutDescriptor, DropoutDescName>;

//===----------------------------------------------------------------------===//
// What is benchmarked
//===----------------------------------------------------------------------===//

struct Precision {
  const char *Name;
  cudnnDataType_t Data;     // Inputs, outputs, states and weights.
  cudnnDataType_t Math;     // mathPrec of cudnnSetRNNDescriptor_v8.
  cudnnMathType_t MathType; // Which kernels cuDNN may pick.
  double Tolerance;         // Against STANDARD in the same precision.
  const char *Class;        // Best per class: "fp32" or "16-bit".
  bool Default;             // Run when --precisions is not given.
  bool Torch;               // PyTorch calls cuDNN this way.
  const char *Note;
};

struct Config {
  std::string Name;
  int T = 0, B = 0, I = 0, H = 0, L = 1;
  bool Bidirectional = false;
  std::vector<std::string> Cells; // Empty: lstm and gru.
};

struct Cell {
  const char *Name;
  cudnnRNNMode_t Mode;
  int LinLayers; // Weight matrices per layer and direction (and biases).
};

enum Measure {
  Inference,
  ForwardTraining,
  BackwardData,
  BackwardWeights,
  TrainingStep,
  NumMeasures
};

enum DataStream : uint64_t {
  StreamX = 1,
  StreamHx,
  StreamCx,
  StreamDy,
  StreamDhy,
  StreamDcy,
  StreamWeights = 1000
};

struct Dims {
  int T, B, I, H, L, Dirs;
  size_t xCount() const { return size_t(T) * size_t(B) * size_t(I); }
  size_t yCount() const { return size_t(T) * size_t(B) * size_t(H) * Dirs; }
  size_t hCount() const { return size_t(L) * Dirs * size_t(B) * size_t(H); }
};

/// x, the initial states and the output gradients of a shape, as floats.
struct HostInputs {
  std::vector<float> X, Hx, Cx, Dy, Dhy, Dcy;
  explicit HostInputs(const Dims &D)
      : X(normalVector(StreamX, D.xCount(), 1.0f)),
        Hx(normalVector(StreamHx, D.hCount(), 0.5f)),
        Cx(normalVector(StreamCx, D.hCount(), 0.5f)),
        Dy(normalVector(StreamDy, D.yCount(), 1.0f)),
        Dhy(normalVector(StreamDhy, D.hCount(), 1.0f)),
        Dcy(normalVector(StreamDcy, D.hCount(), 1.0f)) {}
};

/// One weight-space parameter (a gate's matrix or bias of one layer and
/// direction) as cuDNN places it.
struct ParamSlot {
  int Layer, Lin;
  bool Bias;
  size_t Offset; // Bytes into the weight space.
  size_t Count;  // Elements.
};

/// The weights of a shape and cell, generated once per parameter so that
/// every algorithm and precision gets the same ones.
class WeightBank {
public:
  explicit WeightBank(int H) : Bound(1.0 / std::sqrt(static_cast<double>(H))) {}
  const std::vector<float> &values(const ParamSlot &S) {
    std::vector<float> &V = Values[{S.Layer, S.Lin, S.Bias ? 1 : 0}];
    if (V.size() != S.Count) {
      uint64_t Stream =
          StreamWeights +
          (static_cast<uint64_t>(S.Layer) * 64 + static_cast<uint64_t>(S.Lin)) *
              2 +
          (S.Bias ? 1 : 0);
      V.resize(S.Count);
      for (size_t I = 0; I < S.Count; ++I)
        V[I] = static_cast<float>((2.0 * unitUniform(Stream, I) - 1.0) * Bound);
    }
    return V;
  }

private:
  double Bound;
  std::map<std::array<int, 3>, std::vector<float>> Values;
};

using Outputs = std::map<std::string, std::vector<float>>;

struct Stats {
  double Median = NAN, Min = NAN, Max = NAN;
};

struct DeviceInfo {
  std::string Name;
  int Major = 0, Minor = 0, SMs = 0;
};

//===----------------------------------------------------------------------===//
// The run's state
//===----------------------------------------------------------------------===//

struct Options {
  std::string OutPath, ConfigPath;
  int Repeats = 15, Rounds = 1, Warmup = 3;
  // --inference-only: the forward in inference mode alone (the shape sweep).
  bool InferenceOnly = false;
  std::vector<std::string> Cells, Precisions, Algos;
};

/// What the whole run shares: the device, cuDNN's handle, the stream and
/// the timing events.
struct Bench {
  Options Opts;
  DeviceInfo Device;
  cudnnHandle_t Handle = nullptr;
  cudaStream_t Stream = nullptr;
  std::array<cudaEvent_t, 4> Events{};
  Failure Fatal; // Set once the device cannot be trusted any more.
};

/// One algorithm at one shape, cell and precision.
struct AlgoRun {
  cudnnRNNAlgo_t Algo = CUDNN_RNN_ALGO_STANDARD;
  RnnDesc Desc;
  DeviceBuffer Weights, WeightGrads, Workspace, Reserve;
  size_t WeightBytes = 0, WorkInference = 0, WorkTraining = 0, ReserveBytes = 0;
  double BuildMs = NAN; // cudnnBuildRNNDynamic, host time.
  std::vector<ParamSlot> Slots;
  Failure Setup; // Common to all measurements.
  // Why a measurement did not run (setup, first call, or during timing).
  std::array<Failure, NumMeasures> Refused;
  std::array<bool, NumMeasures> Supported{};
  std::array<bool, NumMeasures> Passed{};
  std::array<double, NumMeasures> MaxDiff;
  std::array<std::string, NumMeasures> CheckNote;
  std::array<std::vector<double>, NumMeasures> Samples;
  std::map<std::string, double> Diffs;
  Outputs Out; // Freed once checked (kept for STANDARD, the reference).

  AlgoRun() { MaxDiff.fill(NAN); }

  /// Gives the device memory and descriptor back; the results stay.
  void releaseDevice() {
    Weights.release();
    WeightGrads.release();
    Workspace.release();
    Reserve.release();
    Desc.reset();
  }
};

/// All algorithms at one shape, cell and precision, sharing the data.
class PrecisionRun {
public:
  PrecisionRun(Bench &Run, const Dims &Shape, const Cell &Kind,
               const Precision &Prec)
      : Ctx(Run), D(Shape), C(Kind), P(Prec) {}

  /// Descriptors and data common to every algorithm.
  Failure setUp(const HostInputs &In);
  /// Sets the algorithm up, calls each function once and records outputs.
  void tryAlgo(AlgoRun &A, WeightBank &Bank);
  /// Checks A's outputs against Ref (STANDARD's), then drops them unless
  /// A is the reference.
  void check(AlgoRun &A, const AlgoRun *Ref);
  /// Times every supported measurement of A once (`repeats` calls).
  void time(AlgoRun &A);

private:
  bool isLstm() const { return C.Mode == CUDNN_LSTM; }
  void *cell(const DeviceBuffer &Buf) const {
    return isLstm() ? Buf.get() : nullptr;
  }
  Failure setUpAlgo(AlgoRun &A, WeightBank &Bank);
  Failure findSlots(AlgoRun &A);
  Failure upload(DeviceBuffer &Dst, const std::vector<float> &Src);
  Failure download(const DeviceBuffer &Src, size_t Count,
                   std::vector<float> &Out);
  Failure sync();
  Failure forward(AlgoRun &A, cudnnForwardMode_t Mode);
  Failure backwardData(AlgoRun &A);
  Failure backwardWeights(AlgoRun &A);
  Failure firstCalls(AlgoRun &A);
  Failure timeForward(AlgoRun &A, cudnnForwardMode_t Mode, Measure M);
  Failure timeTraining(AlgoRun &A);

  Bench &Ctx;
  Dims D;
  const Cell &C;
  const Precision &P;
  DropoutDesc Dropout;
  RnnDataDesc XDesc, YDesc;
  TensorDesc HDesc;
  std::vector<int> HostSeqLengths;
  DeviceBuffer SeqLengths, X, Y, Dy, Dx, Hx, Cx, Hy, Cy, Dhy, Dcy, Dhx, Dcx;
};

} // namespace

//===----------------------------------------------------------------------===//
// Precisions, cells, algorithms and shapes
//===----------------------------------------------------------------------===//

static const Precision Precisions[] = {
    {"fp32", CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, 1e-3,
     "fp32", true, true,
     "CUDNN_DEFAULT_MATH permits TF32 tensor-core math for float data on "
     "Ampere and later (CUDNN_FMA_MATH is the one that forbids it); PyTorch "
     "passes it with torch.backends.cudnn.allow_tf32 = True, the default"},
    {"fp32-notf32", CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, 1e-4,
     "fp32", true, true,
     "CUDNN_FMA_MATH restricts cuDNN to FMA (non-tensor-core) kernels: exact "
     "fp32; PyTorch passes it with allow_tf32 = False"},
    {"fp16", CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH, 1e-2,
     "16-bit", true, true,
     "half data, float math precision, tensor-op math: PyTorch's fp16 RNN "
     "(promote_rnn_math_type gives FLOAT; HALF data gets TENSOR_OP_MATH)"},
    {"bf16", CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, 1e-2,
     "16-bit", true, true,
     "bfloat16 data, float math precision, default math: PyTorch's bf16 RNN "
     "(it sets TENSOR_OP_MATH only for HALF data)"},
    {"fp16-default", CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH,
     1e-2, "16-bit", false, false,
     "half data, float math precision, default math (on request only)"},
    {"fp16-halfmath", CUDNN_DATA_HALF, CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH,
     1e-2, "16-bit", false, false,
     "half data and half math precision, tensor-op math (on request only)"},
    {"bf16-tensorop", CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT,
     CUDNN_TENSOR_OP_MATH, 1e-2, "16-bit", false, false,
     "bfloat16 data, float math precision, tensor-op math (on request "
     "only)"},
};

static const Cell Cells[] = {
    {"lstm", CUDNN_LSTM, 8},
    {"gru", CUDNN_GRU, 6},
    {"rnn_tanh", CUDNN_RNN_TANH, 2},
    {"rnn_relu", CUDNN_RNN_RELU, 2},
};

static const cudnnRNNAlgo_t AllAlgos[] = {
    CUDNN_RNN_ALGO_STANDARD, CUDNN_RNN_ALGO_PERSIST_STATIC,
    CUDNN_RNN_ALGO_PERSIST_DYNAMIC, CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H};

/// The shapes run without --configs: the five of the project's benchmark
/// (bench/configs.json), FlashRNN's grid shape, and the off-grid shapes of
/// issue 22 where we were slower than cuDNN.
static std::vector<Config> defaultConfigs() {
  return {
      {"small-latency", 100, 1, 256, 256, 1, false, {}},
      {"medium", 100, 64, 1024, 1024, 1, false, {}},
      {"deep4", 100, 64, 1024, 1024, 4, false, {}},
      {"wide", 50, 32, 2048, 2048, 1, false, {}},
      {"throughput", 100, 256, 512, 512, 2, false, {}},
      {"flashrnn-grid", 1024, 16, 768, 768, 1, false, {}},
      {"offgrid-h1536-b8", 100, 8, 1536, 1536, 1, false, {}},
      {"offgrid-h17-b4", 100, 4, 17, 17, 1, false, {}},
      {"vanilla-h32-b1", 672, 1, 32, 32, 1, false, {"rnn_tanh"}},
  };
}

static const char *const MeasureNames[NumMeasures] = {
    "inference", "forward_training", "backward_data", "backward_weights",
    "training_step"};
static const char *const MeasureHeads[NumMeasures] = {
    "inference", "fwd-train", "bwd-data", "bwd-wts", "step"};

/// The outputs checked for each measurement (the step checks all of the
/// training ones).
static const std::vector<std::string> &checkedOutputs(Measure M) {
  static const std::vector<std::string> Names[NumMeasures] = {
      {"y_inference", "hy_inference", "cy_inference"},
      {"y_training", "hy_training", "cy_training"},
      {"dx", "dhx", "dcx"},
      {"dw"},
      {"y_training", "hy_training", "cy_training", "dx", "dhx", "dcx", "dw"}};
  return Names[M];
}

static std::string algoName(cudnnRNNAlgo_t Algo) {
  switch (Algo) {
  case CUDNN_RNN_ALGO_STANDARD:
    return "STANDARD";
  case CUDNN_RNN_ALGO_PERSIST_STATIC:
    return "PERSIST_STATIC";
  case CUDNN_RNN_ALGO_PERSIST_DYNAMIC:
    return "PERSIST_DYNAMIC";
  case CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H:
    return "PERSIST_STATIC_SMALL_H";
  default:
    return "algo " + std::to_string(static_cast<int>(Algo));
  }
}

static const char *dataTypeName(cudnnDataType_t Type) {
  switch (Type) {
  case CUDNN_DATA_FLOAT:
    return "CUDNN_DATA_FLOAT";
  case CUDNN_DATA_HALF:
    return "CUDNN_DATA_HALF";
  case CUDNN_DATA_BFLOAT16:
    return "CUDNN_DATA_BFLOAT16";
  default:
    return "other";
  }
}

static const char *mathTypeName(cudnnMathType_t Type) {
  switch (Type) {
  case CUDNN_DEFAULT_MATH:
    return "CUDNN_DEFAULT_MATH";
  case CUDNN_TENSOR_OP_MATH:
    return "CUDNN_TENSOR_OP_MATH";
  case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
    return "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION";
  case CUDNN_FMA_MATH:
    return "CUDNN_FMA_MATH";
  default:
    return "other";
  }
}

/// max|A - B| / max|B|; infinite when the sizes differ or a value is not
/// finite.
static double relativeDiff(const std::vector<float> &A,
                           const std::vector<float> &B) {
  if (A.size() != B.size())
    return INFINITY;
  double MaxDiff = 0, MaxRef = 0;
  for (size_t I = 0; I < A.size(); ++I) {
    if (!std::isfinite(A[I]) || !std::isfinite(B[I]))
      return INFINITY;
    MaxDiff = std::max(MaxDiff, std::fabs(static_cast<double>(A[I]) - B[I]));
    MaxRef = std::max(MaxRef, std::fabs(static_cast<double>(B[I])));
  }
  if (MaxRef == 0)
    return MaxDiff == 0 ? 0 : INFINITY;
  return MaxDiff / MaxRef;
}

static Stats summarize(std::vector<double> V) {
  Stats S;
  if (V.empty())
    return S;
  std::sort(V.begin(), V.end());
  size_t N = V.size();
  S.Median = N % 2 ? V[N / 2] : 0.5 * (V[N / 2 - 1] + V[N / 2]);
  S.Min = V.front();
  S.Max = V.back();
  return S;
}

/// The algorithm PyTorch picks for an unpacked input without projection
/// (get_algo and its heuristics in aten/src/ATen/native/cudnn/RNN.cpp), so
/// that "torch's default" can be shown beside cuDNN's best.
static cudnnRNNAlgo_t torchAlgo(const DeviceInfo &Dev, const Cell &C,
                                const Dims &D, cudnnDataType_t Data,
                                bool Forward) {
  bool Vanilla = C.Mode == CUDNN_RNN_RELU || C.Mode == CUDNN_RNN_TANH;
  if (Dev.Major >= 6) {
    int Limit = Forward ? (Vanilla ? 384 : 192) : (Vanilla ? 256 : 128);
    if (D.H <= Limit)
      return CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H;
  }
  if (Data != CUDNN_DATA_HALF)
    return CUDNN_RNN_ALGO_STANDARD;
  bool Common = D.L == 1 && D.H <= 1024 && D.Dirs == 1 && D.H % 128 == 0 &&
                D.I % 128 == 0;
  bool Device = false;
  int B = D.B;
  if (Dev.Major == 7) {
    Device = Dev.Minor != 5 &&
             ((B % 16 == 0 && B != 80 && B != 112) || B == 8) &&
             ((D.T >= 40 && B <= 128) || (D.T >= 20 && B <= 96) ||
              (D.T >= 10 && B <= 32));
  } else if (Dev.Major >= 8 && Dev.SMs >= 98 && Dev.Minor != 6) {
    if (C.Mode == CUDNN_LSTM)
      Device = B % 8 == 0 && B <= 128;
    else if (Vanilla)
      Device = B % 8 == 0 && B <= 128 && (B < 96 || D.H < 896);
  }
  return Common && Device ? CUDNN_RNN_ALGO_PERSIST_STATIC
                          : CUDNN_RNN_ALGO_STANDARD;
}

Failure PrecisionRun::upload(DeviceBuffer &Dst, const std::vector<float> &Src) {
  size_t Bytes = Src.size() * elementBytes(P.Data);
  std::vector<unsigned char> Raw(Bytes);
  fromFloats(Src.data(), Src.size(), P.Data, Raw.data());
  TRY(Dst.allocate(Bytes));
  CUDA_TRY(cudaMemcpyAsync(Dst.get(), Raw.data(), Bytes, cudaMemcpyHostToDevice,
                           Ctx.Stream));
  CUDA_TRY(cudaStreamSynchronize(Ctx.Stream)); // Raw dies here.
  return {};
}

Failure PrecisionRun::download(const DeviceBuffer &Src, size_t Count,
                               std::vector<float> &Out) {
  size_t Bytes = Count * elementBytes(P.Data);
  std::vector<unsigned char> Raw(Bytes);
  CUDA_TRY(cudaMemcpyAsync(Raw.data(), Src.get(), Bytes, cudaMemcpyDeviceToHost,
                           Ctx.Stream));
  CUDA_TRY(cudaStreamSynchronize(Ctx.Stream));
  Out.clear();
  toFloats(Raw.data(), Count, P.Data, Out);
  return {};
}

Failure PrecisionRun::sync() {
  CUDA_TRY(cudaStreamSynchronize(Ctx.Stream));
  return {};
}

Failure PrecisionRun::setUp(const HostInputs &In) {
  TRY(Dropout.create());
  CUDNN_TRY(cudnnSetDropoutDescriptor(Dropout.get(), Ctx.Handle, 0.0f, nullptr,
                                      0, 0));
  // Every sequence full length; unpacked sequence-major data, as PyTorch
  // passes an unpacked input (which needs CUDNN_RNN_PADDED_IO_ENABLED).
  HostSeqLengths.assign(static_cast<size_t>(D.B), D.T);
  TRY(XDesc.create());
  CUDNN_TRY(cudnnSetRNNDataDescriptor(
      XDesc.get(), P.Data, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, D.T, D.B,
      D.I, HostSeqLengths.data(), nullptr));
  TRY(YDesc.create());
  CUDNN_TRY(cudnnSetRNNDataDescriptor(
      YDesc.get(), P.Data, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, D.T, D.B,
      D.H * D.Dirs, HostSeqLengths.data(), nullptr));
  TRY(HDesc.create());
  int HDims[3] = {D.L * D.Dirs, D.B, D.H};
  int HStrides[3] = {D.B * D.H, D.H, 1};
  CUDNN_TRY(
      cudnnSetTensorNdDescriptor(HDesc.get(), P.Data, 3, HDims, HStrides));

  TRY(SeqLengths.allocate(HostSeqLengths.size() * sizeof(int32_t)));
  CUDA_TRY(cudaMemcpyAsync(SeqLengths.get(), HostSeqLengths.data(),
                           SeqLengths.size(), cudaMemcpyHostToDevice,
                           Ctx.Stream));
  TRY(upload(X, In.X));
  TRY(upload(Hx, In.Hx));
  TRY(upload(Dy, In.Dy));
  TRY(upload(Dhy, In.Dhy));
  size_t DataBytes = elementBytes(P.Data);
  TRY(Y.allocate(D.yCount() * DataBytes));
  TRY(Dx.allocate(D.xCount() * DataBytes));
  TRY(Hy.allocate(D.hCount() * DataBytes));
  TRY(Dhx.allocate(D.hCount() * DataBytes));
  if (isLstm()) {
    TRY(upload(Cx, In.Cx));
    TRY(upload(Dcy, In.Dcy));
    TRY(Cy.allocate(D.hCount() * DataBytes));
    TRY(Dcx.allocate(D.hCount() * DataBytes));
  }
  return sync();
}

Failure PrecisionRun::findSlots(AlgoRun &A) {
  TensorDesc MatDesc, BiasDesc;
  TRY(MatDesc.create());
  TRY(BiasDesc.create());
  A.Slots.clear();
  for (int Layer = 0; Layer < D.L * D.Dirs; ++Layer) {
    for (int Lin = 0; Lin < C.LinLayers; ++Lin) {
      void *MatAddr = nullptr, *BiasAddr = nullptr;
      CUDNN_TRY(cudnnGetRNNWeightParams(
          Ctx.Handle, A.Desc.get(), Layer, A.WeightBytes, A.Weights.get(), Lin,
          MatDesc.get(), &MatAddr, BiasDesc.get(), &BiasAddr));
      std::pair<void *, cudnnTensorDescriptor_t> Params[2] = {
          {MatAddr, MatDesc.get()}, {BiasAddr, BiasDesc.get()}};
      for (int K = 0; K < 2; ++K) {
        if (!Params[K].first)
          continue;
        cudnnDataType_t Type;
        int NbDims = 0;
        int DimA[8] = {}, StrideA[8] = {};
        CUDNN_TRY(cudnnGetTensorNdDescriptor(Params[K].second, 8, &Type,
                                             &NbDims, DimA, StrideA));
        size_t Count = 1;
        for (int I = 0; I < NbDims; ++I)
          Count *= static_cast<size_t>(DimA[I]);
        auto Base = reinterpret_cast<uintptr_t>(A.Weights.get());
        auto Addr = reinterpret_cast<uintptr_t>(Params[K].first);
        if (Addr < Base ||
            Addr - Base + Count * elementBytes(P.Data) > A.WeightBytes)
          return {"cudnnGetRNNWeightParams",
                  "parameter outside the weight space", "", false};
        A.Slots.push_back({Layer, Lin, K == 1, Addr - Base, Count});
      }
    }
  }
  return {};
}

Failure PrecisionRun::setUpAlgo(AlgoRun &A, WeightBank &Bank) {
  TRY(A.Desc.create());
  CUDNN_TRY(cudnnSetRNNDescriptor_v8(
      A.Desc.get(), A.Algo, C.Mode, CUDNN_RNN_DOUBLE_BIAS,
      D.Dirs == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
      CUDNN_LINEAR_INPUT, P.Data, P.Math, P.MathType, D.I, D.H,
      /*projSize=*/D.H, D.L, Dropout.get(), CUDNN_RNN_PADDED_IO_ENABLED));
  if (A.Algo == CUDNN_RNN_ALGO_PERSIST_DYNAMIC) {
    auto Start = std::chrono::steady_clock::now();
    CUDNN_TRY(cudnnBuildRNNDynamic(Ctx.Handle, A.Desc.get(), D.B));
    A.BuildMs = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - Start)
                    .count();
  }
  CUDNN_TRY(
      cudnnGetRNNWeightSpaceSize(Ctx.Handle, A.Desc.get(), &A.WeightBytes));
  TRY(A.Weights.allocate(A.WeightBytes));
  TRY(A.WeightGrads.allocate(A.WeightBytes));
  TRY(findSlots(A));
  std::vector<unsigned char> Raw(A.WeightBytes, 0);
  for (const ParamSlot &S : A.Slots)
    fromFloats(Bank.values(S).data(), S.Count, P.Data, Raw.data() + S.Offset);
  CUDA_TRY(cudaMemcpyAsync(A.Weights.get(), Raw.data(), A.WeightBytes,
                           cudaMemcpyHostToDevice, Ctx.Stream));
  TRY(sync());

  // The two modes' temporary space: a refusal here only rules that mode out.
  size_t Reserve = 0;
  if (cudnnStatus_t S = cudnnGetRNNTempSpaceSizes(
          Ctx.Handle, A.Desc.get(), CUDNN_FWD_MODE_INFERENCE, XDesc.get(),
          &A.WorkInference, &Reserve);
      S != CUDNN_STATUS_SUCCESS)
    A.Refused[Inference] = cudnnFailure("cudnnGetRNNTempSpaceSizes", S);
  if (cudnnStatus_t S = cudnnGetRNNTempSpaceSizes(
          Ctx.Handle, A.Desc.get(), CUDNN_FWD_MODE_TRAINING, XDesc.get(),
          &A.WorkTraining, &A.ReserveBytes);
      S != CUDNN_STATUS_SUCCESS)
    A.Refused[ForwardTraining] = cudnnFailure("cudnnGetRNNTempSpaceSizes", S);
  TRY(A.Workspace.allocate(std::max(A.WorkInference, A.WorkTraining)));
  TRY(A.Reserve.allocate(A.ReserveBytes));
  return {};
}

Failure PrecisionRun::forward(AlgoRun &A, cudnnForwardMode_t Mode) {
  bool Training = Mode == CUDNN_FWD_MODE_TRAINING;
  CUDNN_TRY(cudnnRNNForward(
      Ctx.Handle, A.Desc.get(), Mode,
      static_cast<const int32_t *>(SeqLengths.get()), XDesc.get(), X.get(),
      YDesc.get(), Y.get(), HDesc.get(), Hx.get(), Hy.get(), HDesc.get(),
      cell(Cx), cell(Cy), A.WeightBytes, A.Weights.get(), A.Workspace.size(),
      A.Workspace.get(), Training ? A.Reserve.size() : 0,
      Training ? A.Reserve.get() : nullptr));
  return {};
}

Failure PrecisionRun::backwardData(AlgoRun &A) {
  CUDNN_TRY(cudnnRNNBackwardData_v8(
      Ctx.Handle, A.Desc.get(), static_cast<const int32_t *>(SeqLengths.get()),
      YDesc.get(), Y.get(), Dy.get(), XDesc.get(), Dx.get(), HDesc.get(),
      Hx.get(), Dhy.get(), Dhx.get(), HDesc.get(), cell(Cx), cell(Dcy),
      cell(Dcx), A.WeightBytes, A.Weights.get(), A.Workspace.size(),
      A.Workspace.get(), A.Reserve.size(), A.Reserve.get()));
  return {};
}

Failure PrecisionRun::backwardWeights(AlgoRun &A) {
  // cuDNN documents only CUDNN_WGRAD_MODE_ADD for this function: the
  // gradients are added to dweightSpace, which the caller zeroes.
  CUDNN_TRY(cudnnRNNBackwardWeights_v8(
      Ctx.Handle, A.Desc.get(), CUDNN_WGRAD_MODE_ADD,
      static_cast<const int32_t *>(SeqLengths.get()), XDesc.get(), X.get(),
      HDesc.get(), Hx.get(), YDesc.get(), Y.get(), A.WeightBytes,
      A.WeightGrads.get(), A.Workspace.size(), A.Workspace.get(),
      A.Reserve.size(), A.Reserve.get()));
  return {};
}

/// The first call of each function, in order, with the outputs copied back.
/// A refused call rules out its measurement (and those that need it); a
/// failed synchronisation is fatal.
Failure PrecisionRun::firstCalls(AlgoRun &A) {
  auto Call = [&](Measure M, Failure F) -> Failure {
    Failure Synced = sync(); // Asynchronous faults surface here.
    if (Synced.failed())
      return Synced;
    A.Refused[M] = F;
    A.Supported[M] = !F.failed();
    return {};
  };
  auto Fetch = [&](const char *Name, const DeviceBuffer &Buf,
                   size_t Count) -> Failure {
    if (!Buf.get())
      return {};
    return download(Buf, Count, A.Out[Name]);
  };

  if (!A.Refused[Inference].failed()) {
    TRY(Call(Inference, forward(A, CUDNN_FWD_MODE_INFERENCE)));
    if (A.Supported[Inference]) {
      TRY(Fetch("y_inference", Y, D.yCount()));
      TRY(Fetch("hy_inference", Hy, D.hCount()));
      TRY(Fetch("cy_inference", Cy, D.hCount()));
    }
  }
  if (Ctx.Opts.InferenceOnly) {
    Failure F;
    F.Call = "--inference-only";
    F.Status = "NOT_REQUESTED";
    A.Refused[ForwardTraining] = A.Refused[BackwardData] =
        A.Refused[BackwardWeights] = A.Refused[TrainingStep] = F;
    return {};
  }
  if (!A.Refused[ForwardTraining].failed()) {
    TRY(Call(ForwardTraining, forward(A, CUDNN_FWD_MODE_TRAINING)));
    if (A.Supported[ForwardTraining]) {
      TRY(Fetch("y_training", Y, D.yCount()));
      TRY(Fetch("hy_training", Hy, D.hCount()));
      TRY(Fetch("cy_training", Cy, D.hCount()));
    }
  }
  if (!A.Supported[ForwardTraining]) {
    Failure F = A.Refused[ForwardTraining];
    F.Detail = "needs the training forward, which failed: " + F.Detail;
    A.Refused[BackwardData] = A.Refused[BackwardWeights] = F;
    A.Refused[TrainingStep] = F;
    return {};
  }
  TRY(Call(BackwardData, backwardData(A)));
  if (!A.Supported[BackwardData]) {
    A.Refused[BackwardWeights] = A.Refused[TrainingStep] =
        A.Refused[BackwardData];
    return {};
  }
  TRY(Fetch("dx", Dx, D.xCount()));
  TRY(Fetch("dhx", Dhx, D.hCount()));
  TRY(Fetch("dcx", Dcx, D.hCount()));
  CUDA_TRY(cudaMemsetAsync(A.WeightGrads.get(), 0, A.WeightBytes, Ctx.Stream));
  TRY(Call(BackwardWeights, backwardWeights(A)));
  if (!A.Supported[BackwardWeights]) {
    A.Refused[TrainingStep] = A.Refused[BackwardWeights];
    return {};
  }
  A.Supported[TrainingStep] = true;
  // The weight gradients in a fixed order (layer, gate, matrix then bias),
  // whatever the algorithm's weight-space layout.
  std::vector<unsigned char> Raw(A.WeightBytes);
  CUDA_TRY(cudaMemcpyAsync(Raw.data(), A.WeightGrads.get(), A.WeightBytes,
                           cudaMemcpyDeviceToHost, Ctx.Stream));
  TRY(sync());
  std::vector<float> &Dw = A.Out["dw"];
  Dw.clear();
  for (const ParamSlot &S : A.Slots)
    toFloats(Raw.data() + S.Offset, S.Count, P.Data, Dw);
  return {};
}

void PrecisionRun::tryAlgo(AlgoRun &A, WeightBank &Bank) {
  A.Setup = setUpAlgo(A, Bank);
  if (A.Setup.failed()) {
    if (A.Setup.Fatal)
      Ctx.Fatal = A.Setup;
    return;
  }
  Failure F = firstCalls(A);
  if (F.failed()) {
    if (F.Fatal) {
      Ctx.Fatal = F;
      return;
    }
    // An allocation for a copy failed: count the algorithm out.
    A.Setup = F;
    A.Supported.fill(false);
  }
}

void PrecisionRun::check(AlgoRun &A, const AlgoRun *Ref) {
  for (int M = 0; M < NumMeasures; ++M) {
    if (!A.Supported[M])
      continue;
    if (!Ref || !Ref->Supported[M]) {
      A.CheckNote[M] = "no STANDARD reference";
      continue;
    }
    double Max = 0;
    for (const std::string &Name : checkedOutputs(static_cast<Measure>(M))) {
      auto Mine = A.Out.find(Name);
      auto Theirs = Ref->Out.find(Name);
      if (Mine == A.Out.end() && Theirs == Ref->Out.end())
        continue; // Not an output of this cell (cy, dcx but for LSTM).
      double Diff = Mine == A.Out.end() || Theirs == Ref->Out.end()
                        ? INFINITY
                        : relativeDiff(Mine->second, Theirs->second);
      A.Diffs[Name] = Diff;
      Max = std::max(Max, Diff);
    }
    A.MaxDiff[M] = Max;
    A.Passed[M] = Max <= P.Tolerance;
    if (!A.Passed[M])
      A.CheckNote[M] = "above tolerance";
  }
  if (&A != Ref)
    A.Out.clear();
}

Failure PrecisionRun::timeForward(AlgoRun &A, cudnnForwardMode_t Mode,
                                  Measure M) {
  for (int I = 0; I < Ctx.Opts.Warmup; ++I)
    TRY(forward(A, Mode));
  TRY(sync());
  for (int I = 0; I < Ctx.Opts.Repeats; ++I) {
    CUDA_TRY(cudaEventRecord(Ctx.Events[0], Ctx.Stream));
    TRY(forward(A, Mode));
    CUDA_TRY(cudaEventRecord(Ctx.Events[1], Ctx.Stream));
    CUDA_TRY(cudaEventSynchronize(Ctx.Events[1]));
    float Ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&Ms, Ctx.Events[0], Ctx.Events[1]));
    A.Samples[M].push_back(Ms);
  }
  return {};
}

Failure PrecisionRun::timeTraining(AlgoRun &A) {
  for (int I = 0; I < Ctx.Opts.Warmup; ++I) {
    CUDA_TRY(
        cudaMemsetAsync(A.WeightGrads.get(), 0, A.WeightBytes, Ctx.Stream));
    TRY(forward(A, CUDNN_FWD_MODE_TRAINING));
    TRY(backwardData(A));
    TRY(backwardWeights(A));
  }
  TRY(sync());
  const auto &E = Ctx.Events;
  for (int I = 0; I < Ctx.Opts.Repeats; ++I) {
    CUDA_TRY(
        cudaMemsetAsync(A.WeightGrads.get(), 0, A.WeightBytes, Ctx.Stream));
    CUDA_TRY(cudaEventRecord(E[0], Ctx.Stream));
    TRY(forward(A, CUDNN_FWD_MODE_TRAINING));
    CUDA_TRY(cudaEventRecord(E[1], Ctx.Stream));
    TRY(backwardData(A));
    CUDA_TRY(cudaEventRecord(E[2], Ctx.Stream));
    TRY(backwardWeights(A));
    CUDA_TRY(cudaEventRecord(E[3], Ctx.Stream));
    CUDA_TRY(cudaEventSynchronize(E[3]));
    float Fwd = 0, Data = 0, Weights = 0, Step = 0;
    CUDA_TRY(cudaEventElapsedTime(&Fwd, E[0], E[1]));
    CUDA_TRY(cudaEventElapsedTime(&Data, E[1], E[2]));
    CUDA_TRY(cudaEventElapsedTime(&Weights, E[2], E[3]));
    CUDA_TRY(cudaEventElapsedTime(&Step, E[0], E[3]));
    A.Samples[ForwardTraining].push_back(Fwd);
    A.Samples[BackwardData].push_back(Data);
    A.Samples[BackwardWeights].push_back(Weights);
    A.Samples[TrainingStep].push_back(Step);
  }
  return {};
}

void PrecisionRun::time(AlgoRun &A) {
  auto Record = [&](std::initializer_list<Measure> Ms, const Failure &F) {
    if (!F.failed())
      return;
    if (F.Fatal) {
      Ctx.Fatal = F;
      return;
    }
    for (Measure M : Ms) {
      A.Refused[M] = F;
      A.Refused[M].Detail = "failed while timing: " + F.Detail;
      A.Supported[M] = false;
      A.Samples[M].clear();
    }
  };
  if (A.Supported[Inference])
    Record({Inference}, timeForward(A, CUDNN_FWD_MODE_INFERENCE, Inference));
  if (Ctx.Fatal.failed())
    return;
  if (A.Supported[TrainingStep])
    Record({ForwardTraining, BackwardData, BackwardWeights, TrainingStep},
           timeTraining(A));
  else if (A.Supported[ForwardTraining]) // The backward was refused.
    Record({ForwardTraining},
           timeForward(A, CUDNN_FWD_MODE_TRAINING, ForwardTraining));
}

//===----------------------------------------------------------------------===//
// Reporting
//===----------------------------------------------------------------------===//

namespace {

struct Choice {
  std::string Algo, PrecisionName; // PrecisionName only for a class's best.
  Stats Time;
  bool found() const { return !Algo.empty(); }
  Json toJson() const {
    if (!found())
      return Json::null();
    Json J = Json::object();
    J.set("algo", Json::text(Algo));
    if (!PrecisionName.empty())
      J.set("precision", Json::text(PrecisionName));
    J.set("median_ms", Json::number(Time.Median));
    J.set("min_ms", Json::number(Time.Min));
    J.set("max_ms", Json::number(Time.Max));
    return J;
  }
};

/// The results of one precision at one shape and cell.
struct PrecisionResult {
  const Precision *Prec = nullptr;
  Failure Setup;
  std::vector<AlgoRun> Algos;
  std::array<Choice, NumMeasures> Best;
  cudnnRNNAlgo_t TorchForward = CUDNN_RNN_ALGO_STANDARD;
  cudnnRNNAlgo_t TorchBackward = CUDNN_RNN_ALGO_STANDARD;
  std::array<double, NumMeasures> TorchMs;
  PrecisionResult() { TorchMs.fill(NAN); }
};

} // namespace

static std::string formatMs(double Ms) {
  char Buf[32];
  std::snprintf(Buf, sizeof(Buf), "%.3f", Ms);
  return Buf;
}

static std::string formatDiff(double D) {
  if (std::isnan(D))
    return "-";
  if (std::isinf(D))
    return "inf";
  char Buf[32];
  std::snprintf(Buf, sizeof(Buf), "%.1e", D);
  return Buf;
}

static std::string pad(std::string S, size_t Width) {
  if (S.size() < Width)
    S.append(Width - S.size(), ' ');
  return S;
}

static std::string padLeft(const std::string &S, size_t Width) {
  return S.size() < Width ? std::string(Width - S.size(), ' ') + S : S;
}

static Json algoJson(const AlgoRun &A) {
  Json J = Json::object();
  J.set("algo", Json::text(algoName(A.Algo)));
  bool Any = std::any_of(A.Supported.begin(), A.Supported.end(),
                         [](bool S) { return S; });
  J.set("supported", Json::boolean(Any));
  J.set("setup", A.Setup.failed() ? A.Setup.toJson() : Json::text("ok"));
  J.set("weight_space_bytes", Json::number(static_cast<double>(A.WeightBytes)));
  J.set("workspace_bytes_inference",
        Json::number(static_cast<double>(A.WorkInference)));
  J.set("workspace_bytes_training",
        Json::number(static_cast<double>(A.WorkTraining)));
  J.set("reserve_bytes", Json::number(static_cast<double>(A.ReserveBytes)));
  if (A.Algo == CUDNN_RNN_ALGO_PERSIST_DYNAMIC)
    J.set("build_dynamic_ms", Json::number(A.BuildMs));
  Json Diffs = Json::object();
  for (const auto &[Name, Diff] : A.Diffs)
    Diffs.set(Name, Json::number(Diff));
  J.set("max_rel_diff_vs_standard", std::move(Diffs));
  Json Ms = Json::object();
  for (int M = 0; M < NumMeasures; ++M) {
    Json Entry = Json::object();
    Entry.set("supported", Json::boolean(A.Supported[M]));
    if (A.Refused[M].failed())
      Entry.set("status", A.Refused[M].toJson());
    Entry.set("check_passed", Json::boolean(A.Passed[M]));
    Entry.set("max_rel_diff", Json::number(A.MaxDiff[M]));
    if (!A.CheckNote[M].empty())
      Entry.set("check_note", Json::text(A.CheckNote[M]));
    Stats S = summarize(A.Samples[M]);
    Entry.set("median_ms", Json::number(S.Median));
    Entry.set("min_ms", Json::number(S.Min));
    Entry.set("max_ms", Json::number(S.Max));
    Json Samples = Json::array();
    for (double V : A.Samples[M])
      Samples.push(Json::number(V));
    Entry.set("samples_ms", std::move(Samples));
    Ms.set(MeasureNames[M], std::move(Entry));
  }
  J.set("measurements", std::move(Ms));
  return J;
}

static Json precisionJson(const PrecisionResult &R) {
  Json J = Json::object();
  J.set("precision", Json::text(R.Prec->Name));
  J.set("setup", R.Setup.failed() ? R.Setup.toJson() : Json::text("ok"));
  Json Algos = Json::array();
  for (const AlgoRun &A : R.Algos)
    Algos.push(algoJson(A));
  J.set("algos", std::move(Algos));
  Json BestJ = Json::object();
  for (int M = 0; M < NumMeasures; ++M)
    BestJ.set(MeasureNames[M], R.Best[M].toJson());
  J.set("best", std::move(BestJ));
  if (R.Prec->Torch) {
    Json Torch = Json::object();
    Torch.set("forward_algo", Json::text(algoName(R.TorchForward)));
    Torch.set("backward_algo", Json::text(algoName(R.TorchBackward)));
    for (int M = 0; M < NumMeasures; ++M)
      Torch.set(std::string(MeasureNames[M]) + "_median_ms",
                Json::number(R.TorchMs[M]));
    Torch.set("note",
              Json::text("the algorithm PyTorch's get_algo picks (forward "
                         "for the forward calls, backward for the backward "
                         "ones) and its median here; when the two differ "
                         "the step is the sum of the three medians"));
    J.set("torch_default", std::move(Torch));
  }
  return J;
}

/// Fills the best algorithm per measurement and PyTorch's choice.
static void pickBest(PrecisionResult &R) {
  for (int M = 0; M < NumMeasures; ++M) {
    for (const AlgoRun &A : R.Algos) {
      if (!A.Supported[M] || !A.Passed[M] || A.Samples[M].empty())
        continue;
      Stats S = summarize(A.Samples[M]);
      if (!R.Best[M].found() || S.Median < R.Best[M].Time.Median)
        R.Best[M] = {algoName(A.Algo), "", S};
    }
  }
  auto MedianOf = [&R](cudnnRNNAlgo_t Algo, int M) {
    for (const AlgoRun &A : R.Algos)
      if (A.Algo == Algo && A.Supported[M])
        return summarize(A.Samples[M]).Median;
    return static_cast<double>(NAN);
  };
  R.TorchMs[Inference] = MedianOf(R.TorchForward, Inference);
  R.TorchMs[ForwardTraining] = MedianOf(R.TorchForward, ForwardTraining);
  R.TorchMs[BackwardData] = MedianOf(R.TorchBackward, BackwardData);
  R.TorchMs[BackwardWeights] = MedianOf(R.TorchBackward, BackwardWeights);
  R.TorchMs[TrainingStep] = R.TorchForward == R.TorchBackward
                                ? MedianOf(R.TorchForward, TrainingStep)
                                : R.TorchMs[ForwardTraining] +
                                      R.TorchMs[BackwardData] +
                                      R.TorchMs[BackwardWeights];
}

static void printPrecision(const PrecisionResult &R) {
  std::string Name = R.Prec->Name;
  if (R.Setup.failed()) {
    std::printf("%s  not supported: %s\n", pad(Name, 14).c_str(),
                R.Setup.describe().c_str());
    return;
  }
  for (const AlgoRun &A : R.Algos) {
    std::string Line = pad(Name, 14) + pad(algoName(A.Algo), 24);
    bool Any = std::any_of(A.Supported.begin(), A.Supported.end(),
                           [](bool S) { return S; });
    if (!Any) {
      const Failure &Why = A.Setup.failed() ? A.Setup
                           : A.Refused[Inference].failed()
                               ? A.Refused[Inference]
                               : A.Refused[ForwardTraining];
      Line += "not supported: " + Why.Status + " (" + Why.Call + ")";
      std::printf("%s\n", Line.c_str());
      continue;
    }
    double MaxDiff = NAN;
    for (int M = 0; M < NumMeasures; ++M) {
      std::string Text = "-";
      if (A.Supported[M]) {
        Text = formatMs(summarize(A.Samples[M]).Median);
        if (!A.Passed[M])
          Text += "!";
        if (!std::isnan(A.MaxDiff[M]))
          MaxDiff = std::isnan(MaxDiff) ? A.MaxDiff[M]
                                        : std::max(MaxDiff, A.MaxDiff[M]);
      }
      Line += padLeft(Text, 11);
    }
    Line += "  " + pad(A.Algo == CUDNN_RNN_ALGO_STANDARD ? std::string("ref")
                                                         : formatDiff(MaxDiff),
                       9);
    char Mib[64];
    std::snprintf(
        Mib, sizeof(Mib), "%.1f/%.1f",
        static_cast<double>(std::max(A.WorkInference, A.WorkTraining)) /
            1048576.0,
        static_cast<double>(A.ReserveBytes) / 1048576.0);
    Line += Mib;
    std::printf("%s\n", Line.c_str());
  }
  std::string Line = pad(std::string("  best ") + Name, 38);
  for (int M = 0; M < NumMeasures; ++M)
    Line +=
        padLeft(R.Best[M].found() ? formatMs(R.Best[M].Time.Median) : "-", 11);
  std::string Which;
  for (int M = 0; M < NumMeasures; ++M)
    if (R.Best[M].found())
      Which +=
          std::string(M ? " " : "") + MeasureHeads[M] + "=" + R.Best[M].Algo;
  std::printf("%s  %s\n", Line.c_str(), Which.c_str());
  if (R.Prec->Torch) {
    Line = pad(std::string("  torch ") + Name, 38);
    for (int M = 0; M < NumMeasures; ++M)
      Line +=
          padLeft(std::isnan(R.TorchMs[M]) ? "-" : formatMs(R.TorchMs[M]), 11);
    std::printf("%s  fwd=%s bwd=%s\n", Line.c_str(),
                algoName(R.TorchForward).c_str(),
                algoName(R.TorchBackward).c_str());
  }
}

//===----------------------------------------------------------------------===//
// One shape and cell: every precision and algorithm
//===----------------------------------------------------------------------===//

static Json runCell(Bench &Ctx, const Config &Cfg, const Cell &C,
                    const std::vector<const Precision *> &Precs,
                    const std::vector<cudnnRNNAlgo_t> &Algos) {
  Dims D{Cfg.T, Cfg.B, Cfg.I, Cfg.H, Cfg.L, Cfg.Bidirectional ? 2 : 1};
  HostInputs In(D);
  WeightBank Bank(D.H);
  std::vector<PrecisionResult> Results;
  std::map<std::string, Outputs> StandardOut;

  std::printf("\n== %s: %s T=%d B=%d I=%d H=%d L=%d%s\n", Cfg.Name.c_str(),
              C.Name, D.T, D.B, D.I, D.H, D.L,
              D.Dirs == 2 ? " bidirectional" : "");
  std::printf("%s%s", pad("precision", 14).c_str(),
              pad("algorithm", 24).c_str());
  for (const char *Head : MeasureHeads)
    std::printf("%s", padLeft(Head, 11).c_str());
  std::printf("  %s%s\n", pad("rel diff", 9).c_str(), "work/reserve MiB");
  std::fflush(stdout);

  for (const Precision *P : Precs) {
    std::fprintf(stderr, "[%s %s %s]\n", Cfg.Name.c_str(), C.Name, P->Name);
    PrecisionResult R;
    R.Prec = P;
    R.TorchForward = torchAlgo(Ctx.Device, C, D, P->Data, true);
    R.TorchBackward = torchAlgo(Ctx.Device, C, D, P->Data, false);
    PrecisionRun Run(Ctx, D, C, *P);
    R.Setup = Run.setUp(In);
    if (R.Setup.Fatal)
      Ctx.Fatal = R.Setup;
    if (!R.Setup.failed()) {
      R.Algos.resize(Algos.size());
      for (size_t K = 0; K < Algos.size(); ++K) {
        R.Algos[K].Algo = Algos[K];
        if (!Ctx.Fatal.failed())
          Run.tryAlgo(R.Algos[K], Bank);
        else
          R.Algos[K].Setup = {"", "not run", "the run stopped before", false};
      }
      // Algos[0] is STANDARD, the reference.
      const AlgoRun *Ref = &R.Algos[0];
      for (AlgoRun &A : R.Algos)
        Run.check(A, Ref);
      for (int Round = 0; Round < Ctx.Opts.Rounds; ++Round)
        for (AlgoRun &A : R.Algos)
          if (!Ctx.Fatal.failed())
            Run.time(A);
      StandardOut[P->Name] = std::move(R.Algos[0].Out);
      for (AlgoRun &A : R.Algos)
        A.releaseDevice();
    }
    pickBest(R);
    printPrecision(R);
    std::fflush(stdout);
    Results.push_back(std::move(R));
    if (Ctx.Fatal.failed())
      break;
  }

  Json J = Json::object();
  Json Shape = Json::object();
  Shape.set("name", Json::text(Cfg.Name));
  Shape.set("T", Json::number(D.T));
  Shape.set("B", Json::number(D.B));
  Shape.set("I", Json::number(D.I));
  Shape.set("H", Json::number(D.H));
  Shape.set("L", Json::number(D.L));
  Shape.set("bidirectional", Json::boolean(D.Dirs == 2));
  J.set("config", std::move(Shape));
  J.set("cell", Json::text(C.Name));
  Json PrecJ = Json::array();
  for (const PrecisionResult &R : Results)
    PrecJ.push(precisionJson(R));
  J.set("precisions", std::move(PrecJ));

  // The best per precision class (TF32 is allowed in the fp32 class).
  Json Classes = Json::object();
  for (const char *Class : {"fp32", "16-bit"}) {
    Json ClassJ = Json::object();
    for (int M = 0; M < NumMeasures; ++M) {
      Choice B;
      for (const PrecisionResult &R : Results)
        if (std::strcmp(R.Prec->Class, Class) == 0 && R.Best[M].found() &&
            (!B.found() || R.Best[M].Time.Median < B.Time.Median)) {
          B = R.Best[M];
          B.PrecisionName = R.Prec->Name;
        }
      ClassJ.set(MeasureNames[M], B.toJson());
    }
    Classes.set(Class, std::move(ClassJ));
  }
  J.set("class_best", std::move(Classes));

  // Every precision's STANDARD against fp32-notf32's STANDARD.
  auto Exact = StandardOut.find("fp32-notf32");
  if (Exact != StandardOut.end()) {
    Json Cross = Json::object();
    std::string Line = "  STANDARD vs fp32-notf32 STANDARD (max rel diff):";
    for (const auto &[Name, Out] : StandardOut) {
      if (Name == "fp32-notf32")
        continue;
      Json PerOutput = Json::object();
      double Y = NAN, Dx = NAN, Dw = NAN;
      for (const auto &[Output, Values] : Out) {
        auto Ref = Exact->second.find(Output);
        if (Ref == Exact->second.end())
          continue;
        double Diff = relativeDiff(Values, Ref->second);
        PerOutput.set(Output, Json::number(Diff));
        if (Output == "y_inference")
          Y = Diff;
        else if (Output == "dx")
          Dx = Diff;
        else if (Output == "dw")
          Dw = Diff;
      }
      Cross.set(Name, std::move(PerOutput));
      Line += " " + Name + " y " + formatDiff(Y) + " dx " + formatDiff(Dx) +
              " dw " + formatDiff(Dw) + ";";
    }
    J.set("standard_vs_fp32_notf32_standard", std::move(Cross));
    std::printf("%s\n", Line.c_str());
  }
  return J;
}

//===----------------------------------------------------------------------===//
// Command line and configs
//===----------------------------------------------------------------------===//

static std::vector<std::string> splitList(const std::string &S) {
  std::vector<std::string> Parts;
  std::stringstream In(S);
  std::string Part;
  while (std::getline(In, Part, ','))
    if (!Part.empty())
      Parts.push_back(Part);
  return Parts;
}

static const Cell *findCell(const std::string &Name) {
  for (const Cell &C : Cells)
    if (Name == C.Name)
      return &C;
  return nullptr;
}

static const Precision *findPrecision(const std::string &Name) {
  for (const Precision &P : Precisions)
    if (Name == P.Name)
      return &P;
  return nullptr;
}

static bool findAlgo(std::string Name, cudnnRNNAlgo_t &Algo) {
  for (char &Ch : Name)
    Ch = static_cast<char>(std::toupper(static_cast<unsigned char>(Ch)));
  for (cudnnRNNAlgo_t A : AllAlgos)
    if (Name == algoName(A)) {
      Algo = A;
      return true;
    }
  return false;
}

static void usage(FILE *To) {
  std::fprintf(
      To,
      "usage: cudnn_rnn_bench OUT.json [--configs FILE.json] [--repeats N]\n"
      "         [--rounds N] [--warmup N] [--cells "
      "lstm,gru,rnn_tanh,rnn_relu]\n"
      "         [--precisions fp32,fp32-notf32,fp16,bf16,fp16-default,\n"
      "                       fp16-halfmath,bf16-tensorop]\n"
      "         [--algos standard,persist_static,persist_dynamic,\n"
      "                  persist_static_small_h] [--inference-only]\n"
      "Times cudnnRNNForward (inference, training) and the backward of every\n"
      "cuDNN RNN algorithm per shape and precision; see the file header.\n");
}

static bool parseInt(const char *Text, int Min, int &Out) {
  char *End = nullptr;
  long V = std::strtol(Text, &End, 10);
  if (!*Text || *End || V < Min || V > 1000000)
    return false;
  Out = static_cast<int>(V);
  return true;
}

static bool parseArgs(int Argc, char **Argv, Options &Opts) {
  for (int I = 1; I < Argc; ++I) {
    std::string Arg = Argv[I];
    if (Arg == "-h" || Arg == "--help") {
      usage(stdout);
      std::exit(0);
    }
    if (Arg == "--inference-only") {
      Opts.InferenceOnly = true;
      continue;
    }
    if (Arg.rfind("--", 0) != 0) {
      if (!Opts.OutPath.empty()) {
        std::fprintf(stderr, "cudnn_rnn_bench: one output path only\n");
        return false;
      }
      Opts.OutPath = Arg;
      continue;
    }
    if (I + 1 >= Argc) {
      std::fprintf(stderr, "cudnn_rnn_bench: %s needs a value\n", Arg.c_str());
      return false;
    }
    const char *Value = Argv[++I];
    bool Ok = true;
    if (Arg == "--configs")
      Opts.ConfigPath = Value;
    else if (Arg == "--repeats")
      Ok = parseInt(Value, 1, Opts.Repeats);
    else if (Arg == "--rounds")
      Ok = parseInt(Value, 1, Opts.Rounds);
    else if (Arg == "--warmup")
      Ok = parseInt(Value, 0, Opts.Warmup);
    else if (Arg == "--cells")
      Opts.Cells = splitList(Value);
    else if (Arg == "--precisions")
      Opts.Precisions = splitList(Value);
    else if (Arg == "--algos")
      Opts.Algos = splitList(Value);
    else
      Ok = false;
    if (!Ok) {
      std::fprintf(stderr, "cudnn_rnn_bench: bad option %s %s\n", Arg.c_str(),
                   Value);
      return false;
    }
  }
  if (Opts.OutPath.empty()) {
    usage(stderr);
    return false;
  }
  for (const std::string &C : Opts.Cells)
    if (!findCell(C)) {
      std::fprintf(stderr, "cudnn_rnn_bench: unknown cell %s\n", C.c_str());
      return false;
    }
  for (const std::string &P : Opts.Precisions)
    if (!findPrecision(P)) {
      std::fprintf(stderr, "cudnn_rnn_bench: unknown precision %s\n",
                   P.c_str());
      return false;
    }
  for (const std::string &A : Opts.Algos) {
    cudnnRNNAlgo_t Algo;
    if (!findAlgo(A, Algo)) {
      std::fprintf(stderr, "cudnn_rnn_bench: unknown algorithm %s\n",
                   A.c_str());
      return false;
    }
  }
  return true;
}

/// Reads one config; false (with Error) when a field is missing or wrong.
static bool readConfig(const Json &J, Config &Cfg, std::string &Error) {
  if (J.kind() != Json::Kind::Object) {
    Error = "a config is not an object";
    return false;
  }
  auto Int = [&](const char *Key, int &Out, bool Required) {
    const Json *V = J.find(Key);
    if (!V) {
      if (Required)
        Error = std::string("missing ") + Key;
      return !Required;
    }
    double N = V->asNumber();
    if (V->kind() != Json::Kind::Number || N < 1 || N > 1e8 ||
        N != std::floor(N)) {
      Error = std::string("bad ") + Key;
      return false;
    }
    Out = static_cast<int>(N);
    return true;
  };
  Cfg.L = 1;
  if (!Int("T", Cfg.T, true) || !Int("B", Cfg.B, true) ||
      !Int("H", Cfg.H, true) || !Int("L", Cfg.L, false))
    return false;
  Cfg.I = Cfg.H;
  if (!Int("I", Cfg.I, false))
    return false;
  const Json *Name = J.find("name");
  Cfg.Name = Name && Name->kind() == Json::Kind::String
                 ? Name->asString()
                 : "T" + std::to_string(Cfg.T) + "-B" + std::to_string(Cfg.B) +
                       "-I" + std::to_string(Cfg.I) + "-H" +
                       std::to_string(Cfg.H) + "-L" + std::to_string(Cfg.L);
  const Json *Bidir = J.find("bidirectional");
  Cfg.Bidirectional =
      Bidir && Bidir->kind() == Json::Kind::Bool && Bidir->asBool();
  if (const Json *CellJ = J.find("cell")) {
    std::vector<Json> Names = CellJ->kind() == Json::Kind::Array
                                  ? CellJ->items()
                                  : std::vector<Json>{*CellJ};
    for (const Json &N : Names) {
      if (N.kind() != Json::Kind::String || !findCell(N.asString())) {
        Error = "bad cell in " + Cfg.Name;
        return false;
      }
      Cfg.Cells.push_back(N.asString());
    }
  }
  return true;
}

static bool loadConfigs(const std::string &Path, std::vector<Config> &Out) {
  std::ifstream File(Path);
  if (!File) {
    std::fprintf(stderr, "cudnn_rnn_bench: cannot read %s\n", Path.c_str());
    return false;
  }
  std::stringstream Buf;
  Buf << File.rdbuf();
  std::string Text = Buf.str(), Error;
  Json Root;
  if (!JsonParser(Text).parse(Root, Error)) {
    std::fprintf(stderr, "cudnn_rnn_bench: %s: %s\n", Path.c_str(),
                 Error.c_str());
    return false;
  }
  std::vector<Json> List;
  if (Root.kind() == Json::Kind::Array) {
    List = Root.items();
  } else {
    for (const char *Key : {"configs", "extra"})
      if (const Json *Part = Root.find(Key);
          Part && Part->kind() == Json::Kind::Array)
        List.insert(List.end(), Part->items().begin(), Part->items().end());
  }
  if (List.empty()) {
    std::fprintf(stderr, "cudnn_rnn_bench: %s: no configs\n", Path.c_str());
    return false;
  }
  for (const Json &J : List) {
    Config Cfg;
    if (!readConfig(J, Cfg, Error)) {
      std::fprintf(stderr, "cudnn_rnn_bench: %s: %s\n", Path.c_str(),
                   Error.c_str());
      return false;
    }
    Out.push_back(std::move(Cfg));
  }
  return true;
}

static bool writeFile(const std::string &Path, const Json &Root) {
  std::string Text;
  Root.write(Text);
  Text += '\n';
  std::ofstream File(Path, std::ios::trunc);
  File << Text;
  File.close();
  if (!File) {
    std::fprintf(stderr, "cudnn_rnn_bench: cannot write %s\n", Path.c_str());
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Device set-up and main
//===----------------------------------------------------------------------===//

static Failure startDevice(Bench &Ctx, Json &Header) {
  CUDA_TRY(cudaSetDevice(0));
  cudaDeviceProp Prop;
  CUDA_TRY(cudaGetDeviceProperties(&Prop, 0));
  Ctx.Device.Name = Prop.name;
  Ctx.Device.Major = Prop.major;
  Ctx.Device.Minor = Prop.minor;
  Ctx.Device.SMs = Prop.multiProcessorCount;
  int Driver = 0, Runtime = 0;
  CUDA_TRY(cudaDriverGetVersion(&Driver));
  CUDA_TRY(cudaRuntimeGetVersion(&Runtime));
  CUDNN_TRY(cudnnCreate(&Ctx.Handle));
  CUDA_TRY(cudaStreamCreate(&Ctx.Stream));
  CUDNN_TRY(cudnnSetStream(Ctx.Handle, Ctx.Stream));
  for (cudaEvent_t &E : Ctx.Events)
    CUDA_TRY(cudaEventCreate(&E));

  Json Dev = Json::object();
  Dev.set("name", Json::text(Ctx.Device.Name));
  Dev.set("compute_capability", Json::text(std::to_string(Prop.major) + "." +
                                           std::to_string(Prop.minor)));
  Dev.set("sm_count", Json::number(Prop.multiProcessorCount));
  Header.set("device", std::move(Dev));
  Header.set("cudnn_version",
             Json::number(static_cast<double>(cudnnGetVersion())));
  Header.set("cudnn_header_version", Json::number(CUDNN_VERSION));
  Header.set("cudnn_cudart_version",
             Json::number(static_cast<double>(cudnnGetCudartVersion())));
  Header.set("cuda_runtime_version", Json::number(Runtime));
  Header.set("cuda_driver_version", Json::number(Driver));
  return {};
}

static void stopDevice(Bench &Ctx) {
  for (cudaEvent_t E : Ctx.Events)
    if (E)
      warnOnError(cudaEventDestroy(E), "cudaEventDestroy");
  if (Ctx.Handle)
    warnOnError(cudnnDestroy(Ctx.Handle), "cudnnDestroy");
  if (Ctx.Stream)
    warnOnError(cudaStreamDestroy(Ctx.Stream), "cudaStreamDestroy");
}

int main(int Argc, char **Argv) {
  Bench Ctx;
  if (!parseArgs(Argc, Argv, Ctx.Opts))
    return 2;
  const Options &Opts = Ctx.Opts;
  std::vector<Config> Configs;
  if (Opts.ConfigPath.empty())
    Configs = defaultConfigs();
  else if (!loadConfigs(Opts.ConfigPath, Configs))
    return 2;

  std::vector<const Precision *> Precs;
  for (const Precision &P : Precisions)
    if (Opts.Precisions.empty()
            ? P.Default
            : std::find(Opts.Precisions.begin(), Opts.Precisions.end(),
                        P.Name) != Opts.Precisions.end())
      Precs.push_back(&P);
  // STANDARD comes first: it is every other algorithm's reference.
  std::vector<cudnnRNNAlgo_t> Algos = {CUDNN_RNN_ALGO_STANDARD};
  for (cudnnRNNAlgo_t A : AllAlgos) {
    bool Wanted = Opts.Algos.empty();
    for (const std::string &Name : Opts.Algos) {
      cudnnRNNAlgo_t Named;
      Wanted |= findAlgo(Name, Named) && Named == A;
    }
    if (Wanted && A != CUDNN_RNN_ALGO_STANDARD)
      Algos.push_back(A);
  }

  Json Header = Json::object();
  Header.set("tool", Json::text("bench/cudnn_rnn_bench"));
  checkStartup(startDevice(Ctx, Header));
  Header.set("seed", Json::number(static_cast<double>(Seed)));
  Header.set("warmup", Json::number(Opts.Warmup));
  Header.set("repeats", Json::number(Opts.Repeats));
  Header.set("rounds", Json::number(Opts.Rounds));
  Header.set("timing",
             Json::text("CUDA events around each call on one stream, a "
                        "synchronisation after each repeat, after `warmup` "
                        "untimed calls; ms; the training step's three calls "
                        "back to back with events between them"));
  Header.set("data_layout",
             Json::text("CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, "
                        "CUDNN_RNN_PADDED_IO_ENABLED, all sequences full "
                        "length, CUDNN_RNN_DOUBLE_BIAS, CUDNN_LINEAR_INPUT, "
                        "no dropout"));
  Json PrecInfo = Json::object();
  for (const Precision *P : Precs) {
    Json J = Json::object();
    J.set("data_type", Json::text(dataTypeName(P->Data)));
    J.set("math_precision", Json::text(dataTypeName(P->Math)));
    J.set("math_type", Json::text(mathTypeName(P->MathType)));
    J.set("tolerance", Json::number(P->Tolerance));
    J.set("class", Json::text(P->Class));
    J.set("note", Json::text(P->Note));
    PrecInfo.set(P->Name, std::move(J));
  }
  Header.set("precisions", std::move(PrecInfo));
  std::printf("cuDNN %zu (built against %d), %s (sm_%d%d, %d SMs); ms, "
              "median of %d x %d; '!' = check failed\n",
              cudnnGetVersion(), CUDNN_VERSION, Ctx.Device.Name.c_str(),
              Ctx.Device.Major, Ctx.Device.Minor, Ctx.Device.SMs, Opts.Rounds,
              Opts.Repeats);

  Json Results = Json::array();
  auto Save = [&](bool Complete) {
    Json Root = Header;
    Root.set("complete", Json::boolean(Complete));
    Root.set("fatal", Ctx.Fatal.failed() ? Ctx.Fatal.toJson() : Json::null());
    Root.set("results", Results);
    return writeFile(Opts.OutPath, Root);
  };
  for (const Config &Cfg : Configs) {
    // A config without cells runs those of --cells (lstm and gru by
    // default); one with cells runs those of them that --cells names.
    std::vector<std::string> CellNames = Cfg.Cells;
    if (CellNames.empty())
      CellNames = Opts.Cells.empty() ? std::vector<std::string>{"lstm", "gru"}
                                     : Opts.Cells;
    for (const std::string &Name : CellNames) {
      if (!Opts.Cells.empty() && std::find(Opts.Cells.begin(), Opts.Cells.end(),
                                           Name) == Opts.Cells.end())
        continue;
      Results.push(runCell(Ctx, Cfg, *findCell(Name), Precs, Algos));
      if (!Save(false))
        return 1;
      if (Ctx.Fatal.failed())
        break;
    }
    if (Ctx.Fatal.failed())
      break;
  }
  bool Saved = Save(!Ctx.Fatal.failed());
  if (Ctx.Fatal.failed()) {
    std::fprintf(stderr, "cudnn_rnn_bench: stopped: %s\n",
                 Ctx.Fatal.describe().c_str());
    return 1;
  }
  stopDevice(Ctx);
  std::printf("\nwrote %s\n", Opts.OutPath.c_str());
  return Saved ? 0 : 1;
}
