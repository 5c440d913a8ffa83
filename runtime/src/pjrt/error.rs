//! Errors of the PJRT layer: finding and loading libtpu, compiling for a TPU,
//! and reaching a TPU device. Codes `PK2001..PK2099`.

use pk_lang::diag::Explanation;

/// The command that installs the pinned libtpu into pk's cache.
pub const SETUP_COMMAND: &str = "bash .ci/setup-libtpu";

/// Where a libtpu path came from, to say which setting to fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibtpuOrigin {
    /// A path passed by the caller (e.g. `pkc build --libtpu PATH`).
    Explicit,
    /// The `PK_LIBTPU` environment variable.
    EnvVar,
    /// pk's per-user cache, filled by `.ci/setup-libtpu`.
    Cache,
}

impl std::fmt::Display for LibtpuOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LibtpuOrigin::Explicit => "the path given",
            LibtpuOrigin::EnvVar => "PK_LIBTPU",
            LibtpuOrigin::Cache => "pk's cache",
        })
    }
}

/// Everything that can go wrong between pk and libtpu.
///
/// Messages that come from libtpu are carried whole: they are the only
/// description of what the TPU compiler objected to.
#[derive(Debug, Clone, thiserror::Error, miette::Diagnostic)]
pub enum PjrtError {
    #[error("libtpu not found at {path} (from {origin})")]
    #[diagnostic(
        code(PK2001),
        help("install it with `bash .ci/setup-libtpu`, or set PK_LIBTPU to the path of libtpu.so")
    )]
    LibtpuNotFound { path: String, origin: LibtpuOrigin },

    #[error("cannot load libtpu from {path}: {reason}")]
    #[diagnostic(
        code(PK2002),
        help("reinstall it with `bash .ci/setup-libtpu`; the file may be truncated or not libtpu")
    )]
    LibtpuLoad { path: String, reason: String },

    #[error("cannot load libtpu from {path}: {reason}")]
    #[diagnostic(code(PK2002), help("{hint}"))]
    LibtpuDamaged {
        path: String,
        reason: String,
        /// What to do, which depends on where the path came from.
        hint: String,
    },

    #[error("libtpu is already loaded from {loaded}; cannot also load {requested}")]
    #[diagnostic(
        code(PK2003),
        help("a process can load one libtpu; use the same path for every compile")
    )]
    PluginAlreadyLoaded { loaded: String, requested: String },

    #[error("libtpu at {path} failed to initialise: {message}")]
    #[diagnostic(
        code(PK2004),
        help("check that the file is the libtpu pinned by `.ci/setup-libtpu` (0.0.51)")
    )]
    PluginInit { path: String, message: String },

    #[error("libtpu (PJRT C API {version}) does not provide {function}")]
    #[diagnostic(
        code(PK2005),
        help("pk needs PJRT C API 0.54 or newer; install the pinned libtpu with `bash .ci/setup-libtpu`")
    )]
    MissingFunction {
        function: &'static str,
        version: String,
    },

    #[error("libtpu rejected topology {topology} for {target}: {message}")]
    #[diagnostic(
        code(PK2006),
        help(
            "this libtpu may not know this TPU generation; the pinned libtpu 0.0.51 knows all five"
        )
    )]
    Topology {
        target: String,
        topology: String,
        message: String,
    },

    #[error("libtpu failed to compile the kernel for {target} ({status}):\n{message}")]
    #[diagnostic(
        code(PK2007),
        help(
            "the TPU compiler rejected the kernel; source locations in the message point at the .pk code involved"
        )
    )]
    Compile {
        target: String,
        /// The PJRT status name, e.g. `INVALID_ARGUMENT`.
        status: String,
        /// libtpu's complete message.
        message: String,
        /// `(file, line, column)` of every `loc(...)` found in `message`.
        locations: Vec<(String, u32, u32)>,
    },

    #[error("libtpu compiled the kernel for {target} but {operation} failed: {message}")]
    #[diagnostic(
        code(PK2008),
        help("this is a libtpu or pk bug; the message says which")
    )]
    Executable {
        target: String,
        operation: &'static str,
        message: String,
    },

    #[error("no TPU device attached; AOT compile works, execution needs a TPU host")]
    #[diagnostic(
        code(PK2009),
        help("run on a TPU VM to execute; here, `pkc run --device cpu` (the default) runs the kernel on the CPU reference, and `pkc build --aot` compiles it for every TPU generation")
    )]
    NoTpuDevice {
        /// What libtpu said when asked for a client.
        message: String,
    },

    #[error("libtpu could not create a TPU client: {message}")]
    #[diagnostic(
        code(PK2010),
        help("another process may hold the TPU (libtpu allows one per host), or the TPU driver is not ready")
    )]
    ClientCreate { message: String },

    #[error("unknown TPU target `{name}`; known targets: {known}")]
    #[diagnostic(code(PK2011), help("write one of: {known}"))]
    UnknownTarget { name: String, known: String },

    #[error("the TPU failed to {operation} ({status}): {message}")]
    #[diagnostic(
        code(PK2012),
        help("RESOURCE_EXHAUSTED means the arrays do not fit the TPU's memory; other failures come from the TPU runtime: compare with `pkc run --device cpu`, and report the message with the kernel")
    )]
    Execute {
        /// What pk asked of the TPU, e.g. "copy input `x` to the device".
        operation: String,
        /// The PJRT status name, e.g. `RESOURCE_EXHAUSTED`.
        status: String,
        /// libtpu's complete message.
        message: String,
    },

    #[error(
        "libtpu's schedule of `{kernel}` for {target} could not be read, so {fallback}: {reason}"
    )]
    #[diagnostic(
        code(PK2013),
        severity(Warning),
        help("without the schedule the prediction is the roofline model's (as --eval model); without its source locations `pkc profile` shows no per-line figures; the compiled kernel is unaffected; pk reads the dumps of libtpu {version}, and leaves a dump that LIBTPU_INIT_ARGS asks for to its owner")
    )]
    ScheduleUnreadable {
        kernel: String,
        target: String,
        /// What is used instead, e.g. "the roofline model ranks it".
        fallback: String,
        reason: String,
        version: String,
    },
}

