//! `pkc build FILE... [--kernel NAME] [-p NAME=VALUE]... [--target T,...|all]
//! [--aot] [-o DIR]`: one kernel package per kernel specialisation.
//!
//! Each package goes to `DIR/<kernel>[-<param><value>...]` (see
//! `BuiltKernel::dir_name`) and is written atomically. With `--aot` every
//! target is compiled by libtpu first, and a kernel any target rejects gets
//! no new package (an older one stays as it was). `--table` prints a
//! Markdown table of generated code size per kernel and target, the one in
//! the README.

use super::common::{parse_param, pjrt_exit_code, report, EXIT_ERRORS, EXIT_OK};
use super::ui::{json_line, print_diags, progress, ui};
use clap::Args as ClapArgs;
use pk_runtime::package::build::{self, BuildOptions, BuiltKernel};
use pk_runtime::package::PackageError;
use pk_runtime::pjrt::{PjrtError, Plugin, TpuTarget, LIBTPU_VERSION};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The .pk files to build.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Build only this kernel of each file.
    #[arg(long, short = 'k', value_name = "NAME")]
    pub kernel: Option<String>,
    /// Set a kernel parameter: `-p M=1024`, `-p T=bf16`. Repeatable; applies
    /// to every kernel built.
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    /// TPU generations, comma-separated (v4, v5e, v5p, v6e, tpu7x), or `all`.
    #[arg(long, short = 't', value_name = "T,...|all", default_value = "v5e", value_parser = parse_targets)]
    pub target: Targets,
    /// Compile ahead of time with libtpu for every target and store the
    /// executables and compile reports in the package.
    #[arg(long)]
    pub aot: bool,
    /// The directory that receives the packages.
    #[arg(long, short = 'o', value_name = "DIR", default_value = "build")]
    pub out: PathBuf,
    /// Print a Markdown table of generated TPU code bytes per kernel and
    /// target on stdout (the summaries go to stderr).
    #[arg(long, requires = "aot")]
    pub table: bool,
    /// The libtpu to load (default: $PK_LIBTPU, else pk's cache).
    #[arg(long, value_name = "PATH")]
    pub libtpu: Option<PathBuf>,
    /// Use the best configuration `pkc tune` cached for the first target
    /// (for parameters not given with -p).
    #[arg(long)]
    pub tuned: bool,
    /// The tuning cache `--tuned` reads (default: $PK_TUNE_CACHE, else
    /// `tune` under $PK_CACHE_DIR, else $XDG_CACHE_HOME/pk, else
    /// ~/.cache/pk).
    #[arg(long, value_name = "DIR", requires = "tuned")]
    pub tuned_cache: Option<PathBuf>,
}

/// The `--target` list, without repeats, in the order given.
#[derive(Debug, Clone)]
pub struct Targets(pub Vec<TpuTarget>);

pub fn parse_targets(s: &str) -> Result<Targets, String> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(Targets(TpuTarget::all().to_vec()));
    }
    let mut out: Vec<TpuTarget> = Vec::new();
    for name in s.split(',') {
        let t: TpuTarget = pk_runtime::pjrt::parse_target(name).map_err(|e| e.to_string())?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(Targets(out))
}

/// One line of the code-size table.
struct Row {
    name: String,
    code_bytes: BTreeMap<TpuTarget, u64>,
}

