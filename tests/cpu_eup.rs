//! The `eup` host import (transcendentals over whole tiles) computes
//! exactly what the kernel's own Wasm SIMD computes for small tiles: the
//! same bits for every input, special values included.

mod cpu_support;

use cpu_support::{build, threads};
use pk_runtime::cpu::HostArray;

/// Inputs over every range the functions treat apart: NaN, infinities,
/// zeros, subnormals, the clamping bounds, the small-argument branches, and
/// a spread of ordinary values.
fn inputs(n: usize) -> Vec<f32> {
    let special = [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-45,
        -1e-45,
        1e-40,
        f32::MIN_POSITIVE,
        -104.5,
        -104.0,
        -88.7,
        88.7,
        89.0,
        89.5,
        -151.0,
        129.5,
        0.625,
        -0.625,
        2.4e-4,
        -2.5e-4,
        0.5,
        1.0,
        2.0,
        std::f32::consts::FRAC_1_SQRT_2,
        1e30,
        -1e30,
    ];
    let mut v: Vec<f32> = special.to_vec();
    // A deterministic spread of magnitudes and signs.
    let mut s = 0x2545_F491u32;
    while v.len() < n {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        let mag = (s % 4000) as f32 / 4000.0 * 60.0 - 30.0;
        let x = if s.is_multiple_of(3) { mag.exp() } else { mag };
        v.push(if s.is_multiple_of(2) { x } else { -x });
    }
    v.truncate(n);
    v
}

fn same_bits(a: &HostArray, b: &HostArray, what: &str) {
    let (x, y) = (a.to_f32(), b.to_f32());
    assert_eq!(x.len(), y.len());
    for (i, (p, q)) in x.iter().zip(&y).enumerate() {
        assert!(
            p.to_bits() == q.to_bits() || p.is_nan() && q.is_nan(),
            "{what}[{i}]: tile {p:e} ({:#x}), rows {q:e} ({:#x})",
            p.to_bits(),
            q.to_bits()
        );
    }
}

#[test]
fn whole_tiles_match_the_kernels_simd_bit_for_bit() {
    let k = build("tests/cpu/eup_tiles.pk", &[]);
    let x = HostArray::from_f32(&[8, 128], &inputs(8 * 128));
    let h = HostArray::bf16_from_f32(
        &[16, 128],
        &inputs(16 * 128)
            .iter()
            .map(|v| v * 0.37)
            .collect::<Vec<_>>(),
    );
    let out = k.run(vec![x, h], &threads(1)).expect("runs");
    let names = ["exp", "exp2", "log", "tanh", "logistic", "exp (bf16)"];
    for (j, name) in names.iter().enumerate() {
        same_bits(&out[2 * j], &out[2 * j + 1], name);
    }
    // The whole-tile results are the functions (not just consistent):
    // spot values against libm, within the documented 1-2 ulp.
    let e = out[0].to_f32();
    let xs = inputs(8 * 128);
    for (i, &v) in xs.iter().enumerate().filter(|(_, v)| v.abs() < 80.0) {
        let want = v.exp();
        let ulp = (e[i].to_bits() as i64 - want.to_bits() as i64).abs();
        assert!(ulp <= 1, "exp({v:e}) = {:e}, libm {want:e}", e[i]);
    }
}

#[test]
fn the_transcendental_unit_is_called_for_whole_tiles_only() {
    let w = cpu_support::lower("tests/cpu/eup_tiles.pk");
    let wat = pk_lowering::wasm::to_wat(&w.bytes).expect("prints");
    // Six whole-tile calls; the row loops compute in Wasm.
    assert_eq!(wat.matches("call $eup").count(), 6, "{wat}");
}