/// The long form of every `PK20xx` code, for `pkc explain`.
pub const EXPLANATIONS: &[Explanation] = &[
    Explanation {
        code: "PK2001",
        title: "libtpu-not-found",
        what: "pk needs libtpu (the TPU compiler, shipped as a PJRT plugin) to compile a kernel \
               for a TPU, and found no file at the place it looked: the path passed explicitly, \
               else the PK_LIBTPU environment variable, else pk's cache \
               (${PK_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/pk}/libtpu/0.0.51/libtpu.so).",
        why: "Ahead-of-time compilation uses the real TPU compiler so that what pk accepts is \
              exactly what a TPU accepts. libtpu is 575 MB and not part of the repository.",
        example: "$ pkc build kernels/matmul.pk --target v5e\n\
                  error[PK2001]: libtpu not found at ~/.cache/pk/libtpu/0.0.51/libtpu.so (from pk's cache)\n\
                  $ bash .ci/setup-libtpu      # downloads and verifies the pinned wheel once\n\
                  $ pkc build kernels/matmul.pk --target v5e",
    },
    Explanation {
        code: "PK2002",
        title: "libtpu-load-failed",
        what: "The libtpu file exists but is not a complete shared library for this machine \
               (checked before it is loaded: its ELF header, program and section headers and \
               segments must lie inside the file, and the copy in pk's cache must have the \
               pinned sha256), or the dynamic loader refused it, or it does not export \
               GetPjrtApi.",
        why: "pk talks to libtpu only through the PJRT C API that GetPjrtApi returns; a truncated \
              download or a different library cannot provide it. Loading a truncated library \
              would kill the process with SIGBUS and no message, so pk checks the file first.",
        example: "$ PK_LIBTPU=/usr/lib/libc.so.6 pkc build k.pk\n\
                  error[PK2002]: cannot load libtpu from /usr/lib/libc.so.6: symbol GetPjrtApi not found\n\
                  $ unset PK_LIBTPU; bash .ci/setup-libtpu",
    },
    Explanation {
        code: "PK2003",
        title: "libtpu-already-loaded",
        what: "A second libtpu path was requested after one was loaded in the same process.",
        why: "libtpu keeps process-wide state and is initialised once; two copies cannot coexist.",
        example: "Load the plugin once (Plugin::load) and reuse it for every target.",
    },
    Explanation {
        code: "PK2004",
        title: "libtpu-init-failed",
        what: "libtpu loaded but PJRT_Plugin_Initialize failed, or it reports a PJRT C API older \
               than 0.54 or of another major version.",
        why: "pk binds PJRT C API 0.54 and checks every call against the plugin's version.",
        example: "$ bash .ci/setup-libtpu   # installs the pinned libtpu 0.0.51 (API 0.116)",
    },
    Explanation {
        code: "PK2005",
        title: "pjrt-function-missing",
        what: "The loaded libtpu's PJRT function table has no entry for a function pk calls.",
        why: "Older plugins have shorter tables; pk refuses to call past the table's end.",
        example: "Use the libtpu that `.ci/setup-libtpu` installs.",
    },
    Explanation {
        code: "PK2006",
        title: "topology-rejected",
        what: "libtpu did not accept the topology pk compiles a target against \
               (v4:2x2x1, v5e:2x2, v5p:2x2x1, v6e:2x2, tpu7x:2x2x1; for a kernel on a mesh of 5 to \
               8 devices v4:2x2x2, v5e:2x4, v5p:2x2x2, v6e:2x4, tpu7x:2x2x1).",
        why: "Each libtpu release knows a fixed set of TPU generations; TPU7x needs libtpu 0.0.51 \
              or newer.",
        example: "$ pkc build k.pk --target tpu7x\n\
                  error[PK2006]: libtpu rejected topology tpu7x:2x2x1 for tpu7x: ...\n\
                  $ bash .ci/setup-libtpu   # the pinned libtpu knows all five targets",
    },
    Explanation {
        code: "PK2007",
        title: "tpu-compile-failed",
        what: "The TPU compiler rejected the kernel: an operation it cannot lower on that TPU \
               generation, a layout it cannot produce, or more VMEM than the core has.",
        why: "pk's type checker is meant to catch these first; an error here with a .pk \
              location is the compiler's word on that line, and one pk did not foresee is a \
              pk bug worth reporting.",
        example: "error[PK2007]: libtpu failed to compile the kernel for v5e (INVALID_ARGUMENT):\n\
                  Expected matmul acc to be 32-bit\n\
                  fix: accumulate in f32 (scratch acc: vmem f32[bm, bn]) and cast when storing",
    },
    Explanation {
        code: "PK2008",
        title: "executable-query-failed",
        what: "Compilation succeeded but a query of the executable failed: serializing it or \
               reading its code size, or on a TPU host finding its device or its outputs.",
        why: "These calls only read the compiled program; failing is a libtpu or pk bug.",
        example: "Report the full message together with the libtpu version.",
    },
    Explanation {
        code: "PK2009",
        title: "no-tpu-device",
        what: "Executing a kernel on a TPU was requested on a machine without a TPU.",
        why: "Ahead-of-time compilation runs anywhere, but running the compiled code needs the \
              chip. On CPU, pk runs the kernel's WebAssembly reference instead.",
        example: "$ pkc run k.pk --device tpu\n\
                  error[PK2009]: no TPU device attached; AOT compile works, execution needs a TPU host\n\
                  $ pkc run k.pk            # the CPU reference",
    },
    Explanation {
        code: "PK2010",
        title: "tpu-client-failed",
        what: "A TPU is present but libtpu could not open it.",
        why: "libtpu gives one process a TPU at a time, and needs its driver to be ready.",
        example: "Stop the other process using the TPU (see /tmp/libtpu_lockfile) and retry.",
    },
    Explanation {
        code: "PK2011",
        title: "unknown-target",
        what: "A TPU target name that pk does not know.",
        why: "pk compiles for v4, v5e, v5p, v6e and tpu7x, each against a fixed topology.",
        example: "$ pkc build k.pk --target v7x\n\
                  error[PK2011]: unknown TPU target `v7x`; known targets: v4, v5e, v5p, v6e, tpu7x\n\
                  $ pkc build k.pk --target tpu7x",
    },
    Explanation {
        code: "PK2012",
        title: "tpu-execution-failed",
        what: "The kernel compiled for the attached TPU, but copying an array to the device, \
               running the kernel, or copying a result back failed.",
        why: "Execution is where the TPU's memory (HBM) is allocated and the runtime checks \
              each array against the compiled program; a failure there is not a mistake the \
              type checker can see.",
        example: "$ pkc run k.pk --device tpu --in x=x.npy --out y=y.npy\n\
                  error[PK2012]: the TPU failed to copy input `x` to the device (RESOURCE_EXHAUSTED): ...\n\
                  $ pkc run k.pk --device cpu --in x=x.npy --out y=y.npy   # the CPU reference",
    },
    Explanation {
        code: "PK2013",
        title: "schedule-unreadable",
        what: "A warning: pk asked libtpu for its final schedule of a kernel (the VLIW bundles, \
               loops and unit slots it writes during an ahead-of-time compile) and could not \
               read what libtpu wrote: a file was missing, a line was not in the format pk \
               knows, or LIBTPU_INIT_ARGS already asks libtpu for a dump of its own (pk \
               leaves that one alone).",
        why: "`pkc tune --eval schedule`, `pkc profile` and the AOT report's `schedule` read the \
              compiler's own program; a libtpu whose dump format changed could make pk count \
              wrong numbers, so pk refuses the whole dump instead and falls back to the roofline \
              model (or, when only the source locations `pkc profile` asks for do not read, \
              shows no per-line figures). The compiled kernel is not affected.",
        example: "$ PK_LIBTPU=/opt/new/libtpu.so pkc tune k.pk --eval schedule\n\
                  warning[PK2013]: libtpu's schedule of `k` for v5e could not be read, so the \
                  roofline model ranks it: k-final_bundles.txt:12: expected a known marker, not `LX`\n\
                  $ pkc tune k.pk --eval model   # the roofline model, without the schedule",
    },
];

