//===- PersistentRecurrence.h - Shape of the persistent kernels -*- C++ -*-===//
//
// What the compiler (convert-step-loops-to-persistent-kernels) and the
// device library (lib/DeviceLibrary/PersistentRecurrence.cu) agree on: the
// launch shape, the batch sizes, the shared memory, and the (gates, hidden
// size) pairs the library has entry points for. Plain constexpr C++, so both
// the host compiler and clang's CUDA mode read it.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_DEVICELIBRARY_PERSISTENTRECURRENCE_H
#define RNN_DEVICELIBRARY_PERSISTENTRECURRENCE_H

namespace rnn::persistent {

/// Batch rows are staged and multiplied in tiles of 8 (the mma's n).
constexpr int kBatchTile = 8;
/// h_{t-1} is multicast to the blocks of a cluster of 2.
constexpr int kClusterSize = 2;
/// Rows of an mma tile of U (the mma's m).
constexpr int kTileRows = 16;
/// The most tiles of batch rows a layout stages (one mbarrier each).
constexpr int kMaxBatchTiles = 4;

/// How a recurrence is spread over the GPU: 128 blocks (one per SM of the
/// H100), each owning `unitsPerBlock` hidden units of every gate, i.e. the
/// rows gate * H + unit of U. A block's rows, gate-major, form 16-row mma
/// tiles; warp (tile, K quarter) holds its tile's rows over a quarter of K
/// in registers. At H = 2048 a block owns 16 units: a tile per gate, a
/// fourth gate's tile in shared memory. (8 units at H = 1024, a tile
/// spanning two gates, was correct and not faster on the H100:
/// docs/persistent-recurrences.md, "Open".)
struct Layout {
  int unitsPerBlock;
  int maxBatch;
};
constexpr Layout layoutFor(long /*hidden*/) { return Layout{16, 32}; }

/// Whether the library has entry points for `gates` gates of `hidden`
/// units: the GRU's 3 and the LSTM's 4 at H = 2048, the size measured
/// (docs/persistent-recurrences.md).
constexpr bool hasEntryPoints(long gates, long hidden) {
  return (gates == 3 || gates == 4) && hidden == 2048;
}

/// The block's 16-row tiles of U (the last one padded with zero rows).
constexpr int rowTiles(int gates, int hidden) {
  return (gates * layoutFor(hidden).unitsPerBlock + kTileRows - 1) / kTileRows;
}
/// Tiles held in registers: at most 3 (12 warps of 128 registers' worth of
/// fragments); a fourth stays in shared memory.
constexpr int registerTiles(int gates, int hidden) {
  return rowTiles(gates, hidden) < 3 ? rowTiles(gates, hidden) : 3;
}
constexpr int threadsPerBlock(int gates, int hidden) {
  return registerTiles(gates, hidden) * 4 * 32;
}
constexpr int blocks(int hidden) {
  return hidden / layoutFor(hidden).unitsPerBlock;
}

/// Bytes of one staged row of h (bf16), padded so that ldmatrix reads the
/// 8 rows of a tile from distinct banks.
constexpr int stagedRowBytes(int hidden) { return (hidden + 8) * 2; }
/// Floats per batch row of a K quarter's sums (odd: conflict-free reads).
constexpr int sumsRowFloats(int gates, int hidden) {
  return rowTiles(gates, hidden) * kTileRows + 1;
}
constexpr int stagedHBytes(int hidden) {
  return layoutFor(hidden).maxBatch * stagedRowBytes(hidden);
}
/// The tile kept in shared memory (when there is one) follows the staged h.
constexpr int extraTileBytes(int gates, int hidden) {
  return rowTiles(gates, hidden) > registerTiles(gates, hidden)
             ? kTileRows * stagedRowBytes(hidden)
             : 0;
}
constexpr int quarterSumsBytes(int gates, int hidden) {
  return 4 * layoutFor(hidden).maxBatch * sumsRowFloats(gates, hidden) * 4;
}
/// Dynamic shared memory of one block: staged h, the tile kept in shared
/// memory, the four K quarters' sums.
constexpr int sharedBytes(int gates, int hidden) {
  return stagedHBytes(hidden) + extraTileBytes(gates, hidden) +
         quarterSumsBytes(gates, hidden);
}

static_assert(sharedBytes(4, 2048) == 230656, "as measured");
static_assert(sharedBytes(3, 2048) == 156672, "as measured");
static_assert(layoutFor(2048).maxBatch / kBatchTile <= kMaxBatchTiles,
              "one mbarrier per batch tile");

} // namespace rnn::persistent

#endif // RNN_DEVICELIBRARY_PERSISTENTRECURRENCE_H
