//===- PersistentRecurrence.h - Shape of the persistent kernels -*- C++ -*-===//
//
// What the compiler (convert-step-loops-to-persistent-kernels) and the
// device library (lib/DeviceLibrary/PersistentRecurrence.cu) agree on: the
// launch shape, the batch sizes, the shared memory, and the (direction,
// gates, hidden size) triples the library has entry points for. Plain
// constexpr C++, so both the host compiler and clang's CUDA mode read it.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_DEVICELIBRARY_PERSISTENTRECURRENCE_H
#define RNN_DEVICELIBRARY_PERSISTENTRECURRENCE_H

namespace rnn::persistent {

/// Batch rows are staged and multiplied in tiles of 8 (the mma's n); a
/// batch that is not a multiple of 8 leaves part of its last tile unused.
constexpr int kBatchTile = 8;
/// The staged vector is multicast to the blocks of a cluster of 2.
constexpr int kClusterSize = 2;
/// Rows of an mma tile of the weights (the mma's m).
constexpr int kTileRows = 16;
/// The most tiles of batch rows a layout stages (one mbarrier each).
constexpr int kMaxBatchTiles = 4;
/// Hidden units a block owns: 16 in the 16-bit layouts; 16 or 8 in the
/// TF32 ones (layoutFor).
constexpr int kUnitsPerBlock = 16;
/// The most blocks of one batch tile's grid (every block on an SM of its own;
/// the H100 and H200 have 132).
constexpr int kMaxBlocks = 128;
/// Hidden sizes with entry points: multiples of 64 (a K quarter of whole
/// k16 steps, an even number of blocks for the clusters) in this range. At
/// H = 256 the kernel's step was no faster than the step loop's (the GRU at
/// B = 1, T = 50: 0.257 against 0.179 ms, H100, 2026-11-27); from 512 on it
/// was 1.2x to 2.9x faster (docs/persistent-recurrences.md).
constexpr int kMinHidden = 512;
constexpr int kMaxHidden = 2048;
/// Gate counts with entry points: 1 (the vanilla RNN) to the LSTM's 4 (gate
/// windows of H columns each in the product).
constexpr int kMinGates = 1;
constexpr int kMaxGates = 4;
/// The fewest steps a sequence needs for the kernel: its set-up (the weights
/// into registers, the cooperative launch) costs about what 20 steps gain
/// over the step loop. Ten-step sweep shapes lost (0.55x to 0.91x), those of
/// 50 steps and more at H >= 512 gained (H100, 2026-11-27).
constexpr int kMinSteps = 32;
/// Batch tiles of at most this many rows (and, in a lane, at most
/// kLowLatencyWordsPerLane words of the vector a thread, fewer where the
/// lane has few registers to spare) exchange the
/// forward's staged vector through the low-latency buffer rather than by
/// the step counter and bulk copies: each word a value (two for 16-bit
/// operands) and the step it belongs to, stored and polled as one 8-byte
/// access, so a block waits one L2 round trip for the other blocks' values
/// where the counter took three (the release's fence, the counter's poll,
/// the copies).
constexpr int kLowLatencyRows = 8;
constexpr int kLowLatencyWordsPerLane = 8;

/// Dynamic shared memory a block may take on sm_90 (227 KiB), less the
/// library's static mbarriers.
constexpr int kSharedLimit = 232448 - 64;
/// Registers of an SM, and what a lane needs besides its weight fragments:
/// fitted to the forward H = 2048 GRU (168 registers a lane, 128 of them
/// fragments) and to the backward's larger adjoint groups (the H = 1024
/// LSTM's backward spilled 252 bytes with 64 fragments a lane in 128
/// registers; the H = 768 one, 48 fragments, did not).
constexpr int kRegisters = 65536;
constexpr int kRegistersBesidesFragments = 40;
constexpr int kBackwardRegistersBesidesFragments = 72;

/// What the product multiplies: 16-bit operands (bf16, or f16; the same
/// layouts, m16n8k16 mmas) or f32 ones through TF32 tensor cores (m16n8k8
/// mmas; a recurrence whose matmul allows TF32).
enum class Operands { BF16, F16, TF32 };
constexpr int operandBytes(Operands operands) {
  return operands == Operands::TF32 ? 4 : 2;
}

/// The two recurrences the library runs.
///  * Forward: block k owns units [16k, 16k + 16) of every gate, i.e. the G·16
///    rows q·H + 16k + u of U ([G·H, H]), gate-major, one 16-row tile per
///    gate; it stages h_{t-1} [B, H] and gives the gates' sums.
///  * Backward (a derived backward's transposed product dh = dgates x U):
///    block k owns output units [16k, 16k + 16): one tile whose row u is
///    column 16k + u of U over all G·H inputs; it stages the step's gate
///    gradients [B, G·H] and gives dh.
enum class Direction { Forward, Backward };

/// How a recurrence is spread over the GPU: H / units blocks; warp (tile,
/// slice) holds its tile's rows over a slice of the inputs as mma A fragments:
/// 16-bit, H / 4 inputs a slice (m16n8k16); TF32, H / 8 (m16n8k8). Either way
/// H / 16 registers a lane (`fragments`; H / 8 in the backward's layout in
/// K parts). Each slice's sums go to a region of their own,
/// batch-major; a unit's value is the sum over the slices.
struct Layout {
  bool valid;
  int unitsPerBlock; // 16; 8 for the TF32 layouts whose 16 would not fit
  int rowTiles;      // 16-row tiles of the block's rows
  int registerTiles; // of which held in registers; at most one more in
                     // shared memory (the H = 2048 LSTM's fourth gate)
  int slices;        // K slices (warps) per tile
  int stagedWidth;   // K: columns of the staged vector (its rows are
                     // stagedRowElements(stagedWidth) apart in global
                     // memory, and in shared memory where parts is 1)
  int parts;         // K parts the product stages one after the other
                     // (2: the backward whose staged rows would not fit
                     // whole; a part's rows are
                     // stagedRowElements(stagedWidth / parts) apart in
                     // shared memory)
  int maxBatch;      // batch rows staged at most (a multiple of 8, <= 32;
                     // any batch up to it runs)
  int fragments;     // weight fragment registers a lane: its tile's rows
                     // over its slice's stagedWidth / slices inputs, 4
                     // registers an mma (k 16 of 16-bit operands, k 8 of
                     // TF32 ones)
  int threads;
  int blocks;
  int sharedBytes;
};

/// Values of one staged row, padded by 8 so that the 8 rows of a tile are
/// read from distinct banks (16-bit: ldmatrix's 16-byte rows; f32: the TF32
/// product's 8-byte pairs, rows 8 words apart mod 32). The generated kernel
/// writes the vector with this row stride too, so that a block's rows of a
/// batch tile are one contiguous bulk copy (a copy a row cost about 100
/// cycles of issue each).
constexpr int stagedRowElements(int width) { return width + 8; }
constexpr int stagedRowBytes(int width, int elementBytes) {
  return stagedRowElements(width) * elementBytes;
}

constexpr int sharedBytesFor(int rowTiles, int registerTiles, int slices,
                             int width, int elementBytes, int batch) {
  return batch * stagedRowBytes(width, elementBytes) +
         (rowTiles > registerTiles
              ? kTileRows * stagedRowBytes(width, elementBytes)
              : 0) +
         slices * batch * (rowTiles * kTileRows + 1) * 4;
}

/// Sets `layout`'s maxBatch and sharedBytes: the most batch rows (a multiple
/// of 8, up to kMaxBatchTiles tiles) whose staged rows (of one K part) of
/// `elementBytes` values, shared tile and sums fit kSharedLimit (maxBatch 0
/// where none do).
constexpr void stageMostRows(Layout &l, int elementBytes) {
  for (int batch = kMaxBatchTiles * kBatchTile; batch > 0; batch -= kBatchTile)
    if (int bytes =
            sharedBytesFor(l.rowTiles, l.registerTiles, l.slices,
                           l.stagedWidth / l.parts, elementBytes, batch);
        bytes <= kSharedLimit) {
      l.maxBatch = batch;
      l.sharedBytes = bytes;
      return;
    }
}

/// Threads whose lanes hold H / 16 fragment registers and `besides` more fit
/// in the SM's registers.
constexpr bool fitsRegisters(int threads, int hidden, int besides) {
  return threads * (hidden / 16 + besides) <= kRegisters;
}

/// The most registers a thread has.
constexpr int kThreadRegisters = 255;

/// The weight fragment registers of a lane whose slice has `inputs` inputs
/// of `operands`.
constexpr int fragmentsFor(int inputs, Operands operands) {
  return 4 * inputs / (operands == Operands::TF32 ? 8 : 16);
}

/// The most threads of a TF32 block: the GRU's layout of 16 units at
/// H = 640 (3 tiles, 768 threads, 80 registers a lane) spilled 16 bytes
/// (48 in its training forward); 8 units in 512 threads did not.
constexpr int kMaxTf32Threads = 512;

/// The TF32 forward layout: G gates' rows of 16 units a block in G tiles
/// where those fit 512 threads (the vanilla RNN to H = 2048, two gates to
/// 1408), else of 8 units in ceil(G / 2) tiles (an odd G's last tile half
/// padding rows) while H / 8 blocks fit kMaxBlocks (three and four gates to
/// H = 1024); 8 slices of H / 8 inputs; every tile in registers. Its f32
/// staged rows are twice the 16-bit ones' bytes, its sums the same.
constexpr Layout tf32LayoutFor(int gates, int hidden) {
  Layout l{};
  l.slices = 8;
  l.parts = 1;
  l.stagedWidth = hidden;
  l.unitsPerBlock = kUnitsPerBlock;
  l.rowTiles = gates;
  if (l.rowTiles * l.slices * 32 > kMaxTf32Threads ||
      !fitsRegisters(l.rowTiles * l.slices * 32, hidden,
                     kRegistersBesidesFragments)) {
    l.unitsPerBlock = kUnitsPerBlock / 2;
    l.rowTiles = (gates + 1) / 2;
  }
  l.registerTiles = l.rowTiles;
  l.threads = l.rowTiles * l.slices * 32;
  l.blocks = hidden / l.unitsPerBlock;
  l.fragments = fragmentsFor(hidden / l.slices, Operands::TF32);
  if (l.blocks > kMaxBlocks ||
      !fitsRegisters(l.threads, hidden, kRegistersBesidesFragments))
    return Layout{};
  stageMostRows(l, 4);
  l.valid = l.maxBatch > 0;
  return l;
}

/// The 16-bit backward's layout in two K parts, for a recurrence whose
/// one-part layout does not fit (the LSTM's from H = 960: its 16 slices'
/// lanes need more than 128 registers, and 32 staged rows of 4·H gate
/// gradients more than the shared memory): 2G slices (256 threads for the
/// LSTM), each holding H / 2 inputs, a quarter in each part, as H / 8
/// fragment registers; per step the product stages the first half of the
/// rows' columns, multiplies it, then the second half into the same
/// buffer.
constexpr Layout backwardInParts(int gates, int hidden) {
  Layout l{};
  l.unitsPerBlock = kUnitsPerBlock;
  l.rowTiles = l.registerTiles = 1;
  l.parts = 2;
  l.slices = 2 * gates;
  l.stagedWidth = gates * hidden;
  l.threads = l.slices * 32;
  l.blocks = hidden / kUnitsPerBlock;
  l.fragments = fragmentsFor(l.stagedWidth / l.slices, Operands::BF16);
  int lane = l.fragments + kBackwardRegistersBesidesFragments;
  if (lane > kThreadRegisters || l.threads * lane > kRegisters)
    return Layout{};
  stageMostRows(l, 2);
  l.valid = l.maxBatch > 0;
  return l;
}

/// The layout of a recurrence of `gates` gates and H = `hidden` (a multiple
/// of 64 in [kMinHidden, kMaxHidden]) multiplying `operands`; not `valid`
/// where the library has none (a TF32 backward, or weights that do not fit).
constexpr Layout layoutFor(Direction direction, Operands operands, int gates,
                           int hidden) {
  Layout l{};
  if (gates < kMinGates || gates > kMaxGates || hidden % 64 != 0 ||
      hidden < kMinHidden || hidden > kMaxHidden)
    return l;
  bool forward = direction == Direction::Forward;
  if (operands == Operands::TF32)
    return forward ? tf32LayoutFor(gates, hidden) : l;
  l.unitsPerBlock = kUnitsPerBlock;
  l.parts = 1;
  l.rowTiles = forward ? gates : 1;
  l.slices = forward ? 4 : 4 * gates;
  l.stagedWidth = forward ? hidden : gates * hidden;
  l.fragments = fragmentsFor(l.stagedWidth / l.slices, Operands::BF16);
  int lane = l.fragments + (forward ? kRegistersBesidesFragments
                                    : kBackwardRegistersBesidesFragments);
  int tilesInRegisters = kRegisters / (l.slices * 32 * lane);
  l.registerTiles =
      l.rowTiles < tilesInRegisters ? l.rowTiles : tilesInRegisters;
  // One tile in shared memory, shared by the three register tiles' warps of
  // a slice (the H = 2048 LSTM's layout), and nothing else.
  if (l.registerTiles < 1 || (l.rowTiles > l.registerTiles &&
                              (l.rowTiles != 4 || l.registerTiles != 3)))
    return forward ? Layout{} : backwardInParts(gates, hidden);
  l.threads = l.registerTiles * l.slices * 32;
  l.blocks = hidden / kUnitsPerBlock;
  stageMostRows(l, 2);
  // The shared tile's warps split four batch tiles between them.
  l.valid = l.maxBatch > 0 && (l.rowTiles == l.registerTiles ||
                               l.maxBatch == kMaxBatchTiles * kBatchTile);
  return l;
}

/// The 16-row tile of `layout` that holds gate `gate`'s rows of a block (a
/// tile holds kTileRows / unitsPerBlock gates): a step of dependent stages
/// multiplies, for each stage, the tiles of its gates.
constexpr int tileOfGate(const Layout &layout, int gate) {
  return gate * layout.unitsPerBlock / kTileRows;
}

/// Registers a lane has besides its weight fragments in `layout`.
constexpr int spareRegisters(const Layout &layout) {
  if (!layout.threads)
    return 0;
  int lane = kRegisters / layout.threads;
  return (lane < kThreadRegisters ? lane : kThreadRegisters) - layout.fragments;
}
/// Where at least this many are spare, the library interleaves the batch
/// tiles' accumulator chains and the generated kernel prefetches also what
/// a step reads unchanged (biases), whose addresses then stay in registers.
/// Where fewer were (H = 2048: 42), both spilled (the LSTM's training
/// forward 128 bytes a lane, against 52 without either) and the forward
/// steps were slower. Fewer than 48 are left in the forward layouts of
/// H = 1984 and 2048 and the LSTM's of 1344 and 1408; every backward layout
/// leaves at least 72.
constexpr int kRoomyRegisters = 48;

/// The layout's H for a recurrence of `hidden` units: the next multiple of
/// 64. The units and inputs past `hidden` are padding (zero weights; the
/// generated kernel skips their elements).
constexpr long paddedHidden(long hidden) { return (hidden + 63) / 64 * 64; }

/// The smallest H that has a layout: the one padded to kMinHidden.
constexpr int kMinUnpaddedHidden = kMinHidden - 63;

/// Words of one row of the low-latency buffer: the staged vector's values,
/// one an 8-byte word for f32, two for 16-bit operands.
constexpr int lowLatencyRowWords(int width, Operands operands) {
  return width / (4 / operandBytes(operands));
}

/// The words a thread of `layout` (of H = `hidden`, `direction`) polls at
/// once in the low-latency exchange, in registers beside its fragments:
/// kLowLatencyWordsPerLane where a lane has more than 64 registers to spare,
/// 4 from kRoomyRegisters (8 spilled 8 bytes in the bf16 LSTM's training
/// forward at H = 1024, 64 spare), none below (the forward at H = 1984 and
/// 2048, whose lanes already spill) and none for the backward (whose rows
/// are G times wider).
constexpr int lowLatencyWordsPerLane(const Layout &layout, Direction direction,
                                     int hidden) {
  int spare = spareRegisters(layout);
  if (direction != Direction::Forward || !layout.valid)
    return 0;
  return spare > 64                 ? kLowLatencyWordsPerLane
         : spare >= kRoomyRegisters ? kLowLatencyWordsPerLane / 2
                                    : 0;
}

/// The most rows of a batch tile that exchange through the low-latency
/// buffer (0: none): at most kLowLatencyRows, and no more words of the row
/// than the threads poll. The generated host code allocates and zeroes the
/// buffer only for tiles of at most this many rows; the library decides by
/// the same rule.
constexpr int lowLatencyMaxRows(const Layout &layout, Direction direction,
                                Operands operands, int hidden) {
  int words = lowLatencyWordsPerLane(layout, direction, hidden) *
              layout.threads / lowLatencyRowWords(layout.stagedWidth, operands);
  return words < kLowLatencyRows ? words : kLowLatencyRows;
}
// The exchange completes the first batch tile's mbarrier only.
static_assert(kLowLatencyRows <= kBatchTile, "one batch tile");
static_assert(paddedHidden(kMinUnpaddedHidden) == kMinHidden &&
                  paddedHidden(kMinUnpaddedHidden - 1) < kMinHidden,
              "the smallest H padded to kMinHidden");

/// Whether the library has entry points for this recurrence (those of its
/// padded H).
constexpr bool hasEntryPoints(Direction direction, Operands operands,
                              long gates, long hidden) {
  return hidden > 0 && layoutFor(direction, operands, static_cast<int>(gates),
                                 static_cast<int>(paddedHidden(hidden)))
                           .valid;
}

/// The library's entry points as the generated kernels declare and call
/// them, checked against the library by rnn-compile before it links
/// (a call whose types differ from the definition would link, stay a call
/// and not inline): the entry's name after
/// rnn_persistent_{fwd,bwd}[_f16|_tf32]_g<G>_h<H>_ (or after rnn_persistent_
/// for the shared ones), its parameters and its result, 'i' an i32, 'p' a
/// pointer, 'f' an f32, 'v' none.
struct EntryPointSignature {
  const char *entry;
  const char *parameters;
  char result;
};
inline constexpr EntryPointSignature kEntryPointSignatures[] = {
    {"begin", "ppi", 'v'},      {"stage", "iippp", 'v'},
    {"multiply", "iipii", 'v'}, {"sum", "iii", 'f'},
    {"publish", "fiiip", 'v'},  {"release", "ppii", 'v'}};
inline constexpr EntryPointSignature kSharedEntryPointSignatures[] = {
    {"prefetch_l1", "p", 'v'}, {"tanh", "f", 'f'}};

static_assert(layoutFor(Direction::Forward, Operands::BF16, 4, 2048)
                      .sharedBytes == 230656,
              "as measured");
static_assert(layoutFor(Direction::Forward, Operands::BF16, 3, 2048)
                      .sharedBytes == 156672,
              "as measured");
static_assert(
    layoutFor(Direction::Forward, Operands::BF16, 4, 2048).threads == 384 &&
        layoutFor(Direction::Forward, Operands::BF16, 3, 2048).threads == 384,
    "as measured");
static_assert(
    layoutFor(Direction::Backward, Operands::BF16, 4, 768).valid &&
        layoutFor(Direction::Backward, Operands::BF16, 4, 768).maxBatch == 32,
    "FlashRNN's grid (H = 768, B = 16) fits");
static_assert(
    layoutFor(Direction::Backward, Operands::BF16, 4, 1024).parts == 2 &&
        layoutFor(Direction::Backward, Operands::BF16, 4, 1024).threads ==
            256 &&
        layoutFor(Direction::Backward, Operands::BF16, 4, 1024).maxBatch == 32,
    "the LSTM's backward at `medium` (H = 1024, B = 64) in two 32-row tiles");
static_assert(!layoutFor(Direction::Backward, Operands::BF16, 4, 1472).valid,
              "the LSTM's backward to H = 1408");
static_assert(layoutFor(Direction::Forward, Operands::TF32, 4, 1024).valid &&
                  layoutFor(Direction::Forward, Operands::TF32, 4, 1024)
                          .unitsPerBlock == 8 &&
                  !layoutFor(Direction::Forward, Operands::TF32, 4, 1088).valid,
              "the f32 LSTM's weights over 128 SMs up to H = 1024");
static_assert(layoutFor(Direction::Forward, Operands::TF32, 1, 2048).valid &&
                  layoutFor(Direction::Forward, Operands::TF32, 1, 2048)
                          .unitsPerBlock == 16,
              "the f32 vanilla RNN up to H = 2048");

} // namespace rnn::persistent