impl PjrtError {
    /// The error with libtpu's captured standard error (see `log`) added to
    /// its message, for the errors whose message comes from libtpu.
    pub(crate) fn with_log(self, log: &str) -> PjrtError {
        use super::log::with_log;
        match self {
            PjrtError::LibtpuLoad { path, reason } => PjrtError::LibtpuLoad {
                path,
                reason: with_log(reason, log),
            },
            PjrtError::PluginInit { path, message } => PjrtError::PluginInit {
                path,
                message: with_log(message, log),
            },
            PjrtError::Topology {
                target,
                topology,
                message,
            } => PjrtError::Topology {
                target,
                topology,
                message: with_log(message, log),
            },
            PjrtError::Compile {
                target,
                status,
                message,
                locations,
            } => PjrtError::Compile {
                target,
                status,
                message: with_log(message, log),
                locations,
            },
            PjrtError::Executable {
                target,
                operation,
                message,
            } => PjrtError::Executable {
                target,
                operation,
                message: with_log(message, log),
            },
            other => other,
        }
    }
}

/// Finds the source locations that MLIR printed into a compiler message, in
/// order of first appearance and without repeats.
///
/// Recognises file locations `loc("file.pk":LINE:COL)`, including those
/// nested inside fused, call-site and named locations (`loc(fused[...])`,
/// `loc(callsite(... at ...))`, `loc("name"("file.pk":3:5))`): every
/// `"file":LINE:COL` inside a `loc(...)`.
pub fn source_locations(msg: &str) -> Vec<(String, u32, u32)> {
    let mut found: Vec<(String, u32, u32)> = Vec::new();
    let mut rest = msg;
    while let Some(start) = rest.find("loc(") {
        let inner = &rest[start + 4..];
        let end = matching_paren(inner).unwrap_or(inner.len());
        for loc in file_line_cols(&inner[..end]) {
            if !found.contains(&loc) {
                found.push(loc);
            }
        }
        rest = &inner[end..];
    }
    found
}

