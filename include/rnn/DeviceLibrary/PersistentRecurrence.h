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

/// Hidden units a block owns (of every gate): the 16 rows of an mma tile.
constexpr int kUnitsPerBlock = 16;
/// Batch rows are staged and multiplied in tiles of 8 (the mma's n), up to 4.
constexpr int kBatchTile = 8;
constexpr int kMaxBatch = 32;
/// 12 warps: warp (q, p) multiplies gate q's rows over the K quarter p.
constexpr int kThreadsPerBlock = 384;
/// h_{t-1} is multicast to the blocks of a cluster of 2.
constexpr int kClusterSize = 2;

/// Whether the library has entry points for `gates` gates of `hidden` units:
/// the GRU's 3 (all in registers) and the LSTM's 4 (the fourth in shared
/// memory) at H = 2048, the size measured (docs/persistent-recurrences.md).
constexpr bool hasEntryPoints(long gates, long hidden) {
  return (gates == 3 || gates == 4) && hidden == 2048;
}

/// Bytes of one staged row of h (bf16), padded so that ldmatrix reads the
/// 8 rows of a tile from distinct banks.
constexpr int stagedRowBytes(int hidden) { return (hidden + 8) * 2; }
/// Floats per batch row of a K quarter's sums (odd: conflict-free reads).
constexpr int sumsRowFloats(int gates) { return gates * kUnitsPerBlock + 1; }
constexpr int stagedHBytes(int hidden) {
  return kMaxBatch * stagedRowBytes(hidden);
}
/// The fourth gate's rows (when there is one) follow the staged h.
constexpr int extraGateBytes(int gates, int hidden) {
  return gates == 4 ? kUnitsPerBlock * stagedRowBytes(hidden) : 0;
}
constexpr int quarterSumsBytes(int gates) {
  return 4 * kMaxBatch * sumsRowFloats(gates) * 4;
}
/// Dynamic shared memory of one block: staged h, the fourth gate's rows,
/// the four K quarters' sums.
constexpr int sharedBytes(int gates, int hidden) {
  return stagedHBytes(hidden) + extraGateBytes(gates, hidden) +
         quarterSumsBytes(gates);
}

} // namespace rnn::persistent

#endif // RNN_DEVICELIBRARY_PERSISTENTRECURRENCE_H