#ifndef __CUDA__
#include <string>

namespace rnn::persistent {

/// The name of entry point `entry` (kEntryPointSignatures) of the layout of
/// (`direction`, `operands`, `gates`, `hidden`):
/// rnn_persistent_{fwd,bwd}[_f16|_tf32]_g<G>_h<H>_<entry> (bf16 without a
/// suffix). Host code only: the compiler's declarations and its check of the
/// library.
inline std::string entryPointName(Direction direction, Operands operands,
                                  long gates, long hidden, const char *entry) {
  const char *suffix = operands == Operands::F16    ? "_f16"
                       : operands == Operands::TF32 ? "_tf32"
                                                    : "";
  return std::string("rnn_persistent_") +
         (direction == Direction::Forward ? "fwd" : "bwd") + suffix + "_g" +
         std::to_string(gates) + "_h" + std::to_string(hidden) + "_" + entry;
}

} // namespace rnn::persistent
#endif

/// The hidden sizes with entry points, for the library's instantiations.
// clang-format off
#define RNN_PERSISTENT_FOR_EACH_HIDDEN(X)                                      \
  X(512) X(576) X(640) X(704) X(768) X(832) X(896) X(960) X(1024) X(1088)      \
  X(1152) X(1216) X(1280) X(1344) X(1408) X(1472) X(1536) X(1600) X(1664)      \
  X(1728) X(1792) X(1856) X(1920) X(1984) X(2048)
// clang-format on

#endif // RNN_DEVICELIBRARY_PERSISTENTRECURRENCE_H