pub fn run(a: Args) -> u8 {
    if let Err(code) = super::common::reject_repeats("-p", &a.params) {
        return code;
    }
    let plugin = if a.aot {
        // The package's AOT report keeps libtpu's schedule of the kernel.
        match Plugin::load_capturing(a.libtpu.as_deref(), ui().verbose) {
            Ok(p) => Some(p),
            Err(e) => {
                print_diagnostic(&e);
                return pjrt_exit_code(&e);
            }
        }
    } else {
        if a.libtpu.is_some() {
            return super::usage::UsageError::NotApplicable {
                flag: "--libtpu".into(),
                context: "without --aot".into(),
                hint: "--libtpu chooses the libtpu that compiles the kernel ahead of time".into(),
            }
            .report();
        }
        None
    };
    let opts = BuildOptions {
        targets: a.target.0.clone(),
        params: a.params.clone(),
        kernel: a.kernel.clone(),
        cpu_reference: true,
        ..Default::default()
    };
    if let Some(package) = pk_runtime::package::enclosing_package(&a.out) {
        print_diagnostic(&PackageError::InsideAPackage {
            dest: a.out.display().to_string(),
            package: package.display().to_string(),
        });
        return EXIT_ERRORS;
    }
    let mut status = EXIT_OK;
    let mut rows: Vec<Row> = Vec::new();
    // Every file is built before any package is written, so that two
    // kernels with one package name are found while nothing is written.
    let mut all: Vec<(
        &PathBuf,
        BuiltKernel,
        std::sync::Arc<pk_lang::span::SourceMap>,
    )> = Vec::new();
    for file in &a.files {
        let mut opts = opts.clone();
        // One read and parse of the file serves the tuning cache's key and
        // every target's check.
        let session = match pk_lang::Session::open(file) {
            Ok(s) => s,
            Err(f) => {
                report(&f);
                status = EXIT_ERRORS;
                continue;
            }
        };
        if a.tuned {
            match super::tune_cache::tuned_params(
                &session,
                a.kernel.as_deref(),
                &a.params,
                a.target.0[0],
                a.tuned_cache.as_deref(),
            ) {
                Ok(p) => opts.params = p,
                Err(code) => {
                    status = status.max(code);
                    continue;
                }
            }
        }
        let built = match build::build_session(&session, &opts) {
            Ok(b) => b,
            Err(f) => {
                report(&f);
                status = EXIT_ERRORS;
                continue;
            }
        };
        print_diags(&built.warnings, &built.sources);
        for k in built.kernels {
            all.push((file, k, built.sources.clone()));
        }
    }
    let mut names: BTreeMap<&str, &PathBuf> = BTreeMap::new();
    let mut duplicate = false;
    for (file, k, _) in &all {
        if let Some(first) = names.insert(&k.dir_name, file) {
            print_diagnostic(&PackageError::DuplicatePackage {
                name: k.dir_name.clone(),
                first: first.display().to_string(),
                second: file.display().to_string(),
            });
            duplicate = true;
        }
    }
    if duplicate {
        return EXIT_ERRORS;
    }
    for (_, mut k, sources) in all {
        let mut row = Row {
            name: k.dir_name.clone(),
            code_bytes: BTreeMap::new(),
        };
        if let Some(plugin) = plugin {
            if !compile_targets(plugin, &mut k, &sources, &a, &mut row) {
                status = EXIT_ERRORS;
                continue;
            }
        }
        let dest = a.out.join(&k.dir_name);
        match k.package.write(&dest) {
            Ok(p) => {
                if ui().json {
                    json_line(&package_json(&p, &dest));
                } else {
                    summary(&a, &format!("wrote {}", describe(&p, &dest)));
                }
                rows.push(row);
            }
            Err(e) => {
                print_diagnostic(&e);
                status = EXIT_ERRORS;
            }
        }
    }
    if a.table {
        print!("{}", table(&rows, &a.target.0));
    }
    status
}

