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

/// The `pkc test` arguments of a case of cases.json, and its name.
fn case_args(c: &serde_json::Value) -> (String, Vec<String>) {
    let name = c["name"].as_str().unwrap_or_default().to_string();
    let mut args: Vec<String> = vec![
        "test".into(),
        c["kernel"].as_str().expect("kernel").into(),
        "--mesh".into(),
        c["mesh"].as_str().expect("mesh").into(),
        "--rtol".into(),
        c["rtol"].as_f64().unwrap_or(0.0).to_string(),
        "--atol".into(),
        c["atol"].as_f64().unwrap_or(0.0).to_string(),
    ];
    args.extend(params(c));
    args.extend(named(c, "inputs", "--in"));
    args.extend(named(c, "expected", "--expect"));
    (name, args)
}

fn cases() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(root().join("tests/data/mesh/cases.json")).expect("cases");
    let cases: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    cases.as_array().expect("a list").clone()
}

#[test]
fn the_collectives_match_numpy_on_2_4_and_8_devices() {
    let cases = cases();
    assert!(cases.len() >= 37);
    for c in &cases {
        let (name, args) = case_args(c);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = pkc(&a);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
    }
}

/// The devices running at once (`--parallel`, the order the Python
/// package's shard_map path uses) give numpy's results too.
#[test]
fn parallel_devices_match_numpy() {
    for c in &cases() {
        let (name, mut args) = case_args(c);
        args.push("--parallel".into());
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = pkc(&a);
        assert_eq!(code(&o), 0, "{name} --parallel: {}", stderr(&o));
    }
}

/// Every collective of the library gives the same result under 20 random
/// orders of the devices' progress and the copies' landing.
#[test]
fn random_schedules_give_the_same_result() {
    let cases = cases();
    for want in [
        "all_gather_f32_n4",
        "reduce_scatter_f32_n4",
        "all_reduce_bf16_n4",
        "all_reduce_f32_n2",
        "all_gather_matmul_f32_n4",
        "all_gather_matmul_bf16_n2",
        "matmul_reduce_scatter_f32_n4",
        "matmul_reduce_scatter_bf16_n8",
    ] {
        let c = cases
            .iter()
            .find(|c| c["name"] == want)
            .unwrap_or_else(|| panic!("case {want}"));
        let (name, mut args) = case_args(c);
        args.extend(["--schedules", "20", "--seed", "7"].map(String::from));
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = pkc(&a);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
    }
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
        let k = cpu_support::try_build(f, &[], false)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        // The code and a label on the expected line, or what went wrong.
        let mut judge = |what: String, r: Result<(), pk_runtime::cpu::Error>| match r {
            Ok(()) => failures.push(format!("{}: {what} ran without error", f.display())),
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
                        "{}: {what}: expected {want} with a label on line {line}, got {code} on lines {lines:?}: {e}",
                        f.display()
                    ));
                }
            }
        };
        judge("the fixed order".into(), run_fixture(&k, Order::Fixed));
        // Devices at once: the same code and line, whatever the threads'
        // timing, every time.
        for round in 0..5 {
            judge(
                format!("parallel round {round}"),
                run_fixture(&k, Order::Parallel),
            );
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

/// The README's report of a broken collective is what `pkc run` prints.
#[test]
fn the_readmes_deadlock_report_is_real() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let cmd = "$ pkc run tests/cpu/mesh/wrong_semaphore.pk --mesh 4 --in x=x.npy --out y=y.npy\n";
    let at = readme.find(cmd).expect("the report in the README") + cmd.len();
    let shown = &readme[at..at + readme[at..].find("```").expect("a closed block")];
    let dir = common::TempDir::new("mesh-readme");
    let x = dir.path().join("x.npy");
    std::fs::copy(
        root().join("tests/data/mesh/ppermute_f32_n4_shift1/x.npy"),
        &x,
    )
    .expect("x");
    let y = dir.path().join("y.npy");
    let o = pkc(&[
        "run",
        "tests/cpu/mesh/wrong_semaphore.pk",
        "--mesh",
        "4",
        "--in",
        &format!("x={}", x.display()),
        "--out",
        &format!("y={}", y.display()),
    ]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert_eq!(stderr(&o), shown);
    assert!(!y.exists());
}

/// `pkc bench --mesh` times the kernel on every device of the mesh, from
/// stacked files or random arrays, and a file of one device's shape is
/// refused with the stacked shape it needs.
#[test]
fn bench_times_a_kernel_on_its_mesh() {
    let o = pkc(&[
        "bench",
        "kernels/all_gather.pk",
        "--mesh",
        "4",
        "--iters",
        "2",
        "--json",
        "--in",
        "x=tests/data/mesh/all_gather_f32_n4/x.npy",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {:?}", o.stdout));
    assert_eq!(v["devices"], 4);
    assert_eq!(v["iters"], 2);
    assert_eq!(v["inputs_from_files"], serde_json::json!(["x"]));
    let o = pkc(&[
        "bench",
        "kernels/reduce_scatter.pk",
        "--mesh",
        "2",
        "-p",
        "n=2",
        "--iters",
        "1",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("reduce_scatter on a mesh of 2 devices: median"),
        "{out}"
    );
    let o = pkc(&[
        "bench",
        "kernels/all_gather.pk",
        "--mesh",
        "4",
        "--in",
        "x=tests/data/mesh/all_gather_f32_n4/y_expected.npy",
    ]);
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK1004"], "{err}");
    assert!(err.contains("[4, 8, 128]"), "{err}");
}
