// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "transform/portable_math.h"

#include <array>
#include <bit>
#include <cstdint>
#include <limits>

namespace stoker {

namespace {

constexpr int kMantissaBits = 52;
constexpr uint64_t kMantissaMask = (uint64_t{1} << kMantissaBits) - 1;
constexpr uint64_t kQuietBit = uint64_t{1} << (kMantissaBits - 1);
constexpr int kExponentBias = 1023;
constexpr uint32_t kFloatQuietBit = uint32_t{1} << 22;

// ln 2 split so that k * kLn2Hi is exact for every k below (-53 <= k <= 1024 takes 11 bits;
// kLn2Hi keeps 32 significant bits and 21 trailing zeros), and kLn2Lo carries the next 53
// bits. Their sum is ln 2 to about 2^-86.
constexpr double kLn2Hi = 0x1.62e42fee00000p-1;
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;

// sqrt(2)'s mantissa bits: a mantissa at or above it is halved (and k raised by one) so that
// the reduced argument m lies in [sqrt(2)/2, sqrt(2)), keeping |s| below 3 - 2 sqrt(2) = 0.1716.
constexpr uint64_t kSqrt2Mantissa = 0x6a09e667f3bcd;
// 1 + x already in that range: f = x exactly, with no rounding of 1 + x to correct for.
constexpr double kSqrt2Minus1 = 0x1.a827999fcef32p-2;        // 0.41421...
constexpr double kOneMinusHalfSqrt2 = 0x1.2bec333018867p-2;  // 0.29289...

// Below this, log1p(x) = x - x^2/2 + ... rounds to x (x^2/2 is under a quarter of x's ULP).
constexpr double kTiny = 0x1p-54;

// log(1 + f) = 2 atanh(s) with s = f / (2 + f) = 2s + s * R(s^2), where
// R(z) = z * (2/3 + z * (2/5 + z * (2/7 + ...))): the atanh Taylor series. With z <= 0.0295
// the first term left out, s z^13 * 2/27, is under 2^-70 of the result, far below its ULP.
constexpr std::array<double, 12> kAtanhTerms = {
    2.0 / 3,  2.0 / 5,  2.0 / 7,  2.0 / 9,  2.0 / 11, 2.0 / 13,
    2.0 / 15, 2.0 / 17, 2.0 / 19, 2.0 / 21, 2.0 / 23, 2.0 / 25,
};

// R(z), by Horner from the smallest term so each rounding is scaled down by the z after it.
double AtanhTail(double z) {
  double p = kAtanhTerms.back();
  for (auto it = kAtanhTerms.rbegin() + 1; it != kAtanhTerms.rend(); ++it) p = *it + z * p;
  return z * p;
}

// A value and the rounding error it left out: value + error is exact.
struct Exact {
  double value;
  double error;
};

// a + b exactly (Knuth's TwoSum: six operations, whatever the operands' magnitudes).
Exact TwoSum(double a, double b) {
  const double sum = a + b;
  const double b_part = sum - a;
  return {sum, (a - (sum - b_part)) + (b - b_part)};
}

// Splits a double into two halves of at most 26 bits (Veltkamp), whose products are exact.
constexpr double kSplitter = 0x1p27 + 1;

// a * a exactly (Dekker's product, the FMA-free way), for |a| < 1 and a * a not subnormal.
Exact Square(double a) {
  const double scaled = kSplitter * a;
  const double high = scaled - (scaled - a);
  const double low = a - high;
  const double square = a * a;
  return {square, ((high * high - square) + 2 * high * low) + low * low};
}

// The NaN with x's sign and payload and the quiet bit set, as x + x gives on x86 and ARM alike;
// computed from the bits so no platform's NaN propagation rule decides it.
double Quiet(double x) { return std::bit_cast<double>(std::bit_cast<uint64_t>(x) | kQuietBit); }
float Quiet(float x) { return std::bit_cast<float>(std::bit_cast<uint32_t>(x) | kFloatQuietBit); }

}  // namespace

double PortableLog1p(double x) {
  if (x != x) return Quiet(x);
  if (x <= -1) {
    // The NaN is the positive default one everywhere (x86's 0/0 would give a negative one).
    return x == -1 ? -std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::quiet_NaN();
  }
  if (x == std::numeric_limits<double>::infinity()) return x;
  // +-0, subnormals and tiny x: returned as they are, so no arithmetic on a subnormal can
  // meet a flush-to-zero mode.
  if (x < kTiny && x > -kTiny) return x;

  // 1 + x = 2^k * (1 + f) + c exactly, 1 + f in [sqrt(2)/2, sqrt(2)); then
  // log1p(x) = k ln2 + log(1 + f) + c / (1 + x), the last to first order (c / (1 + x) is under
  // 2^-53, so its square is far below the result's ULP).
  int k = 0;
  double f = x;
  double c = 0;
  if (x <= -kOneMinusHalfSqrt2 || x >= kSqrt2Minus1) {
    const double u = 1 + x;
    // The rounding error of 1 + x, exact by Fast2Sum (the larger operand subtracted first).
    c = x >= 1 ? 1 - (u - x) : x - (u - 1);
    c /= u;
    // u >= 2^-53 (x > -1 means x >= -1 + 2^-53), so u is normal: its exponent field and
    // mantissa give k and 1 + f.
    const uint64_t bits = std::bit_cast<uint64_t>(u);
    const uint64_t mantissa = bits & kMantissaMask;
    k = static_cast<int>(bits >> kMantissaBits) - kExponentBias;
    uint64_t exponent = kExponentBias;
    if (mantissa >= kSqrt2Mantissa) {
      ++k;
      --exponent;
    }
    // m - 1 is exact (Sterbenz: m is within a factor 2 of 1).
    f = std::bit_cast<double>(mantissa | (exponent << kMantissaBits)) - 1;
  }

  // log(1 + f) = f - s f + s R = f - f^2/2 + s (f^2/2 + R), since s f = f^2/2 - s f^2/2. So
  // log1p(x) = k ln2_hi + f - f^2/2 + t with t = s (f^2/2 + R) + k ln2_lo + c. The first three
  // are summed keeping every rounding error (they cancel in part near x = -0.3, where k = -1),
  // and t, the only term with errors of its own, is under 0.05 of the result: the result is
  // within about 0.6 ULP, half of it the final rounding.
  const double s = f / (2 + f);
  const Exact f2 = Square(f);
  const double half_f2 = 0.5 * f2.value;
  const double t = s * (half_f2 + AtanhTail(s * s)) + (k * kLn2Lo + c);
  const Exact a = TwoSum(k * kLn2Hi, f);
  const Exact b = TwoSum(a.value, -half_f2);
  const Exact d = TwoSum(b.value, t);
  return d.value + (((a.error + b.error) + d.error) - 0.5 * f2.error);
}

float PortableLog1p(float x) {
  // NaNs from the bits: a float NaN widened to double and narrowed back would depend on the
  // platform's conversion of signaling NaNs.
  if (x != x) return Quiet(x);
  if (x < -1) return std::numeric_limits<float>::quiet_NaN();
  // The double result is within 1 ULP of double, 2^-29 of a float ULP: one rounding to float
  // is then the correctly rounded float except where the exact value lies that close to a
  // midpoint between two floats.
  return static_cast<float>(PortableLog1p(static_cast<double>(x)));
}

}  // namespace stoker