/// Compiles `k` for every target, recording the artifacts in its package
/// and the code sizes in `row`; prints one line per target, or the
/// diagnostics of those that fail. Returns whether all succeeded.
fn compile_targets(
    plugin: &'static Plugin,
    k: &mut BuiltKernel,
    sources: &pk_lang::span::SourceMap,
    a: &Args,
    row: &mut Row,
) -> bool {
    let mut ok = true;
    let bar = progress(a.target.0.len() as u64, &k.dir_name);
    for &target in &a.target.0 {
        bar.set_message(format!("compiling for {target}"));
        let compiled = build::compile_aot(plugin, k, target, ui().verbose);
        bar.inc(1);
        bar.suspend(|| match compiled {
            Ok(art) => {
                let bundles = art
                    .report
                    .schedule
                    .as_ref()
                    .and_then(|s| s.kernel())
                    .map_or(String::new(), |s| {
                        format!(", {} bundles scheduled", s.bundles)
                    });
                summary(
                    a,
                    &format!(
                        "{:<24} {:<6} {:>9} bytes of TPU code, compiled in {:.0} ms{bundles}",
                        k.dir_name,
                        target.name(),
                        art.report.generated_code_bytes,
                        art.report.compile_ms
                    ),
                );
                if let Some(why) = &art.report.schedule_warning {
                    print_diagnostic(&PjrtError::ScheduleUnreadable {
                        kernel: k.kernel.name.clone(),
                        target: target.to_string(),
                        fallback: "the package's AOT report has no schedule".into(),
                        reason: why.clone(),
                        version: pk_runtime::pjrt::LIBTPU_VERSION.to_string(),
                    });
                }
                row.code_bytes
                    .insert(target, art.report.generated_code_bytes);
                k.package.aot.push(art);
            }
            Err(e) => {
                ok = false;
                match build::libtpu_diagnostic(&e, &k.kernel, sources) {
                    Some(d) => {
                        print_diags(std::slice::from_ref(&d), sources);
                        if ui().verbose {
                            if let PjrtError::Compile { message, .. } = &e {
                                eprintln!("libtpu's message:\n{message}");
                            }
                        }
                    }
                    None => print_diagnostic(&e),
                }
            }
        });
    }
    bar.finish_and_clear();
    ok
}

/// A summary line: stdout, or stderr when stdout carries the table;
/// nothing under `-q` or JSON output.
fn summary(a: &Args, line: &str) {
    if ui().quiet || ui().json {
        return;
    }
    if a.table {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

/// A written package as a JSON line: where, which kernel, and per target
/// the generated code size when it was compiled.
fn package_json(p: &pk_runtime::package::Package, dest: &Path) -> serde_json::Value {
    let m = p.manifest();
    let aot: serde_json::Map<String, serde_json::Value> = p
        .aot_targets()
        .into_iter()
        .filter_map(|t| {
            let r = p.aot_report(t)?;
            Some((t.name().to_string(), r.generated_code_bytes.into()))
        })
        .collect();
    serde_json::json!({
        "type": "package",
        "dir": dest.display().to_string(),
        "kernel": m.kernel,
        "targets": m.targets,
        "cpu_reference": m.cpu_reference.is_some(),
        "generated_code_bytes": aot,
    })
}

fn describe(p: &pk_runtime::package::Package, dest: &Path) -> String {
    let m = p.manifest();
    let cpu = if m.cpu_reference.is_some() {
        ", CPU reference"
    } else {
        ""
    };
    let aot = if m.aot.is_empty() {
        String::new()
    } else {
        format!(", AOT {}", m.aot.len())
    };
    format!(
        "{} (kernel `{}` for {}{cpu}{aot})",
        dest.display(),
        m.kernel,
        m.targets.join(", "),
    )
}

/// The Markdown table of generated code bytes, one row per package.
fn table(rows: &[Row], targets: &[TpuTarget]) -> String {
    let mut out = format!("Generated TPU code in bytes (libtpu {LIBTPU_VERSION}).\n\n| kernel |");
    for t in targets {
        out.push_str(&format!(" {t} |"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---:|".repeat(targets.len()));
    out.push('\n');
    for r in rows {
        out.push_str(&format!("| {} |", r.name));
        for t in targets {
            let cell = r.code_bytes.get(t).map_or("-".to_string(), |&b| grouped(b));
            out.push_str(&format!(" {cell} |"));
        }
        out.push('\n');
    }
    out
}

/// `84480` as `84,480`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Prints an error that is not about a source span (libtpu missing, a
/// package that cannot be written).
pub use super::ui::print_diagnostic;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_as_lists_or_all() {
        assert_eq!(parse_targets("all").map(|t| t.0.len()), Ok(5));
        assert_eq!(
            parse_targets("v5e,v4,v5e").map(|t| t.0),
            Ok(vec![TpuTarget::V5e, TpuTarget::V4])
        );
        assert!(parse_targets("v5e,v7x").is_err());
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(84480), "84,480");
        assert_eq!(grouped(1234567), "1,234,567");
    }
}
