//! `pkc tune --ray ADDRESS`: the libtpu compiles of a sweep run as tasks on
//! a Ray cluster instead of this machine's threads.
//!
//! pkc still enumerates the space and checks and lowers every configuration
//! here (milliseconds each); what it sends out is the expensive part, one
//! libtpu compile per surviving configuration and target. The driver
//! (`tune_ray.py`, shipped inside pkc and run by `$PK_PYTHON`, else
//! `python3`) connects to the cluster, splits the jobs into batches, and
//! runs each batch as a Ray task that calls `pkc tune-worker` on its node;
//! results stream back as JSON lines and advance the progress bar. A worker
//! compiles exactly as `pkc tune` does locally ([`super::tune::compile_module`]),
//! so a sweep ranks the same with and without `--ray`.

use super::common::{EXIT_OK, EXIT_TOOLCHAIN};
use super::ui::json_line;
use clap::Args as ClapArgs;
use indicatif::ProgressBar;
use pk_runtime::pjrt::{MemoryStats, Plugin, TpuTarget};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The driver, run with the cluster's Python.
const DRIVER: &str = include_str!("tune_ray.py");

/// Batches per cluster CPU: several, so a slow batch does not hold the
/// sweep back, but few enough that each worker's libtpu load is shared by
/// many compiles.
const BATCHES_PER_CPU: usize = 3;

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RayError {
    #[error("Ray is not available to `{python}`: {message}")]
    #[diagnostic(
        code(PK6005),
        help("install Ray for that Python (`{python} -m pip install ray`), or point $PK_PYTHON at a Python that has it")
    )]
    Unavailable { python: String, message: String },
    #[error("cannot use the Ray cluster at `{address}`: {message}")]
    #[diagnostic(
        code(PK6006),
        help("start a head with `ray start --head` and pass its `HOST:PORT` (or `auto` on a node of the cluster); the cluster needs at least one CPU")
    )]
    Unreachable { address: String, message: String },
    #[error("a Ray task of the sweep failed: {message}")]
    #[diagnostic(
        code(PK6007),
        help("every node needs pkc at the same path as here (or `PK_RAY_PKC` set to it) and libtpu where pkc finds it ($PK_LIBTPU or pk's cache)")
    )]
    TaskFailed { message: String },
}

/// One compile to run on the cluster.
pub struct Job<'a> {
    pub target: TpuTarget,
    pub module: &'a str,
}

/// What libtpu made of one job: code bytes and memory, or its refusal.
pub type Compiled = Result<(u64, Option<MemoryStats>), String>;

/// Where a sweep ran, for the report.
pub use pk_runtime::tune::report::Ray as RayUse;

