//! Accuracy of the CPU reference's math against libm, in ulps of f32, on
//! both code paths: tiles (SIMD or per-lane helpers) and scalars. The
//! reference is the f64 function rounded to f32 (glibc's f64 functions, or
//! the `libm` crate for erf, are far more accurate than an f32 ulp).
//! The limits asserted here are the documented accuracy.

mod hand_ir;

use hand_ir::{vec_t, Builder};
use pk_lang::ir::*;
use pk_runtime::cpu::HostArray;

/// Distance in ulps between two f32 (0 when both are NaN).
fn ulps(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    if a == 0.0 && b == 0.0 && a.is_sign_negative() != b.is_sign_negative() {
        return u64::MAX;
    }
    let key = |x: f32| {
        let m = i64::from(x.to_bits() & 0x7FFF_FFFF);
        if x.is_sign_negative() {
            -m
        } else {
            m
        }
    };
    (key(a) - key(b)).unsigned_abs()
}

/// `y = op(x)` on a whole tile, and the same element by element with
/// scalar loads in a `for` loop.
fn kernels(op: UnaryOp, n: i64) -> (pk_runtime::cpu::CpuKernel, pk_runtime::cpu::CpuKernel) {
    let mut b = Builder::new(&[]);
    let x = b.operand("x", Role::Input, DType::F32, &[n]);
    let y = b.operand("y", Role::Output, DType::F32, &[n]);
    let e = b.entry;
    let v = b.load_all(e, x);
    let r = b.push1(e, OpKind::Unary(op, v), vec_t(DType::F32, &[n]));
    b.store_all(e, y, r);
    let tile = b.build();

    let mut b = Builder::new(&[]);
    let x = b.operand("x", Role::Input, DType::F32, &[n]);
    let y = b.operand("y", Role::Output, DType::F32, &[n]);
    let e = b.entry;
    let i32t = Type::Scalar(DType::I32);
    let f32t = Type::Scalar(DType::F32);
    let lo = b.konst(e, Literal::Int(0), i32t.clone());
    let hi = b.konst(e, Literal::Int(n), i32t.clone());
    let body = b.k.body.new_block(&[i32t]);
    let iv = b.k.body.blocks[body].params[0];
    let at = |iv| vec![Slice::Index(Start::Dyn(iv))];
    let s = b.push1(
        body,
        OpKind::Load(RefView {
            target: x,
            index: at(iv),
        }),
        f32t.clone(),
    );
    let r = b.push1(body, OpKind::Unary(op, s), f32t);
    b.push0(
        body,
        OpKind::Store(
            RefView {
                target: y,
                index: at(iv),
            },
            r,
            None,
        ),
    );
    b.push0(
        e,
        OpKind::For {
            lo,
            hi,
            step: 1,
            inits: vec![],
            body,
        },
    );
    (tile, b.build())
}

/// Inputs: a dense sweep of `[lo, hi]` plus every `stride`-th f32 bit
/// pattern of that range's sign, plus special values.
fn inputs(lo: f32, hi: f32, n: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..n)
        .map(|i| lo + (hi - lo) * (i as f32) / (n as f32 - 1.0))
        .collect();
    let (a, b) = (lo.min(0.0).abs().to_bits(), hi.max(0.0).to_bits());
    for bits in (0..b).step_by((b as usize / n).max(1)) {
        v.push(f32::from_bits(bits));
    }
    for bits in (0..a).step_by((a as usize / n).max(1)) {
        v.push(-f32::from_bits(bits));
    }
    v.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        1e-45,
    ]);
    v
}

struct Case {
    op: UnaryOp,
    lo: f32,
    hi: f32,
    reference: fn(f64) -> f64,
    max_ulps: u64,
}

fn measure(c: &Case) -> (u64, u64) {
    let xs = inputs(c.lo, c.hi, 100_000);
    let n = xs.len() as i64;
    let (tile, scalar) = kernels(c.op, n);
    let mut worst = [(0u64, 0.0f32); 2];
    for (p, k) in [&tile, &scalar].iter().enumerate() {
        let y = hand_ir::run(k, vec![HostArray::from_f32(&[n as usize], &xs)])[0].to_f32();
        for (&x, &got) in xs.iter().zip(&y) {
            // Inputs outside the swept range (the bit-pattern sweep covers
            // the whole sign) are checked only for the range asked for.
            if !(x.is_nan() || x.is_infinite() || (c.lo..=c.hi).contains(&x)) {
                continue;
            }
            let want = (c.reference)(f64::from(x)) as f32;
            let u = ulps(got, want);
            if u > worst[p].0 {
                worst[p] = (u, x);
            }
        }
    }
    eprintln!(
        "{:?}: max {} ulp on tiles (x = {:e}), {} ulp on scalars (x = {:e})",
        c.op, worst[0].0, worst[0].1, worst[1].0, worst[1].1
    );
    (worst[0].0, worst[1].0)
}

fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[test]
fn transcendentals_within_documented_ulps() {
    let cases = [
        Case {
            op: UnaryOp::Exp,
            lo: -110.0,
            hi: 95.0,
            reference: f64::exp,
            max_ulps: 1,
        },
        Case {
            op: UnaryOp::Exp2,
            lo: -160.0,
            hi: 130.0,
            reference: f64::exp2,
            max_ulps: 1,
        },
        Case {
            op: UnaryOp::Log,
            lo: 0.0,
            hi: f32::MAX,
            reference: f64::ln,
            max_ulps: 1,
        },
        Case {
            op: UnaryOp::Log1p,
            lo: -1.0,
            hi: f32::MAX,
            reference: f64::ln_1p,
            max_ulps: 1,
        },
        Case {
            op: UnaryOp::Tanh,
            lo: -20.0,
            hi: 20.0,
            reference: f64::tanh,
            max_ulps: 1,
        },
        Case {
            op: UnaryOp::Logistic,
            lo: -110.0,
            hi: 110.0,
            reference: logistic,
            max_ulps: 2,
        },
        Case {
            op: UnaryOp::Sin,
            lo: -1e4,
            hi: 1e4,
            reference: f64::sin,
            max_ulps: 1,
        },
        Case {
            op: UnaryOp::Cos,
            lo: -1e4,
            hi: 1e4,
            reference: f64::cos,
            max_ulps: 1,
        },
        Case {
            op: UnaryOp::Erf,
            lo: -6.0,
            hi: 6.0,
            reference: libm::erf,
            max_ulps: 1,
        },
        Case {
            op: UnaryOp::Sqrt,
            lo: 0.0,
            hi: f32::MAX,
            reference: f64::sqrt,
            max_ulps: 0,
        },
        Case {
            op: UnaryOp::Rsqrt,
            lo: 0.0,
            hi: f32::MAX,
            reference: |x| 1.0 / x.sqrt(),
            max_ulps: 1,
        },
    ];
    let mut failures = Vec::new();
    for c in &cases {
        let (t, s) = measure(c);
        if t > c.max_ulps || s > c.max_ulps {
            failures.push(format!("{:?}: {t}/{s} ulp > {}", c.op, c.max_ulps));
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
}

#[test]
fn sin_cos_large_arguments() {
    // Reduction modulo pi/2 is exact up to 2^28 pi/2 (musl's medium path).
    let c = Case {
        op: UnaryOp::Sin,
        lo: -4.0e8,
        hi: 4.0e8,
        reference: f64::sin,
        max_ulps: 1,
    };
    let (t, s) = measure(&c);
    assert!(t <= 1 && s <= 1);
}
