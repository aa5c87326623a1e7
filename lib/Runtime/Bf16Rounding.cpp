//===- Bf16Rounding.cpp - f32 to bf16 rounding that compiled code calls ---===//
//
// x86 has no instruction that rounds f32 to bf16 before AVX-512 BF16 or
// AVX-NE-CONVERT, so where a compiled CPU model keeps a bf16 value in a
// register (a select or a loop-carried bf16), LLVM rounds it by calling the
// compiler builtin __truncsfbf2. GCC 12's libgcc (Debian 12's) does not have
// it, and a model calling it would not load; the runtime, which every model
// links, provides it: round to nearest, ties to even, NaN kept quiet with
// its sign.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstring>

extern "C" __attribute__((visibility("default"))) __bf16
__truncsfbf2(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  uint16_t rounded;
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    rounded = static_cast<uint16_t>((bits >> 16) | 0x0040u);
  else
    rounded =
        static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  __bf16 result;
  std::memcpy(&result, &rounded, sizeof result);
  return result;
}