/// The Python that runs the driver.
fn python() -> String {
    std::env::var("PK_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// Runs `jobs` on the cluster at `address`; one result per job, in order.
pub fn compile(
    address: &str,
    libtpu: Option<&Path>,
    jobs: &[Job],
    bar: &ProgressBar,
) -> Result<(Vec<Compiled>, RayUse), RayError> {
    let python = python();
    let unavailable = |message: String| RayError::Unavailable {
        python: python.clone(),
        message,
    };
    let pkc = match std::env::var_os("PK_RAY_PKC") {
        Some(p) => PathBuf::from(p),
        None => std::env::current_exe().map_err(|e| RayError::TaskFailed {
            message: format!("cannot find this pkc: {e}"),
        })?,
    };
    let mut driver = tempfile::Builder::new()
        .prefix("pk-ray-")
        .suffix(".py")
        .tempfile()
        .map_err(|e| unavailable(format!("cannot write the driver: {e}")))?;
    driver
        .write_all(DRIVER.as_bytes())
        .map_err(|e| unavailable(format!("cannot write the driver: {e}")))?;
    // What libtpu reads from the environment goes to the workers too.
    let env: serde_json::Map<String, Value> = std::env::vars()
        .filter(|(k, _)| k.starts_with("TPU_") || k.starts_with("PK_") || k.starts_with("LIBTPU"))
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let request = json!({
        "address": address,
        "pkc": pkc.display().to_string(),
        "libtpu": libtpu.map(|p| p.display().to_string()),
        "env": env,
        "batches_per_cpu": BATCHES_PER_CPU,
        "jobs": jobs.iter().enumerate().map(|(id, j)| json!({
            "id": id,
            "target": j.target.name(),
            "module": j.module,
        })).collect::<Vec<_>>(),
    });
    let mut child = Command::new(&python)
        .arg("-u")
        .arg(driver.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| unavailable(format!("cannot run it: {e}")))?;
    // The request is written from a thread: a large one would otherwise
    // fill the pipe while the driver is still importing Ray.
    let mut stdin = child.stdin.take().expect("piped stdin");
    let body = request.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(body.as_bytes());
    });
    let mut stderr = child.stderr.take().expect("piped stderr");
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let stdout = child.stdout.take().expect("piped stdout");
    let mut results: Vec<Option<Compiled>> = (0..jobs.len()).map(|_| None).collect();
    let mut cluster = (0usize, 0f64);
    let mut outcome: Option<Result<(usize, usize), RayError>> = None;
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        match v["type"].as_str() {
            Some("cluster") => {
                cluster = (
                    v["nodes"].as_u64().unwrap_or(0) as usize,
                    v["cpus"].as_f64().unwrap_or(0.0),
                );
                bar.set_message(format!(
                    "compiling on Ray ({} nodes, {} CPUs)",
                    cluster.0, cluster.1
                ));
            }
            Some("result") => {
                let Some(slot) = v["id"].as_u64().and_then(|i| results.get_mut(i as usize)) else {
                    continue;
                };
                *slot = Some(match v["refused"].as_str() {
                    Some(m) => Err(m.to_string()),
                    None => Ok((
                        v["code_bytes"].as_u64().unwrap_or(0),
                        serde_json::from_value(v["memory"].clone()).ok(),
                    )),
                });
                bar.inc(1);
            }
            Some("done") => {
                let count = |k: &str| v[k].as_array().map_or(0, Vec::len);
                outcome = Some(Ok((count("nodes"), count("workers"))));
            }
            Some("error") => {
                let message = v["message"].as_str().unwrap_or("").to_string();
                outcome = Some(Err(match v["kind"].as_str() {
                    Some("no-ray") => unavailable(message),
                    Some("connect") => RayError::Unreachable {
                        address: address.to_string(),
                        message,
                    },
                    _ => RayError::TaskFailed { message },
                }));
            }
            _ => {}
        }
    }
    let _ = writer.join();
    let status = child.wait();
    let stderr = errors.join().unwrap_or_default();
    let (nodes, workers) = match outcome {
        Some(r) => r?,
        None => {
            let lines: Vec<&str> = stderr.lines().collect();
            let tail = lines[lines.len().saturating_sub(8)..].join("\n");
            return Err(RayError::Unreachable {
                address: address.to_string(),
                message: format!(
                    "the driver ended ({}) without a result: {tail}",
                    status.map_or("not started".to_string(), |s| s.to_string())
                ),
            });
        }
    };
    let missing = results.iter().filter(|r| r.is_none()).count();
    if missing > 0 {
        return Err(RayError::TaskFailed {
            message: format!(
                "{missing} of {} compiles came back without a result",
                jobs.len()
            ),
        });
    }
    Ok((
        results.into_iter().flatten().collect(),
        RayUse {
            address: address.to_string(),
            cluster_nodes: cluster.0,
            cluster_cpus: cluster.1,
            nodes,
            workers,
            jobs: jobs.len(),
        },
    ))
}

#[derive(ClapArgs, Debug)]
pub struct WorkerArgs {
    /// The libtpu to load (default: $PK_LIBTPU, else pk's cache).
    #[arg(long, value_name = "PATH")]
    pub libtpu: Option<PathBuf>,
}

/// `pkc tune-worker`: what a Ray task runs. Reads `{"jobs": [{"id",
/// "target", "module"}]}` on standard input and prints one JSON line per
/// job, `{"id", "code_bytes", "memory"}` or `{"id", "refused"}`; a request
/// it cannot read, or a libtpu it cannot load, is one `{"error"}` line.
pub fn worker(a: WorkerArgs) -> u8 {
    let fail = |message: String| {
        json_line(&json!({ "error": message }));
        EXIT_TOOLCHAIN
    };
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        return fail(format!("cannot read the request: {e}"));
    }
    let request: Value = match serde_json::from_str(&input) {
        Ok(v) => v,
        Err(e) => return fail(format!("the request is not JSON: {e}")),
    };
    let plugin = match Plugin::load(a.libtpu.as_deref()) {
        Ok(p) => p,
        Err(e) => return fail(e.to_string()),
    };
    for job in request["jobs"].as_array().into_iter().flatten() {
        let id = job["id"].clone();
        let target = pk_runtime::pjrt::parse_target(job["target"].as_str().unwrap_or(""));
        let (Ok(target), Some(module)) = (target, job["module"].as_str()) else {
            return fail(format!("job {id} has no valid target or module"));
        };
        match super::tune_sweep::compile_module(plugin, target, module).0 {
            Ok((code_bytes, memory)) => {
                json_line(&json!({"id": id, "code_bytes": code_bytes, "memory": memory}))
            }
            Err(m) => json_line(&json!({"id": id, "refused": m})),
        }
    }
    EXIT_OK
}
