//===- GraphTuning.cpp - Choosing how a call's graph runs -----------------===//
//
// No one cuBLAS workspace size, and neither early launch nor stream order,
// is best for every model (CallState.h, docs/cuda.md), nor is cuBLAS's pick
// of algorithm always the fastest for the per-step GEMMs (LtCandidates.h).
// So a call's graph is captured once per variant, the variants are replayed
// in alternation and timed, and the first, in order of preference, about as
// fast as the fastest is kept (tunedCall in GraphCapture.h).
//
//===----------------------------------------------------------------------===//

#include "GraphCapture.h"

#include "CallState.h"
#include "CudaErrors.h"
#include "LtCandidates.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace rnn::cuda;

namespace {

/// Timed replays per variant when tuning: one to warm up, then this many in
/// alternation (the median counts); calls slower than kTuningMaxCallMs are
/// not tuned (the replays would cost too much).
constexpr int kTuningRounds = 5;
constexpr float kTuningMaxCallMs = 20;

/// One captured graph of a call and its timed replays.
struct Variant {
  bool overlap;
  size_t mib;
  int candidate; // cuBLASLt candidate of the per-step GEMMs (-1: cuBLAS's).
  CUgraphExec exec;
  std::vector<float> ms;
};

float medianMs(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0f : ms[ms.size() / 2];
}

/// Replays `variants` in alternation: one round to warm up, then
/// kTuningRounds timed ones. False when a replay failed (recorded) or the
/// first replay of one took longer than kTuningMaxCallMs (then not all have
/// kTuningRounds times).
bool timeInAlternation(CUstream stream,
                       const std::vector<Variant *> &variants) {
  CUevent start = nullptr, end = nullptr;
  bool timed =
      check(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate") &&
      check(cuEventCreate(&end, CU_EVENT_DEFAULT), "cuEventCreate");
  bool complete = timed;
  for (int round = 0; timed && complete && round <= kTuningRounds; ++round) {
    for (Variant *v : variants) {
      float ms = 0;
      timed = check(cuEventRecord(start, stream), "cuEventRecord") &&
              check(cuGraphLaunch(v->exec, stream), "cuGraphLaunch") &&
              check(cuEventRecord(end, stream), "cuEventRecord") &&
              check(cuEventSynchronize(end), "cuEventSynchronize") &&
              check(cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime");
      if (!timed)
        break;
      if (round == 0 && ms > kTuningMaxCallMs) {
        complete = false; // A slow call: no more replays.
        break;
      }
      if (round > 0)
        v->ms.push_back(ms);
    }
  }
  if (start)
    cuEventDestroy(start);
  if (end)
    cuEventDestroy(end);
  return timed && complete;
}

/// The first of `variants` (in their order of preference) whose median is
/// within kTuningTolerance of the fastest.
Variant *firstAboutAsFast(const std::vector<Variant *> &variants) {
  float fastest = medianMs(variants.front()->ms);
  for (Variant *v : variants)
    fastest = std::min(fastest, medianMs(v->ms));
  return *std::find_if(variants.begin(), variants.end(), [&](Variant *v) {
    return medianMs(v->ms) <= fastest * kTuningTolerance;
  });
}

} // namespace

CUgraphExec rnn::cuda::tunedCall(CUstream stream, void (*call)(void **),
                                 void **descriptors, const std::string &label) {
  std::vector<Variant> variants;
  // Filled in the order of preference below; never reallocated after.
  variants.reserve(2 * std::size(kTunedWorkspacesMiB) +
                   rnn::cuda::kLtCandidates);
  auto destroyAllBut = [&](CUgraphExec kept) {
    for (Variant &v : variants)
      if (v.exec != kept)
        cuGraphExecDestroy(v.exec);
  };
  auto capture = [&](bool overlap, size_t mib, int candidate) {
    overlapThisCall = overlap;
    gemmCandidateThisCall = candidate;
    ltGemmsIssued = 0;
    CUgraphExec exec = captureCall(stream, call, descriptors, mib << 20, label);
    if (exec)
      variants.push_back({overlap, mib, candidate, exec, {}});
    return exec != nullptr;
  };
  // First early launch (unless turned off) and the workspace size, in the
  // order of preference: early launch, then the smaller workspace.
  const bool overlapAllowed = overlapThisCall;
  const int pinnedCandidate = gemmCandidateThisCall;
  bool captured = true;
  for (bool overlap : {true, false})
    for (size_t mib : kTunedWorkspacesMiB)
      if (captured && (overlapAllowed || !overlap))
        captured = capture(overlap, mib, pinnedCandidate);
  if (!captured) {
    overlapThisCall = overlapAllowed;
    gemmCandidateThisCall = pinnedCandidate;
    destroyAllBut(nullptr);
    return nullptr;
  }
  std::vector<Variant *> first;
  for (Variant &v : variants)
    first.push_back(&v);
  // Unless every variant was timed (no failure, not a slow call), the first
  // variant (early launch where allowed, cuBLAS's own workspace); else the
  // first in the order of preference that is about as fast as the fastest
  // (a workspace's memory is the call's for its duration).
  Variant *best = &variants.front();
  bool timed = timeInAlternation(stream, first);
  if (timed)
    best = firstAboutAsFast(first);
  // Then the per-step GEMMs' algorithm, cuBLAS's own pick preferred.
  // A candidate that fails to capture (cuBLASLt refusing its algorithm)
  // ends this stage without failing the call: its error is dropped and the
  // graphs captured so far compete.
  std::vector<Variant *> second{best};
  if (timed && pinnedCandidateThisCall == kTunedCandidate) {
    for (int candidate = 0; candidate < rnn::cuda::kLtCandidates; ++candidate) {
      if (!capture(best->overlap, best->mib, candidate)) {
        clearError();
        break;
      }
      // No per-step GEMM had this candidate (nor will it have the next):
      // the graph is the one with cuBLAS's pick.
      if (ltGemmsIssued == 0) {
        cuGraphExecDestroy(variants.back().exec);
        variants.pop_back();
        break;
      }
      second.push_back(&variants.back());
    }
    if (second.size() > 1) {
      best->ms.clear();
      if (timeInAlternation(stream, second))
        best = firstAboutAsFast(second);
    }
  }
  overlapThisCall = overlapAllowed;
  gemmCandidateThisCall = pinnedCandidate;
  workspaceBytesThisCall = 0;
  if (const char *dir = graphDumpDir()) {
    auto describe = [](const Variant &v) {
      std::string text = v.overlap ? "early launch" : "stream order";
      text += ", workspace " + std::to_string(v.mib) + " MiB";
      if (v.candidate >= 0)
        text += ", per-step GEMMs on cuBLASLt candidate " +
                std::to_string(v.candidate);
      return text;
    };
    std::string line = "tuned " + label + ":";
    for (Variant &v : variants) {
      char ms[32];
      std::snprintf(ms, sizeof(ms), " %.4f ms;", medianMs(v.ms));
      line += " " + describe(v) + ms;
    }
    appendGraphLog(dir, line + " kept " + describe(*best));
  }
  CUgraphExec kept = best->exec;
  destroyAllBut(kept);
  // The other variants' graph memory goes back to the device.
  CUdevice device;
  if (cuCtxGetDevice(&device) == CUDA_SUCCESS)
    cuDeviceGraphMemTrim(device);
  if (!threadError.empty()) {
    cuGraphExecDestroy(kept);
    return nullptr;
  }
  return kept;
}
