//! Masked stores on the CPU reference: the kernels of tests/in/ run with
//! results derived in the test from the kernels' documented meaning.

mod cpu_support;

use cpu_support::{build, threads};
use pk_lang::ir::DType;
use pk_runtime::cpu::HostArray;

/// What `tests/in/masked_store.pk` computes, element by element, for
/// inputs `x`, `y` of `[32, 256]` and lane bound `n`: `(o, p)`.
fn masked_store_reference(x: &[i64], y: &[i64], n: usize) -> (Vec<i64>, Vec<i64>) {
    const C: usize = 256;
    let mut o = y.to_vec();
    for r in 0..32 {
        for c in 0..n.min(C) {
            o[r * C + c] = x[r * C + c];
        }
    }
    let mut p = vec![0; 64 * C];
    for i in 0..2 {
        let (xb, pb) = (16 * i, 32 * i);
        for r in 0..16 {
            for c in 0..C {
                p[(pb + r) * C + c] = y[(xb + r) * C + c];
                p[(pb + 16 + r) * C + c] = y[(xb + r) * C + c];
            }
        }
        // Rows 8i..8i+8 of the block, where the row within them is >= 3.
        for rr in 3..8 {
            for c in 0..C {
                p[(pb + 8 * i + rr) * C + c] = x[(xb + rr) * C + c];
            }
        }
        for c in 0..64 {
            p[(pb + 3) * C + c] = x[(xb + 5) * C + c];
        }
        for c in 0..C {
            p[(pb + 31) * C + c] = x[(xb + 15) * C + c];
        }
    }
    (o, p)
}

fn run_masked_store(dtype: DType, params: &[(&str, &str)], n: usize) {
    let x: Vec<i64> = (0..32 * 256).map(|i| (i % 97) as i64 + 1).collect();
    let y: Vec<i64> = (0..32 * 256).map(|i| -((i % 89) as i64) - 1).collect();
    let k = build("tests/in/masked_store.pk", params);
    let arr = |v: &[i64]| match dtype {
        DType::F32 => {
            HostArray::from_f32(&[32, 256], &v.iter().map(|x| *x as f32).collect::<Vec<_>>())
        }
        _ => HostArray::from_ints(dtype, &[32, 256], v),
    };
    for t in [1, 2] {
        let out = k.run(vec![arr(&x), arr(&y)], &threads(t)).expect("runs");
        let (o, p) = masked_store_reference(&x, &y, n);
        let got = |a: &HostArray| -> Vec<i64> { a.to_f64().iter().map(|v| *v as i64).collect() };
        let (go, gp) = (got(&out[0]), got(&out[1]));
        for (i, (g, w)) in go.iter().zip(&o).enumerate() {
            assert_eq!(g, w, "{dtype} o[{}, {}] on {t} threads", i / 256, i % 256);
        }
        for (i, (g, w)) in gp.iter().zip(&p).enumerate() {
            assert_eq!(g, w, "{dtype} p[{}, {}] on {t} threads", i / 256, i % 256);
        }
    }
}

/// Lanes, rows and one dropped row of masked stores: masked-out elements
/// keep what the ref held (f32, lane bound 100).
#[test]
fn masked_store_keeps_masked_out_elements_f32() {
    run_masked_store(DType::F32, &[], 100);
}

/// The same with i32 elements and a lane bound inside the first vector
/// of four lanes.
#[test]
fn masked_store_keeps_masked_out_elements_i32() {
    run_masked_store(DType::I32, &[("T", "i32"), ("n", "7")], 7);
}
