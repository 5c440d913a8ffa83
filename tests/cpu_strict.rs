//! Strictness of the CPU reference: each kernel under tests/cpu/strict/
//! breaks one rule and names the diagnostic it must produce in its header:
//!
//! ```text
//! // expect: PK1010 line 9       the code, and the .pk line in the message
//! // flags: check-uninit timeout  lowering / run options
//! // input ids: 0 0               input values (repeated to fill; default 0)
//! ```
//!
//! Every case runs on 1 and 2 threads and must fail the same way.

mod cpu_support;

use cpu_support::{root, try_build};
use miette::Diagnostic;
use pk_lang::ir::DType;
use pk_runtime::cpu::{HostArray, RunOptions};
use std::time::Duration;

struct Header {
    code: String,
    line: u32,
    flags: Vec<String>,
    inputs: Vec<(String, Vec<i64>)>,
}

fn header(text: &str) -> Header {
    let mut h = Header {
        code: String::new(),
        line: 0,
        flags: Vec::new(),
        inputs: Vec::new(),
    };
    for l in text.lines().take_while(|l| l.starts_with("//")) {
        if let Some(r) = l.strip_prefix("// expect: ") {
            let mut w = r.split_whitespace();
            h.code = w.next().unwrap_or_default().to_string();
            h.line = w.nth(1).and_then(|n| n.parse().ok()).unwrap_or(0);
        } else if let Some(r) = l.strip_prefix("// flags: ") {
            h.flags = r.split_whitespace().map(str::to_string).collect();
        } else if let Some(r) = l.strip_prefix("// input ") {
            if let Some((name, vals)) = r.split_once(':') {
                let v = vals
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                h.inputs.push((name.trim().to_string(), v));
            }
        }
    }
    h
}

fn fill(d: DType, shape: &[usize], vals: &[i64]) -> HostArray {
    let n: usize = shape.iter().product();
    let v: Vec<i64> = (0..n)
        .map(|i| {
            if vals.is_empty() {
                0
            } else {
                vals[i % vals.len()]
            }
        })
        .collect();
    match d {
        DType::F32 | DType::BF16 => {
            let f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            if d == DType::F32 {
                HostArray::from_f32(shape, &f)
            } else {
                HostArray::bf16_from_f32(shape, &f)
            }
        }
        _ => HostArray::from_ints(d, shape, &v),
    }
}

#[test]
fn strict_fixtures() {
    let dir = root().join("tests/cpu/strict");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/cpu/strict")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pk"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("fixture");
        let h = header(&text);
        let check_uninit = h.flags.iter().any(|x| x == "check-uninit");
        let k = match try_build(f, &[], check_uninit) {
            Ok(k) => k,
            Err(e) => {
                failures.push(format!("{}: does not build: {e}", f.display()));
                continue;
            }
        };
        let inputs: Vec<HostArray> = k
            .inputs()
            .map(|(i, o)| {
                let shape: Vec<usize> = o.shape.iter().map(|&d| d as usize).collect();
                let vals = h
                    .inputs
                    .iter()
                    .find(|(n, _)| *n == o.name)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                fill(k.dtype(i), &shape, &vals)
            })
            .collect();
        let mut seen = Vec::new();
        for threads in [1, 2] {
            let opts = RunOptions {
                threads,
                timeout: Some(Duration::from_millis(
                    if h.flags.iter().any(|x| x == "timeout") {
                        500
                    } else {
                        60_000
                    },
                )),
                ..RunOptions::default()
            };
            match k.run(inputs.clone(), &opts) {
                Ok(_) => failures.push(format!("{}: ran without error", f.display())),
                Err(e) => {
                    let code = e.code().map(|c| c.to_string()).unwrap_or_default();
                    let msg = e.to_string();
                    let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                    let at = format!("{name}:{}:", h.line);
                    if code != h.code || !msg.contains(&at) {
                        failures.push(format!(
                            "{}: expected {} at {at}, got {code}: {msg}",
                            f.display(),
                            h.code
                        ));
                    }
                    seen.push(msg);
                }
            }
        }
        if seen.len() == 2 && seen[0] != seen[1] {
            failures.push(format!(
                "{}: 1 and 2 threads report differently: {seen:?}",
                f.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Without `--check-uninit`, never-written memory reads as NaN.
#[test]
fn uninitialised_reads_are_nan() {
    for (file, rows) in [("uninit_scratch.pk", 0..8), ("padding.pk", 12..16)] {
        let k = try_build(&root().join("tests/cpu/strict").join(file), &[], false).expect("builds");
        let inputs: Vec<HostArray> = k
            .inputs()
            .map(|(i, o)| {
                let shape: Vec<usize> = o.shape.iter().map(|&d| d as usize).collect();
                fill(k.dtype(i), &shape, &[1])
            })
            .collect();
        let out = k.run(inputs, &RunOptions::default()).expect("runs");
        let y = out[0].to_f32();
        for (i, v) in y.iter().enumerate() {
            let row = i / 128;
            assert_eq!(v.is_nan(), rows.contains(&row), "{file}: element {i} = {v}");
        }
    }
}

/// Fuel stops a runaway loop too (deterministically).
#[test]
fn fuel_stops_runaway_loops() {
    let f = root().join("tests/cpu/strict/runaway.pk");
    let opts = pk_lang::Options {
        specialise: true,
        ..Default::default()
    };
    let m = pk_lang::Session::open(&f)
        .and_then(|s| s.check(&opts))
        .expect("compiles");
    let w =
        pk_lowering::wasm::lower(&m.kernels[0], &m.sources, &Default::default()).expect("lowers");
    let k = pk_runtime::cpu::CpuKernel::from_lowered(&w, true).expect("compiles");
    let x = HostArray::from_ints(DType::I32, &[8, 128], &[0]);
    let e = k
        .run(
            vec![x],
            &RunOptions {
                fuel: Some(10_000_000),
                timeout: None,
                ..RunOptions::default()
            },
        )
        .expect_err("runs out of fuel");
    assert_eq!(e.code().map(|c| c.to_string()).as_deref(), Some("PK1015"));
    assert!(
        e.to_string().contains("fuel") && e.to_string().contains("runaway.pk:8:"),
        "{e}"
    );
}

/// A copy never waited for is reported at the grid step that started it,
/// not at the step where the grid ended.
#[test]
fn an_unwaited_copy_names_the_step_that_started_it() {
    let k = try_build(&root().join("tests/cpu/dma_started_step.pk"), &[], false).expect("builds");
    let x = HostArray::from_f32(&[8, 128], &[0.0; 1024]);
    let e = k
        .run(vec![x], &RunOptions::default())
        .expect_err("never waited");
    let msg = e.to_string();
    assert_eq!(e.code().map(|c| c.to_string()).as_deref(), Some("PK1016"));
    assert!(msg.contains("dma_started_step.pk:9:"), "{msg}");
    assert!(msg.contains("(grid step (1))"), "{msg}");
    assert!(msg.contains("the grid ended at step (3)"), "{msg}");
}