/// The byte index of the `)` closing a `(` that precedes `s`, skipping
/// string literals.
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Every `"file":LINE:COL` in `s`.
fn file_line_cols(s: &str) -> Vec<(String, u32, u32)> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('"') {
        let after_open = &rest[open + 1..];
        let Some(close) = after_open.find('"') else {
            break;
        };
        let file = &after_open[..close];
        let tail = &after_open[close + 1..];
        if let Some((line, col, used)) = line_col(tail) {
            out.push((file.to_string(), line, col));
            rest = &tail[used..];
        } else {
            rest = tail;
        }
    }
    out
}

/// Parses `:LINE:COL` at the start of `s`, returning the numbers and the
/// bytes consumed.
fn line_col(s: &str) -> Option<(u32, u32, usize)> {
    let s1 = s.strip_prefix(':')?;
    let (line, n1) = leading_number(s1)?;
    let s2 = s1[n1..].strip_prefix(':')?;
    let (col, n2) = leading_number(s2)?;
    Some((line, col, 1 + n1 + 1 + n2))
}

fn leading_number(s: &str) -> Option<(u32, usize)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let value = s.get(..digits)?.parse().ok()?;
    Some((value, digits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use miette::Diagnostic;

    fn one_of_each() -> Vec<PjrtError> {
        let s = String::new;
        vec![
            PjrtError::LibtpuNotFound {
                path: s(),
                origin: LibtpuOrigin::Cache,
            },
            PjrtError::LibtpuLoad {
                path: s(),
                reason: s(),
            },
            PjrtError::PluginAlreadyLoaded {
                loaded: s(),
                requested: s(),
            },
            PjrtError::PluginInit {
                path: s(),
                message: s(),
            },
            PjrtError::MissingFunction {
                function: "PJRT_Compile",
                version: s(),
            },
            PjrtError::Topology {
                target: s(),
                topology: s(),
                message: s(),
            },
            PjrtError::Compile {
                target: s(),
                status: s(),
                message: s(),
                locations: vec![],
            },
            PjrtError::Executable {
                target: s(),
                operation: "serialize",
                message: s(),
            },
            PjrtError::NoTpuDevice { message: s() },
            PjrtError::ClientCreate { message: s() },
            PjrtError::UnknownTarget {
                name: s(),
                known: s(),
            },
            PjrtError::Execute {
                operation: s(),
                status: s(),
                message: s(),
            },
            PjrtError::ScheduleUnreadable {
                kernel: s(),
                target: s(),
                fallback: s(),
                reason: s(),
                version: s(),
            },
        ]
    }

    #[test]
    fn every_code_is_in_range_unique_and_explained() {
        let mut codes: Vec<String> = one_of_each()
            .iter()
            .map(|e| e.code().map(|c| c.to_string()).unwrap_or_default())
            .collect();
        for code in &codes {
            let n: u32 = code.trim_start_matches("PK").parse().unwrap_or(0);
            assert!((2001..=2099).contains(&n), "{code} out of range");
            assert!(
                EXPLANATIONS.iter().any(|x| x.code == code),
                "{code} has no explanation"
            );
            assert!(
                one_of_each()
                    .iter()
                    .any(|e| e.code().map(|c| c.to_string()).as_deref() == Some(code)
                        && e.help().is_some()),
                "{code} has no help"
            );
        }
        let total = codes.len();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), total, "duplicate codes");
        assert_eq!(EXPLANATIONS.len(), total, "explanations without a variant");
    }

    #[test]
    fn missing_libtpu_help_names_the_setup_command() {
        let err = PjrtError::LibtpuNotFound {
            path: "/x/libtpu.so".into(),
            origin: LibtpuOrigin::Cache,
        };
        let help = err.help().map(|h| h.to_string()).unwrap_or_default();
        assert!(help.contains(SETUP_COMMAND), "{help}");
    }

    #[test]
    fn finds_plain_fused_callsite_and_named_locations() {
        let msg = r#"error: Expected matmul acc to be 32-bit
  %3 = "tpu.matmul"(%0, %1, %2) : (...) -> vector<128x128xbf16> loc("bad.pk":7:12)
  at loc(fused["a.pk":1:2, "b.pk":30:4])
  at loc(callsite("a.pk":1:2 at "c.pk":5:6))
  named loc("dot"("d.pk":8:9))"#;
        assert_eq!(
            source_locations(msg),
            vec![
                ("bad.pk".to_string(), 7, 12),
                ("a.pk".to_string(), 1, 2),
                ("b.pk".to_string(), 30, 4),
                ("c.pk".to_string(), 5, 6),
                ("d.pk".to_string(), 8, 9),
            ]
        );
    }

    #[test]
    fn ignores_text_outside_loc_and_malformed_locations() {
        assert!(source_locations("file \"x.pk\":1:2 is not in a loc").is_empty());
        assert!(source_locations("loc(\"x.pk\":1)").is_empty());
        assert!(source_locations("loc(unknown)").is_empty());
        assert!(source_locations("truncated loc(\"x.pk\":3:").is_empty());
    }
}
