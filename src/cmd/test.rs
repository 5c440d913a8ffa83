//! `pkc test FILE --in NAME=PATH... --expect NAME=PATH... [--rtol R]
//! [--atol A] [--device cpu|tpu]`: runs a kernel on the CPU reference (or
//! on this host's TPU, as `pkc run` does) and compares outputs
//! with expected arrays as `numpy.testing.assert_allclose` does:
//! `|actual - expected| <= atol + rtol * |expected|` elementwise, NaN equal
//! to NaN, infinities equal only to themselves. Expected files are checked
//! like inputs (the output's dtype and shape), before the kernel runs.
//! Exit 3 on any mismatch, distinct from the errors of the input (1).

use super::common::{one_stdin, reject_repeats, EXIT_ERRORS, EXIT_MISMATCH, EXIT_OK};
use super::cpu::{self, outln, parse_named, report_cpu, CpuArgs};
use super::device::{DeviceArgs, Kernel};
use super::ui;
use clap::Args as ClapArgs;
use std::path::PathBuf;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The .pk file, or a package directory built by `pkc build`.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// An input array: `--in x=x.npy`.
    #[arg(long = "in", value_name = "NAME=PATH", value_parser = parse_named)]
    pub inputs: Vec<(String, PathBuf)>,
    /// An expected output: `--expect z=z_expected.npy`.
    #[arg(long = "expect", value_name = "NAME=PATH", value_parser = parse_named, required = true)]
    pub expect: Vec<(String, PathBuf)>,
    /// Relative tolerance, a finite number >= 0 (numpy's default).
    #[arg(long, default_value_t = 1e-7, value_parser = parse_tolerance)]
    pub rtol: f64,
    /// Absolute tolerance, a finite number >= 0 (numpy's default).
    #[arg(long, default_value_t = 0.0, value_parser = parse_tolerance)]
    pub atol: f64,
    #[command(flatten)]
    pub device: DeviceArgs,
    #[command(flatten)]
    pub cpu: CpuArgs,
}

/// A tolerance: finite and not negative (a NaN tolerance would pass or
/// fail everything silently).
pub fn parse_tolerance(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(v) => Err(format!("a tolerance is a finite number >= 0, not {v}")),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

/// The comparison of one output.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub mismatched: usize,
    pub total: usize,
    pub max_abs: f64,
    pub max_rel: f64,
    /// Flat index of the worst violation (or of the largest error).
    pub worst: Option<usize>,
}

/// Compares like `assert_allclose` (with `equal_nan=True`).
#[cfg(test)]
pub fn compare(actual: &[f64], expected: &[f64], rtol: f64, atol: f64) -> Comparison {
    compare_by(
        actual.len().min(expected.len()),
        |i| actual[i],
        |i| expected[i],
        rtol,
        atol,
    )
}

/// [`compare`] over `n` elements read one at a time, so that arrays are
/// compared in their own dtype with no f64 copy of either.
pub fn compare_by(
    n: usize,
    actual: impl Fn(usize) -> f64,
    expected: impl Fn(usize) -> f64,
    rtol: f64,
    atol: f64,
) -> Comparison {
    let mut c = Comparison {
        mismatched: 0,
        total: n,
        max_abs: 0.0,
        max_rel: 0.0,
        worst: None,
    };
    // The worst element: a mismatch before any match, then the largest
    // difference.
    let mut worst_key = (false, -1.0f64);
    for i in 0..n {
        let (a, e) = (actual(i), expected(i));
        let ok = if a.is_nan() || e.is_nan() {
            a.is_nan() && e.is_nan()
        } else if a.is_infinite() || e.is_infinite() {
            a == e
        } else {
            (a - e).abs() <= atol + rtol * e.abs()
        };
        let diff = if (a.is_nan() && e.is_nan()) || a == e {
            0.0
        } else {
            let d = (a - e).abs();
            if d.is_nan() {
                f64::INFINITY
            } else {
                d
            }
        };
        c.max_abs = c.max_abs.max(diff);
        if e != 0.0 && diff > 0.0 {
            c.max_rel = c.max_rel.max(diff / e.abs());
        }
        if !ok {
            c.mismatched += 1;
        }
        let key = (!ok, diff);
        if key > worst_key {
            worst_key = key;
            c.worst = Some(i);
        }
    }
    c
}

