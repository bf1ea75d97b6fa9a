// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Float functions that give the same bits on every platform.
//
// Stoker promises the same batches everywhere, but libm's transcendental functions are not
// correctly rounded and differ between releases (glibc 2.36 and 2.41 disagree on 2.5% of a
// float32 log1p column, by up to 240 ULP after a standardize). The functions here use only
// IEEE-754 basic operations (+ - * /, correctly rounded on every platform) and bit
// manipulation: no libm, no FMA, no long double. The engine is built with -ffp-contract=off
// (src/transform/CMakeLists.txt) so that no compiler fuses a * b + c, whatever -march says.
#pragma once

namespace stoker {

/// log(1 + x), within 0.63 ULP (measured: tests/cpp/transform/portable_math_test.cc), with libm's
/// special cases: -1 gives -inf, below -1 (and -inf) the positive quiet NaN, a NaN stays that NaN
/// (quieted), +inf gives +inf, +-0 and tiny x give x.
double PortableLog1p(double x);

/// log(1 + x) in float32: the float64 result rounded once to float, the correctly rounded
/// float for all but 7 of the 2^32 inputs (those 1 ULP off); the same special cases.
float PortableLog1p(float x);

}  // namespace stoker
