//! The constants of the single-precision transcendentals on tiles: Cephes
//! minimax polynomials (highest degree first) and range-reduction
//! constants. The kernel's four-lane Wasm helpers and the runtime's
//! transcendental unit (the `eup` import) both compute from these, step
//! for step, so that the two give the same bits.

/// exp: inputs are clamped to this range (below, the result underflows to
/// 0; above, it overflows to inf).
pub const EXP_RANGE: (f32, f32) = (-104.0, 89.0);
/// ln 2 in two parts: `n * LN2_HI` is exact for the `n` that occur.
pub const LN2_HI: f32 = 0.693_359_4;
pub const LN2_LO: f32 = -2.121_944_4e-4;
/// e^r - 1 - r = r^2 * EXP_POLY(r), |r| <= ln2/2.
pub const EXP_POLY: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    1.666_666_5e-1,
    0.5,
];

/// exp2: the clamping range.
pub const EXP2_RANGE: (f32, f32) = (-151.0, 129.0);
/// 2^r - 1 = r * EXP2_POLY(r), |r| <= 1/2.
pub const EXP2_POLY: [f32; 6] = [
    1.535_336_2e-4,
    1.339_887_4e-3,
    9.618_437e-3,
    5.550_332_5e-2,
    2.402_264_8e-1,
    6.931_472e-1,
];

/// ln(1 + m) = m - m^2/2 + m^3 * LOG_POLY(m), m in [sqrt(1/2) - 1, sqrt(2) - 1).
pub const LOG_POLY: [f32; 9] = [
    7.037_683_6e-2,
    -1.151_461e-1,
    1.167_699_9e-1,
    -1.242_014_1e-1,
    1.424_932_3e-1,
    -1.666_805_8e-1,
    2.000_071_4e-1,
    -2.499_999_4e-1,
    3.333_333e-1,
];

/// tanh x = x + x^3 * TANH_POLY(x^2) for |x| < TANH_SMALL; below
/// TANH_TINY, tanh x = x.
pub const TANH_POLY: [f32; 5] = [
    -5.704_988_7e-3,
    2.063_909e-2,
    -5.373_971_6e-2,
    1.333_144_2e-1,
    -3.333_328e-1,
];
pub const TANH_SMALL: f32 = 0.625;
pub const TANH_TINY: f32 = 2.441_406_3e-4;

/// 1.5 * 2^23: adding it to an f32 of magnitude below 2^22 leaves that
/// number rounded to a whole number (to nearest, ties to even) in the low
/// mantissa bits.
pub const ROUNDER: f32 = 12_582_912.0;
