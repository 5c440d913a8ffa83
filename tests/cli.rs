//! The `pkc` binary: exit codes (0 clean, 1 errors in the input, 2 usage),
//! file-reading diagnostics, `explain`, and the `emit` forms.

mod common;

use common::{code, codes_in, pkc, pkc_in, stderr, stdout, TempDir};
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().expect("temp paths are UTF-8")
}

#[test]
fn check_of_clean_kernels_exits_0() {
    let o = pkc(&[
        "check",
        "kernels/add.pk",
        "kernels/matmul.pk",
        "kernels/softmax.pk",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("kernels/add.pk: ok for v5e (1 kernel)"),
        "{err}"
    );
    assert!(
        err.contains("kernels/matmul.pk: ok for v5e (1 kernel)"),
        "{err}"
    );
    assert!(
        err.contains("kernels/softmax.pk: ok for v5e (1 kernel)"),
        "{err}"
    );
    assert!(codes_in(&err).is_empty(), "{err}");
}

#[test]
fn check_all_targets_reports_each_generation() {
    let o = pkc(&["check", "--all-targets", "kernels/add.pk"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    for t in ["v4", "v5e", "v5p", "v6e", "tpu7x"] {
        assert!(
            err.contains(&format!("kernels/add.pk: ok for {t} (1 kernel)")),
            "{err}"
        );
    }
}

/// The kernel library and the standard library check without a single
/// diagnostic, warnings included, on every generation.
#[test]
fn the_libraries_are_clean_on_every_target() {
    let mut args = vec!["check".to_string(), "--all-targets".to_string()];
    for dir in ["kernels", "std"] {
        for f in common::pk_files(&common::root().join(dir)) {
            // Kernels of one generation's MXU are checked where they run
            // (tests/kernel_targets.rs).
            if common::generation_specific(&f) {
                continue;
            }
            let name = f.file_name().expect("a file name").to_string_lossy();
            args.push(format!("{dir}/{name}"));
        }
    }
    assert!(
        args.len() >= 7,
        "kernels/ and std/ hold .pk files: {args:?}"
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = pkc(&args);
    let err = stderr(&o);
    assert_eq!(code(&o), 0, "{err}");
    assert!(codes_in(&err).is_empty(), "{err}");
    assert_eq!(
        err.matches(": ok for ").count(),
        5 * (args.len() - 2),
        "{err}"
    );
}

#[test]
fn check_with_errors_exits_1_and_prints_the_codes() {
    let o = pkc(&["check", "tests/diag/dtype_mismatch.pk"]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK0201"], "{err}");
    assert!(err.contains("mismatched dtypes `bf16` and `f32`"), "{err}");
    assert!(err.contains("error: 1 error found"), "{err}");
}

#[test]
fn one_bad_file_among_good_ones_exits_1() {
    let o = pkc(&["check", "kernels/add.pk", "tests/diag/unknown_name.pk"]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert!(err.contains("kernels/add.pk: ok for v5e"), "{err}");
    assert!(
        err.contains("tests/diag/unknown_name.pk: errors for v5e"),
        "{err}"
    );
    assert_eq!(codes_in(&err), ["PK0101"], "{err}");
}

#[test]
fn a_rule_of_one_generation_fails_only_there() {
    let fixture = "tests/diag/vmem_budget_v4.pk";
    let ok = pkc(&["check", "--target", "v5e", fixture]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    let bad = pkc(&["check", "--target", "v4", fixture]);
    assert_eq!(code(&bad), 1);
    assert_eq!(codes_in(&stderr(&bad)), ["PK0306"]);
    assert!(stderr(&bad).contains("more than v4's VMEM (16.00 MiB)"));
}

#[test]
fn usage_errors_exit_2() {
    let cases: &[&[&str]] = &[
        &[],
        &["frobnicate"],
        &["check"],
        &["check", "--target", "v9", "kernels/add.pk"],
        &["check", "--no-such-flag", "kernels/add.pk"],
        &["emit", "bytecode", "kernels/add.pk"],
        &["emit", "ir", "kernels/add.pk", "-p", "M"],
        &["explain"],
        &["explain", "PK9999"],
    ];
    for args in cases {
        let o = pkc(args);
        assert_eq!(code(&o), 2, "pkc {args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty() || args.is_empty(), "pkc {args:?}");
    }
    let o = pkc(&["check", "--target", "v9", "kernels/add.pk"]);
    assert!(
        stderr(&o).contains("unknown target `v9` (expected one of v4, v5e, v5p, v6e, tpu7x)"),
        "{}",
        stderr(&o)
    );
    let o = pkc(&["explain", "PK9999"]);
    assert!(stderr(&o).contains("unknown diagnostic code `PK9999`"));
}

#[test]
fn help_and_version_exit_0() {
    let o = pkc(&["--help"]);
    assert_eq!(code(&o), 0);
    for cmd in ["check", "emit", "explain"] {
        assert!(stdout(&o).contains(cmd), "{}", stdout(&o));
    }
    let o = pkc(&["--version"]);
    assert_eq!(code(&o), 0);
    // The first line names the version (and the commit, when built from
    // git); the second the libtpu `pkc build --aot` would load.
    let out = stdout(&o);
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("pkc {}", env!("CARGO_PKG_VERSION"))),
        "{out}"
    );
    assert!(out.contains("libtpu"), "{out}");
}

#[test]
fn missing_file_is_pk0009() {
    let dir = TempDir::new("missing");
    let path = dir.path().join("no_such_kernel.pk");
    let o = pkc(&["check", s(&path)]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK0009"], "{err}");
    assert!(
        err.contains(&format!("cannot read `{}`", path.display())),
        "{err}"
    );
    // `emit` reads the file the same way.
    let o = pkc(&["emit", "ir", s(&path)]);
    assert_eq!(code(&o), 1);
    assert_eq!(codes_in(&stderr(&o)), ["PK0009"]);
}

#[test]
fn a_directory_is_pk0009() {
    let dir = TempDir::new("dir");
    let o = pkc(&["check", dir.arg()]);
    assert_eq!(code(&o), 1);
    assert_eq!(codes_in(&stderr(&o)), ["PK0009"], "{}", stderr(&o));
}

#[test]
fn binary_file_is_pk0007() {
    let dir = TempDir::new("binary");
    dir.file("kernel.pk", b"kernel k\xff\xfe\x00\x01(");
    let o = pkc_in(dir.path(), &["check", "kernel.pk"]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK0007"], "{err}");
    assert!(
        err.contains("`kernel.pk` is not UTF-8 text (invalid byte at offset 8)"),
        "{err}"
    );
}

#[test]
fn file_over_16_mib_is_pk0008() {
    let dir = TempDir::new("large");
    let size = (16 << 20) + 1;
    let mut text = b"// ".to_vec();
    text.resize(size, b'x');
    dir.file("huge.pk", &text);
    let o = pkc_in(dir.path(), &["check", "huge.pk"]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK0008"], "{err}");
    assert!(
        err.contains(&format!(
            "`huge.pk` is {size} bytes, more than the 16 MiB limit"
        )),
        "{err}"
    );
    // Exactly 16 MiB is still read (a file of one comment compiles).
    dir.file("limit.pk", &text[..16 << 20]);
    let o = pkc_in(dir.path(), &["check", "limit.pk"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn explain_prints_the_long_form() {
    let o = pkc(&["explain", "PK0301"]);
    assert_eq!(code(&o), 0);
    let e = pk_lang::diag::explain("PK0301").expect("PK0301 exists");
    assert_eq!(stdout(&o), e.render());
    let out = stdout(&o);
    assert!(out.starts_with("PK0301 (block-tiling)\n"), "{out}");
    for section in ["\nWhat\n", "\nWhy\n", "\nExample\n"] {
        assert!(out.contains(section), "{out}");
    }
    assert!(out.contains("(8, 128) tiles"), "{out}");
    // Codes are case-insensitive and the `PK` prefix is optional.
    for spelling in ["pk0301", "0301"] {
        let o = pkc(&["explain", spelling]);
        assert_eq!(code(&o), 0, "{spelling}");
        assert_eq!(stdout(&o), e.render(), "{spelling}");
    }
}

#[test]
fn explain_list_prints_every_code() {
    let o = pkc(&["explain", "--list"]);
    assert_eq!(code(&o), 0);
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    // Every crate's table: front end, CPU reference, PJRT, Mosaic, packages,
    // call binding, kernel metadata builders, library ops, tuner; in code
    // order. The CLI's own usage codes (PK40xx) are not reachable from here
    // and are checked by name below.
    let mut want: Vec<String> = pk_lang::diag::codes::ALL
        .iter()
        .copied()
        .chain(pk_runtime::cpu::EXPLANATIONS.iter())
        .chain(pk_runtime::pjrt::EXPLANATIONS.iter())
        .chain(pk_lowering::mosaic::EXPLANATIONS.iter())
        .chain(pk_runtime::package::EXPLANATIONS.iter())
        .chain(pk_runtime::bind::EXPLANATIONS.iter())
        .chain(pk_runtime::meta::splash::EXPLANATIONS.iter())
        .chain(pk_runtime::meta::gmm::EXPLANATIONS.iter())
        .chain(pk_runtime::ops::EXPLANATIONS.iter())
        .chain(pk_runtime::tune::EXPLANATIONS.iter())
        .map(|e| format!("{}  {}", e.code, e.title))
        .collect();
    want.sort();
    let listed: Vec<String> = lines
        .iter()
        .filter(|l| !l.starts_with("PK40"))
        .cloned()
        .collect();
    assert_eq!(listed, want);
    assert!(lines.contains(&"PK4001  repeated-flag".to_string()));
    let mut codes: Vec<&str> = lines.iter().map(|l| &l[..6]).collect();
    let n = codes.len();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), n, "every code is listed once");
    assert!(lines.contains(&"PK0301  block-tiling".to_string()));
    assert!(lines.contains(&"PK0009  unreadable-file".to_string()));
}

#[test]
fn emit_tokens() {
    let o = pkc(&["emit", "tokens", "kernels/add.pk"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..5],
        [
            "1:1 ModuleDoc(\"Elementwise addition of two f32 arrays.\")",
            "3:1 DocComment(\"`z = x + y`, one (bm, bn) block per grid step.\")",
            "4:1 Kernel",
            "4:8 Ident(\"add\")",
            "4:11 Lt",
        ]
    );
    assert_eq!(lines.last(), Some(&"20:1 RBrace"));
    assert!(lines.contains(&"19:19 Plus"), "{out}");
}

#[test]
fn emit_tokens_of_invalid_text_prints_tokens_and_pk0001() {
    let dir = TempDir::new("tokens");
    let path = dir.file("at.pk", b"let z = a @ b;\n");
    let o = pkc(&["emit", "tokens", s(&path)]);
    assert_eq!(code(&o), 1);
    assert_eq!(
        stdout(&o).lines().collect::<Vec<_>>(),
        [
            "1:1 Let",
            "1:5 Ident(\"z\")",
            "1:7 Eq",
            "1:9 Ident(\"a\")",
            "1:13 Ident(\"b\")",
            "1:14 Semi"
        ]
    );
    assert_eq!(codes_in(&stderr(&o))[0], "PK0001");
}

#[test]
fn emit_ast() {
    let o = pkc(&["emit", "ast", "kernels/add.pk"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("Module {\n"), "{out}");
    for needle in [
        "name: \"add\"",
        "name: \"bm\"",
        "Kernel(",
        "placement: Block {",
        "semantics: Parallel",
    ] {
        assert!(out.contains(needle), "missing {needle}");
    }
}

#[test]
fn emit_ast_of_a_syntax_error_is_pk0003() {
    let o = pkc(&["emit", "ast", "tests/diag/missing_semicolon.pk"]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).is_empty());
    assert_eq!(codes_in(&stderr(&o)), ["PK0003"]);
}

#[test]
fn emit_ir_uses_the_defaults() {
    let o = pkc(&["emit", "ir", "kernels/add.pk"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "kernel add<M = 1024, N = 1024, bm = 256, bn = 512>"
    );
    assert_eq!(lines[1], "  grid (i: 4 parallel, j: 2 parallel)");
    assert!(
        out.contains("input 0 x: f32[1024, 1024] as &0 ref<vmem f32[256, 512]> block [256, 512]"),
        "{out}"
    );
    assert!(out.contains("%4: f32[256, 512] = add %2, %3"), "{out}");
}

#[test]
fn emit_ir_specialises_with_params() {
    let o = pkc(&[
        "emit",
        "ir",
        "kernels/add.pk",
        "-p",
        "M=512",
        "-p",
        "N=1024",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "kernel add<M = 512, N = 1024, bm = 256, bn = 512>"
    );
    assert_eq!(lines[1], "  grid (i: 2 parallel, j: 2 parallel)");
    for name in ["input 0 x", "input 1 y", "output 2 z"] {
        assert!(out.contains(&format!("{name}: f32[512, 1024]")), "{out}");
    }
    assert!(!out.contains("1024, 1024"), "{out}");
    // Values may be integer expressions, and a dtype parameter takes a dtype.
    let o = pkc(&["emit", "ir", "kernels/add.pk", "-p", "bm=2 * 64"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("kernel add<M = 1024, N = 1024, bm = 128, bn = 512>\n"));
    let o = pkc(&["emit", "ir", "kernels/matmul.pk", "-p", "T=f32"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("a: f32[1024, 1024]"), "{}", stdout(&o));
}

#[test]
fn emit_ir_with_an_unknown_param_is_pk0402() {
    let o = pkc(&["emit", "ir", "kernels/add.pk", "-p", "m=512"]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).is_empty());
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK0402"], "{err}");
    assert!(err.contains("no kernel here has a parameter `m`"), "{err}");
    assert!(
        err.contains("parameters: M, N, bm, bn (names are case-sensitive)"),
        "{err}"
    );
    // `check` rejects it the same way.
    let o = pkc(&["check", "kernels/add.pk", "-p", "m=512"]);
    assert_eq!(code(&o), 1);
    assert_eq!(codes_in(&stderr(&o)), ["PK0402"]);
}

#[test]
fn emit_ir_parameter_errors() {
    // A dtype parameter given an integer.
    let o = pkc(&["emit", "ir", "kernels/matmul.pk", "-p", "T=128"]);
    assert_eq!(code(&o), 1);
    assert_eq!(codes_in(&stderr(&o)), ["PK0403"], "{}", stderr(&o));
    // A value that does not parse.
    let o = pkc(&["emit", "ir", "kernels/add.pk", "-p", "bm=4 *"]);
    assert_eq!(code(&o), 1);
    assert_eq!(codes_in(&stderr(&o)), ["PK0403"], "{}", stderr(&o));
    // A block size that breaks the divisibility of the array.
    let o = pkc(&[
        "emit",
        "ir",
        "kernels/add.pk",
        "-p",
        "M=1000",
        "-p",
        "bm=128",
    ]);
    assert_eq!(code(&o), 1);
    assert_eq!(
        codes_in(&stderr(&o)),
        ["PK0311", "PK0311", "PK0311"],
        "{}",
        stderr(&o)
    );
    // No such kernel.
    let o = pkc(&["emit", "ir", "kernels/add.pk", "--kernel", "matmul"]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK0404"], "{err}");
    assert!(err.contains("kernels here: add"), "{err}");
}

#[test]
fn emit_ir_requires_every_parameter() {
    let dir = TempDir::new("params");
    let path = dir.file(
        "add.pk",
        b"kernel add<M, N = 512>(x: f32[M, N] block [8, N] at (i, 0)) -> y: f32[M, N] block [8, N] at (i, 0)\ngrid (i in M / 8 parallel)\n{\n    y[..] = x[..] + 1.0;\n}\n",
    );
    // `check` accepts the unbound size; `emit ir` specialises and needs it.
    let o = pkc(&["check", s(&path)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = pkc(&["emit", "ir", s(&path)]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert_eq!(codes_in(&err), ["PK0401"], "{err}");
    assert!(err.contains("pass it with `-p M=VALUE`"), "{err}");
    let o = pkc(&["emit", "ir", s(&path), "-p", "M=64"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("kernel add<M = 64, N = 512>\n"),
        "{}",
        stdout(&o)
    );
}

/// PK1016's explanation shows the DMA builtins that exist (`copy_start`,
/// `copy_wait`), not Pallas's names for them.
#[test]
fn explain_pk1016_uses_the_dma_builtins() {
    let o = pkc(&["explain", "PK1016"]);
    assert_eq!(code(&o), 0);
    let out = stdout(&o);
    assert!(
        out.contains("copy_start(") && out.contains("copy_wait("),
        "{out}"
    );
    assert!(
        !out.contains("dma_start") && !out.contains("dma_wait"),
        "{out}"
    );
}
