//! Kernels across devices on the CPU mesh (`pkc run`/`test --mesh N`): the
//! library's collectives against numpy's (tests/data/mesh/cases.json,
//! written by tests/gen_mesh.py) on 2, 4 and 8 devices, f32 and bf16, with
//! the arrays of all devices stacked on a leading dimension.

mod common;

use common::{code, codes_in, pkc, root, stderr};

fn params(c: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in c["params"].as_object().expect("params") {
        out.push("-p".into());
        out.push(format!(
            "{k}={}",
            v.as_str().map_or_else(|| v.to_string(), str::to_string)
        ));
    }
    out
}

fn named(c: &serde_json::Value, key: &str, flag: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in c[key].as_object().expect("operands") {
        out.push(flag.into());
        out.push(format!("{k}={}", v.as_str().expect("a path")));
    }
    out
}

#[test]
fn the_collectives_match_numpy_on_2_4_and_8_devices() {
    let text = std::fs::read_to_string(root().join("tests/data/mesh/cases.json")).expect("cases");
    let cases: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let cases = cases.as_array().expect("a list");
    assert!(cases.len() >= 12);
    for c in cases {
        let name = c["name"].as_str().unwrap_or_default();
        let mut args: Vec<String> = vec![
            "test".into(),
            c["kernel"].as_str().expect("kernel").into(),
            "--mesh".into(),
            c["mesh"].as_str().expect("mesh").into(),
            "--rtol".into(),
            "0".into(),
        ];
        args.extend(params(c));
        args.extend(named(c, "inputs", "--in"));
        args.extend(named(c, "expected", "--expect"));
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = pkc(&a);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
    }
}

#[test]
fn random_schedules_give_the_same_result() {
    let o = pkc(&[
        "test",
        "kernels/all_gather.pk",
        "--mesh",
        "4",
        "--schedules",
        "20",
        "--seed",
        "7",
        "--rtol",
        "0",
        "--in",
        "x=tests/data/mesh/all_gather_f32_n4/x.npy",
        "--expect",
        "y=tests/data/mesh/all_gather_f32_n4/y_expected.npy",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn a_2x2_mesh_stacks_arrays_on_two_leading_dimensions() {
    // ppermute's ring as a 2x2 mesh is refused (its mesh has one axis),
    // and a kernel without --mesh says how to run it.
    let o = pkc(&[
        "run",
        "kernels/ppermute.pk",
        "--mesh",
        "2x2",
        "--in",
        "x=tests/data/mesh/ppermute_f32_n4_shift1/x.npy",
    ]);
    assert_eq!(codes_in(&stderr(&o)), ["PK1046"], "{}", stderr(&o));
    let o = pkc(&[
        "run",
        "kernels/ppermute.pk",
        "--in",
        "x=tests/data/mesh/ppermute_f32_n4_shift1/x.npy",
    ]);
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK1004"], "{err}");
}

mod cpu_support;

use miette::Diagnostic;
use pk_runtime::cpu::mesh::Order;
use pk_runtime::cpu::{HostArray, RunOptions};
use std::sync::Arc;
use std::time::Duration;

/// The `// expect: CODE line N` header of a fixture.
fn expected(text: &str) -> (String, usize) {
    let l = text.lines().next().unwrap_or_default();
    let r = l.strip_prefix("// expect: ").expect("an expect header");
    let mut w = r.split_whitespace();
    let code = w.next().unwrap_or_default().to_string();
    let line = w.nth(1).and_then(|n| n.parse().ok()).unwrap_or(0);
    (code, line)
}

/// Runs a fixture on its mesh with zero inputs.
fn run_fixture(k: &pk_runtime::cpu::CpuKernel, order: Order) -> Result<(), pk_runtime::cpu::Error> {
    let n = k.manifest().devices() as usize;
    let inputs: Vec<Vec<Arc<HostArray>>> = (0..n)
        .map(|_| {
            k.inputs()
                .map(|(_, o)| {
                    let shape: Vec<usize> = o.shape.iter().map(|&d| d as usize).collect();
                    let count = shape.iter().product();
                    Arc::new(HostArray::from_f32(&shape, &vec![0.0; count]))
                })
                .collect()
        })
        .collect();
    let opts = RunOptions {
        timeout: Some(Duration::from_secs(60)),
        ..RunOptions::default()
    };
    k.run_mesh(&inputs, &opts, order).map(|_| ())
}

/// The broken collectives of tests/cpu/mesh: each fails with its code and
/// a label at its line under the fixed schedule, and fails (never hangs)
/// under random ones.
#[test]
fn broken_collectives_are_reported_never_hang() {
    let dir = root().join("tests/cpu/mesh");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/cpu/mesh")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pk"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("fixture");
        let (want, line) = expected(&text);
        let k = cpu_support::try_build(f, &[], false).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        match run_fixture(&k, Order::Fixed) {
            Ok(()) => failures.push(format!("{}: ran without error", f.display())),
            Err(e) => {
                let code = e.code().map(|c| c.to_string()).unwrap_or_default();
                let lines: Vec<usize> = e
                    .labels()
                    .into_iter()
                    .flatten()
                    .map(|l| text[..l.offset()].matches('\n').count() + 1)
                    .collect();
                if code != want || !lines.contains(&line) {
                    failures.push(format!(
                        "{}: expected {want} with a label on line {line}, got {code} on lines {lines:?}: {e}",
                        f.display()
                    ));
                }
            }
        }
        for seed in 0..8 {
            match run_fixture(&k, Order::Random(seed)) {
                Ok(()) => failures.push(format!("{}: seed {seed} ran without error", f.display())),
                Err(e) => {
                    let code = e.code().map(|c| c.to_string()).unwrap_or_default();
                    if !code.starts_with("PK104") {
                        failures.push(format!("{}: seed {seed}: {code}: {e}", f.display()));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A deadlock names every device's blocked wait.
#[test]
fn a_deadlock_lists_every_devices_wait() {
    let path = root().join("tests/cpu/mesh/wrong_semaphore.pk");
    let k = cpu_support::try_build(&path, &[], false).expect("builds");
    let e = run_fixture(&k, Order::Fixed).expect_err("deadlocks");
    let msg = e.to_string();
    for d in 0..4 {
        assert!(
            msg.contains(&format!(
                "device {d} waits at {}:12:5: `remote_wait_recv` of `x` -> `y`, `send` holds 0, needs 4096",
                path.display()
            )),
            "{msg}"
        );
    }
}
