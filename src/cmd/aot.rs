//! `pkc aot FILE.mlir|FILE.mlirbc [--target T,...|all] [--partitions N]
//! [--replicas N]`: compiles any StableHLO module ahead of time with libtpu,
//! the same path `pkc build --aot` takes for a kernel, and reports the code
//! size and memory per target.
//!
//! It is for whole programs that contain pk kernels, such as a JAX model
//! exported for TPU (`jax.export`'s `mlir_module_serialized`, which is what
//! TorchTPU registers): a module libtpu compiles here compiles on the TPU
//! host. The module is read as given (MLIR text or bytecode, including a
//! versioned StableHLO portable artifact); SPMD partition and replica
//! counts come from the module's `mhlo.num_partitions`/`mhlo.num_replicas`
//! when it is text, else from the flags.

use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use pk_lang::diag::{codes, Diag};
use pk_lang::span::{SourceMap, Span};
use pk_runtime::pjrt::{CompiledKernel, Plugin};

use super::build::{parse_targets, Targets};
use super::common::{pjrt_exit_code, EXIT_ERRORS, EXIT_OK};
use super::ui::{json_line, print_diagnostic, print_diags, progress, ui};

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The StableHLO module: MLIR text (.mlir) or bytecode (.mlirbc).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// TPU generations, comma-separated (v4, v5e, v5p, v6e, tpu7x), or `all`.
    #[arg(long, short = 't', value_name = "T,...|all", default_value = "all", value_parser = parse_targets)]
    pub target: Targets,
    /// SPMD partitions (devices) of the program; default: the module's
    /// `mhlo.num_partitions`, else 1.
    #[arg(long, value_name = "N")]
    pub partitions: Option<u32>,
    /// Replicas of the program; default: the module's `mhlo.num_replicas`,
    /// else 1.
    #[arg(long, value_name = "N")]
    pub replicas: Option<u32>,
    /// The libtpu to load (default: $PK_LIBTPU, else pk's cache).
    #[arg(long, value_name = "PATH")]
    pub libtpu: Option<PathBuf>,
}

pub fn run(a: Args) -> u8 {
    let code = match read(&a.file) {
        Ok(c) => c,
        Err(status) => return status,
    };
    let replicas = a
        .replicas
        .or_else(|| module_count(&code, "mhlo.num_replicas"))
        .unwrap_or(1);
    let partitions = a
        .partitions
        .or_else(|| module_count(&code, "mhlo.num_partitions"))
        .unwrap_or(1);
    let plugin = match Plugin::load(a.libtpu.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            print_diagnostic(&e);
            return pjrt_exit_code(&e);
        }
    };
    let name = a.file.display().to_string();
    let bar = progress(a.target.0.len() as u64, &name);
    let mut status = EXIT_OK;
    for &target in &a.target.0 {
        bar.set_message(format!("compiling for {target}"));
        let devices = u64::from(replicas.max(1)) * u64::from(partitions.max(1));
        let compiled = plugin
            .topology_for(target, devices)
            .and_then(|t| t.compile_program(&code, replicas, partitions));
        bar.inc(1);
        bar.suspend(|| match compiled {
            Ok(c) => report(&name, &c),
            Err(e) => {
                print_diagnostic(&e);
                status = status.max(pjrt_exit_code(&e));
            }
        });
    }
    bar.finish_and_clear();
    status
}

/// Modules larger than this are refused before they are read: a kernel's
/// StableHLO module is kilobytes, and libtpu needs several times a
/// module's size to compile it.
const MAX_MODULE_BYTES: u64 = 1 << 30;

/// Reads the module; an unreadable, empty or oversized file, or a device,
/// is reported as `PK0009`.
fn read(path: &Path) -> Result<Vec<u8>, u8> {
    let fail = |why: String| {
        let mut sources = SourceMap::new();
        sources.add(path.display().to_string(), "");
        let d = Diag::new(&codes::IO_ERROR, why, Span::default())
            .help("pass a StableHLO module: MLIR text (.mlir) or bytecode (.mlirbc)");
        print_diags(&[d], &sources);
        EXIT_ERRORS
    };
    match pk_lang::files::read_limited(path, MAX_MODULE_BYTES) {
        Ok(c) if c.is_empty() => Err(fail(format!("`{}` is empty", path.display()))),
        Ok(c) => Ok(c),
        Err(pk_lang::files::ReadError::TooLarge(size)) => Err(fail(format!(
            "`{}` is {}, more than the {} GiB a module may have",
            path.display(),
            size.map_or("larger".to_string(), |n| format!("{n} bytes")),
            MAX_MODULE_BYTES >> 30
        ))),
        Err(e) => Err(fail(format!(
            "cannot read `{}`: {}",
            path.display(),
            e.reason()
        ))),
    }
}

/// `mhlo.num_partitions = 4 : i32` in a text module; bytecode keeps its
/// attributes encoded, so it has none here.
fn module_count(code: &[u8], attr: &str) -> Option<u32> {
    let text = std::str::from_utf8(code).ok()?;
    let rest = &text[text.find(attr)? + attr.len()..];
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// One line per target (or a JSON object): code size, executable size and
/// libtpu's memory accounting.
fn report(name: &str, c: &CompiledKernel) {
    let m = c.memory_stats;
    if ui().json {
        json_line(&serde_json::json!({
            "type": "aot",
            "module": name,
            "target": c.target.name(),
            "topology": c.topology,
            "generated_code_bytes": c.generated_code_bytes,
            "executable_bytes": c.serialized_executable.len(),
            "compile_ms": c.compile_time.as_secs_f64() * 1e3,
            "memory": m,
        }));
        return;
    }
    if ui().quiet {
        return;
    }
    let memory = match m {
        Some(m) => format!(
            ", memory: arguments {} B, outputs {} B, temp {} B, peak {} B",
            m.argument_bytes, m.output_bytes, m.temp_bytes, m.peak_memory_bytes
        ),
        None => String::new(),
    };
    println!(
        "{:<6} {:>9} bytes of TPU code, executable {} bytes, compiled in {:.0} ms{memory}",
        c.target.name(),
        c.generated_code_bytes,
        c.serialized_executable.len(),
        c.compile_time.as_secs_f64() * 1e3
    );
}

#[cfg(test)]
mod tests {
    use super::module_count;

    #[test]
    fn counts_are_read_from_module_text() {
        let text =
            b"module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {}";
        assert_eq!(module_count(text, "mhlo.num_partitions"), Some(4));
        assert_eq!(module_count(text, "mhlo.num_replicas"), Some(1));
        assert_eq!(module_count(b"ML\xefR\x00", "mhlo.num_partitions"), None);
        assert_eq!(module_count(b"module {}", "mhlo.num_partitions"), None);
    }
}
