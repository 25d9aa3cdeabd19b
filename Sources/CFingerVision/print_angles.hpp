// Angle helpers shared by print_extract.cpp and print_match.cpp (internal, not part of the C API).
#ifndef CVISION_PRINT_ANGLES_HPP
#define CVISION_PRINT_ANGLES_HPP

#include <cmath>

namespace cvis {

constexpr float kPi = 3.14159265358979f;
constexpr float kTwoPi = 2 * kPi;

inline float wrap2pi(float a) {
    a = std::fmod(a, kTwoPi);
    return a < 0 ? a + kTwoPi : a;
}
/// Signed difference a − b in (−π, π].
inline float angleDiff(float a, float b) {
    float d = std::fmod(a - b, kTwoPi);
    if (d <= -kPi) d += kTwoPi;
    if (d > kPi) d -= kTwoPi;
    return d;
}

} // namespace cvis

#endif