/// JSON has no NaN or infinity: those become `null`.
fn finite_or_null(v: f64) -> serde_json::Value {
    serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// The index of the element at a flat (C order) position.
fn unflatten(flat: usize, shape: &[u64]) -> Vec<u64> {
    let mut idx = Vec::with_capacity(shape.len());
    let mut r = flat as u64;
    for &d in shape.iter().rev() {
        idx.push(r % d.max(1));
        r /= d.max(1);
    }
    idx.reverse();
    idx
}

fn index_str(flat: usize, shape: &[u64]) -> String {
    let idx = unflatten(flat, shape);
    format!(
        "({})",
        idx.iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

pub fn run(a: Args) -> u8 {
    if let Err(code) = reject_repeats("--in", &a.inputs)
        .and_then(|()| reject_repeats("--expect", &a.expect))
        .and_then(|()| one_stdin(&[("--in", &a.inputs), ("--expect", &a.expect)]))
    {
        return code;
    }
    let kernel = match Kernel::load(&a.file, &a.cpu, &a.device) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let ops = kernel.operands();
    let outs = match cpu::output_indices(&ops, &a.expect) {
        Ok(o) => o,
        Err(e) => return report_cpu(&e),
    };
    let mut expected = Vec::new();
    for ((name, path), &oi) in a.expect.iter().zip(&outs) {
        let Some(info) = ops.outputs().nth(oi) else {
            return EXIT_ERRORS;
        };
        let checked = pk_runtime::cpu::read_operand(name, info.dtype, &info.shape, path);
        match checked {
            Ok(arr) => expected.push(arr),
            Err(e) => return report_cpu(&e),
        }
    }
    let inputs = match cpu::read_inputs(&ops, &a.inputs) {
        Ok(i) => i,
        Err(e) => return report_cpu(&e),
    };
    let spin = ui::spinner(format!("running `{}`", ops.kernel));
    let results = kernel.run(inputs);
    drop(spin);
    let results = match results {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut failed = false;
    for (((name, _), &oi), want) in a.expect.iter().zip(&outs).zip(&expected) {
        let got = &results[oi];
        let shape: Vec<u64> = got.shape.iter().map(|&d| d as u64).collect();
        // Element by element: neither array is copied to f64.
        let n = got.len().min(want.len());
        let c = compare_by(n, |i| got.get_f64(i), |i| want.get_f64(i), a.rtol, a.atol);
        let worst = c.worst.filter(|_| c.mismatched > 0);
        if ui::ui().json {
            ui::json_line(&serde_json::json!({
                "type": "comparison",
                "output": name,
                "ok": c.mismatched == 0,
                "mismatched": c.mismatched,
                "total": c.total,
                "rtol": a.rtol,
                "atol": a.atol,
                "max_abs_error": finite_or_null(c.max_abs),
                "max_rel_error": finite_or_null(c.max_rel),
                "worst": worst.map(|w| serde_json::json!({
                    "index": unflatten(w, &shape),
                    "got": finite_or_null(got.get_f64(w)),
                    "expected": finite_or_null(want.get_f64(w)),
                })),
            }));
        } else if c.mismatched > 0 || !ui::ui().quiet {
            let worst = worst
                .map(|w| {
                    format!(
                        " worst at {}: got {}, expected {}",
                        index_str(w, &shape),
                        got.get_f64(w),
                        want.get_f64(w)
                    )
                })
                .unwrap_or_default();
            let verdict = if c.mismatched == 0 { "ok" } else { "MISMATCH" };
            outln(&format!(
                "{name}: {verdict}: {}/{} elements outside rtol={:?} atol={:?}; max abs error {:.3e}, max rel error {:.3e};{worst}",
                c.mismatched, c.total, a.rtol, a.atol, c.max_abs, c.max_rel
            ));
        }
        failed |= c.mismatched > 0;
    }
    if failed {
        EXIT_MISMATCH
    } else {
        EXIT_OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_like_numpy() {
        let c = compare(
            &[1.0, 2.0, f64::NAN, f64::INFINITY],
            &[1.0, 2.0 + 1e-9, f64::NAN, f64::INFINITY],
            1e-7,
            0.0,
        );
        assert_eq!(c.mismatched, 0);
        let c = compare(&[1.0, 2.5, 3.0], &[1.0, 2.0, f64::NAN], 0.1, 0.0);
        assert_eq!(c.mismatched, 2);
        assert_eq!(c.worst, Some(2));
        assert_eq!(c.max_abs, f64::INFINITY);
        let c = compare(&[0.0, 1.5], &[0.0, 1.0], 0.0, 0.6);
        assert_eq!(c.mismatched, 0);
        assert!((c.max_rel - 0.5).abs() < 1e-12);
    }

    #[test]
    fn index_of_flat_position() {
        assert_eq!(index_str(7, &[2, 4]), "(1, 3)");
    }
}
