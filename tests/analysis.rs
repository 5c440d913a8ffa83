//! The editor analysis (`pk_lang::analysis`, behind `pkc lsp`): types at
//! positions, refs per target, parameter values and origins, definitions
//! and references across modules, completion, signatures, inlay hints,
//! quick fixes, and the workspace file. Expected values are derived by
//! hand from the kernel below.

mod common;

use common::{code, pkc_in, stderr, TempDir};
use pk_lang::analysis::{complete::ItemKind, Analysis, Workspace};
use pk_lang::Target;

const SRC: &str = "use std::nn;

/// Doubles a tile.
fn twice(x) {
    x * 2.0
}

kernel k<M = 256, bm = 128>(
    x: f32[M, 256] block [bm, 256] at (i, 0),
) -> y: f32[M, 256] block [bm, 256] at (i, 0)
grid (i in M / bm parallel)
{
    let v = x[..];
    let w = twice(v);
    y[..] = nn::relu(w);
}
";

fn at(src: &str, needle: &str, nth: usize) -> u32 {
    let mut from = 0;
    for _ in 0..nth {
        from += src[from..].find(needle).expect("needle is in the source") + 1;
    }
    (from + src[from..].find(needle).expect("needle is in the source")) as u32
}

fn run(src: &str, ws: &Workspace) -> Analysis {
    Analysis::run("k.pk", src, None, ws)
}

#[test]
fn hover_shows_the_shape_of_a_let_and_of_an_expression() {
    let a = run(SRC, &Workspace::default());
    assert!(a.diags.is_empty(), "{:?}", a.diags);
    // `x[..]` is a bm x 256 f32 block: 128 x 256.
    let (_, md) = a.hover(at(SRC, "v = x", 0)).expect("hover on `v`");
    assert!(md.contains("local"), "{md}");
    assert!(md.contains("`f32[128, 256]`"), "{md}");
    let (_, t) = a
        .type_at(at(SRC, "x[..]", 0) + 2)
        .expect("a type inside `x[..]`");
    assert!(
        t.contains("f32[128, 256]") || t.contains("vmem f32[128, 256]"),
        "{t}"
    );
}

#[test]
fn hover_on_an_operand_gives_its_block_space_and_vmem_bytes_per_target() {
    let ws = Workspace {
        targets: vec![Target::V5e, Target::V6e],
        ..Workspace::default()
    };
    let a = run(SRC, &ws);
    let (_, md) = a.hover(at(SRC, "x: f32", 0)).expect("hover on `x`");
    // 128 x 256 f32 = 131072 bytes, twice that double-buffered.
    assert!(
        md.contains("v5e: `ref<vmem f32[128, 256]>`, 131072 B of VMEM (262144 B double-buffered)"),
        "{md}"
    );
    assert!(md.contains("v6e: `ref<vmem f32[128, 256]>`"), "{md}");
}

#[test]
fn hover_on_a_parameter_gives_its_value_and_origin() {
    let a = run(SRC, &Workspace::default());
    let (_, md) = a.hover(at(SRC, "bm = 128", 0)).expect("hover on `bm`");
    assert!(md.contains("`bm = 128` (its default)"), "{md}");
    let ws = Workspace {
        path: Some("/w/pk.toml".into()),
        targets: vec![Target::V5e],
        params: vec![vec![("bm".into(), "64".into())]],
    };
    let a = run(SRC, &ws);
    // In the grid `M / bm` the use of `bm` is the parameter too.
    let (_, md) = a
        .hover(at(SRC, "bm parallel", 0))
        .expect("hover on a use of `bm`");
    assert!(md.contains("`bm = 64` (from `/w/pk.toml`)"), "{md}");
}

#[test]
fn hover_on_a_builtin_gives_its_signature_and_doc() {
    let src = SRC.replace("let v = x[..];", "let v = exp(x[..]);");
    let a = run(&src, &Workspace::default());
    let (_, md) = a.hover(at(&src, "exp(", 0) + 1).expect("hover on `exp`");
    assert!(md.contains("exp(x)"), "{md}");
    assert!(md.contains("e^x"), "{md}");
}

#[test]
fn hover_on_a_diagnostic_gives_its_explanation() {
    let src = SRC.replace("let w = twice(v);", "let w = twice(vv);");
    let a = run(&src, &Workspace::default());
    assert_eq!(a.diags.len(), 1);
    assert_eq!(a.diags[0].diag.code.code, "PK0101");
    let (_, md) = a.hover(at(&src, "vv", 0)).expect("hover on `vv`");
    assert!(md.contains("**PK0101** (unknown-name)"), "{md}");
}

#[test]
fn definition_and_references_of_locals_functions_params_and_std() {
    let a = run(SRC, &Workspace::default());
    // `twice(v)`: the call names the function declared on line 4.
    let d = a
        .definition(at(SRC, "twice(v)", 0))
        .expect("definition of `twice`");
    assert_eq!(d.start, at(SRC, "twice(x)", 0));
    // `v` is declared once and used once.
    let refs = a.references(at(SRC, "v = x", 0), true);
    let starts: Vec<u32> = refs.iter().map(|s| s.start).collect();
    assert_eq!(starts, vec![at(SRC, "v = x", 0), at(SRC, "v);", 0)]);
    // `bm`: declared in the header, used in two blocks and the grid.
    assert_eq!(a.references(at(SRC, "bm = 128", 0), false).len(), 3);
    // `nn::relu` is declared in the standard library's nn.pk.
    let d = a
        .definition(at(SRC, "relu", 0))
        .expect("definition of `relu`");
    let file = a.sources.get(d.file);
    assert_eq!(file.name, "std/nn.pk");
    assert_eq!(&file.text[d.start as usize..d.end as usize], "relu");
}

#[test]
fn completion_offers_module_items_builtins_dtypes_and_names_in_scope() {
    let a = run(SRC, &Workspace::default());
    let after = at(SRC, "relu", 0);
    let items = a.complete(after);
    let labels: Vec<&str> = items.iter().map(|c| c.label.as_str()).collect();
    assert!(
        labels.contains(&"softmax_rows") && labels.contains(&"gelu"),
        "{labels:?}"
    );
    assert!(!labels.contains(&"exp"), "only nn's items after `nn::`");
    let inside = at(SRC, "y[..] =", 0);
    let items = a.complete(inside);
    let find = |l: &str| items.iter().find(|c| c.label == l);
    assert_eq!(find("exp").map(|c| c.kind), Some(ItemKind::Builtin));
    assert_eq!(find("bf16").map(|c| c.kind), Some(ItemKind::Dtype));
    assert_eq!(find("bm").map(|c| c.kind), Some(ItemKind::Param));
    assert_eq!(find("w").map(|c| c.detail.as_str()), Some("f32[128, 256]"));
}

#[test]
fn signature_help_names_the_argument_being_typed() {
    let src = SRC.replace("let v = x[..];", "let v = dot(x[..], ");
    let a = run(&src, &Workspace::default());
    let (label, params, active) = a
        .signature(at(&src, "dot(x[..], ", 0) + 11)
        .expect("inside dot(");
    assert!(label.starts_with("dot(a, b"), "{label}");
    assert_eq!(params[0], "a");
    assert_eq!(active, 1);
}

#[test]
fn inlay_hints_show_the_shapes_of_untyped_lets() {
    let a = run(SRC, &Workspace::default());
    let hints: Vec<(u32, String)> = a
        .let_hints()
        .into_iter()
        .map(|(s, t)| (s.start, t))
        .collect();
    assert_eq!(
        hints,
        vec![
            (at(SRC, "v = x", 0), "f32[128, 256]".to_string()),
            (at(SRC, "w = twice", 0), "f32[128, 256]".to_string()),
        ]
    );
}

#[test]
fn diagnostics_name_the_targets_and_parameter_sets_that_report_them() {
    // bm = 4 breaks the (8, 128) tiling (4 rows, not a multiple of 8); bm = 128 does not.
    let ws = Workspace {
        path: None,
        targets: vec![Target::V5e],
        params: vec![
            vec![("bm".into(), "128".into())],
            vec![("bm".into(), "4".into())],
        ],
    };
    let a = run(SRC, &ws);
    let codes: Vec<(&str, Vec<String>)> = a
        .diags
        .iter()
        .map(|f| (f.diag.code.code, f.contexts.clone()))
        .collect();
    assert!(!codes.is_empty());
    for (c, cx) in &codes {
        assert_eq!(*c, "PK0301", "{codes:?}");
        assert_eq!(cx, &vec!["v5e bm=4".to_string()]);
    }
}

#[test]
fn the_workspace_file_is_parsed_and_bad_ones_are_pk0011() {
    let w = Workspace::parse("targets = [\"v5e\", \"v6e\"]\n[[params]]\nM = 1024\nT = \"bf16\"\n")
        .expect("a valid pk.toml");
    assert_eq!(w.targets, vec![Target::V5e, Target::V6e]);
    assert_eq!(
        w.params,
        vec![vec![
            ("M".to_string(), "1024".to_string()),
            ("T".to_string(), "bf16".to_string())
        ]]
    );
    assert!(Workspace::parse("targets = [\"v9\"]").is_err());
    assert!(Workspace::parse("colour = 1").is_err());
    let dir = std::env::temp_dir().join(format!("pk-analysis-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).expect("temp dir");
    std::fs::write(dir.join("pk.toml"), "targets = 3").expect("write");
    let e = Workspace::find(&dir.join("sub")).expect_err("a bad pk.toml");
    assert_eq!(e.code.code, "PK0011");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn no_query_panics_on_any_prefix_of_a_kernel() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/flash.pk"))
        .expect("flash.pk");
    let ws = Workspace::default();
    let mut cut = 0;
    while cut < text.len() {
        if text.is_char_boundary(cut) {
            let a = run(&text[..cut], &ws);
            for o in [0, cut as u32 / 2, cut as u32] {
                let _ = a.hover(o);
                let _ = a.definition(o);
                let _ = a.complete(o);
                let _ = a.signature(o);
            }
            let _ = a.let_hints();
            let _ = a.tokens();
        }
        cut += 97;
    }
}

#[test]
fn pkc_check_checks_what_pk_toml_asks_for() {
    let dir = TempDir::new("pktoml");
    dir.file(
        "k.pk",
        SRC.replace("use std::nn;\n", "")
            .replace("nn::relu(w)", "w")
            .as_bytes(),
    );
    // Two targets; the second parameter set breaks the tiling (4 rows).
    dir.file(
        "pk.toml",
        b"targets = [\"v5e\", \"v6e\"]\n[[params]]\nbm = 128\n[[params]]\nbm = 4\nunused = 1\n",
    );
    let o = pkc_in(dir.path(), &["check", "k.pk"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(err.contains("k.pk: ok for v5e bm=128"), "{err}");
    assert!(err.contains("k.pk: ok for v6e bm=128"), "{err}");
    assert!(err.contains("k.pk: errors for v5e bm=4"), "{err}");
    assert!(err.contains("k.pk: errors for v6e bm=4"), "{err}");
    assert!(err.contains("PK0301"), "{err}");
    // A flag on the command line wins over the file.
    let o = pkc_in(dir.path(), &["check", "k.pk", "-t", "v6e"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // A broken pk.toml is PK0011.
    dir.file("pk.toml", b"targets = [\"v9\"]\n");
    let o = pkc_in(dir.path(), &["check", "k.pk"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("PK0011"), "{}", stderr(&o));
}

#[test]
fn an_edit_analyses_on_the_same_session_without_parsing_std_again() {
    let mut s = pk_lang::Session::from_text("k.pk", SRC, None);
    // The root, std::nn and the std module nn uses.
    let (parses, resolves) = (s.parses(), s.resolves());
    assert_eq!((parses, resolves), (3, 3));
    let a = Analysis::of(&s, &Workspace::default());
    assert!(a.diags.is_empty(), "{:?}", a.diags);
    let edited = SRC.replace("let w = twice(v);", "let w = twice(vv);");
    s.edit(&edited);
    // Only the root file is parsed and resolved again.
    assert_eq!((s.parses(), s.resolves()), (4, 4));
    let a = Analysis::of(&s, &Workspace::default());
    let codes: Vec<&str> = a.diags.iter().map(|f| f.diag.code.code).collect();
    assert_eq!(codes, vec!["PK0101"]);
    // Definition into std still answers from the kept module.
    let d = a
        .definition(at(&edited, "relu", 0))
        .expect("definition of `relu`");
    assert_eq!(a.sources.get(d.file).name, "std/nn.pk");
}

#[test]
fn quick_fixes_respell_an_unknown_name_and_round_a_block_to_the_tiling() {
    // `valeu` is one transposition (two edits) from `value`, five letters:
    // allowed is one edit in four letters, so it is not offered; `valu` is
    // one edit from `value`.
    let src = SRC.replace(
        "let w = twice(v);",
        "let value = v;\n    let w = twice(valu);",
    );
    let a = run(&src, &Workspace::default());
    let [f] = a.diags.as_slice() else {
        panic!("one diagnostic: {:?}", a.diags)
    };
    assert_eq!(f.diag.code.code, "PK0101");
    assert_eq!(
        a.quick_fix(&f.diag),
        Some(("replace with `value`".to_string(), "value".to_string()))
    );
    let far = SRC.replace("let w = twice(v);", "let w = twice(qqq);");
    let a = run(&far, &Workspace::default());
    assert_eq!(
        a.quick_fix(&a.diags[0].diag),
        None,
        "nothing is spelt like `qqq`"
    );
    // A block of 4 rows breaks the (8, 128) tiling: rounded up to 8.
    let src = SRC.replace(
        "block [bm, 256] at (i, 0),\n)",
        "block [4, 256] at (i, 0),\n)",
    );
    let a = run(&src, &Workspace::default());
    let fixes: Vec<(String, String)> = a
        .diags
        .iter()
        .filter_map(|f| a.quick_fix(&f.diag))
        .collect();
    assert_eq!(
        fixes,
        vec![("round the block size up to 8".to_string(), "8".to_string())],
        "{:?}",
        a.diags
    );
}

#[test]
fn references_to_a_std_function_include_its_declaration_in_std() {
    let a = run(SRC, &Workspace::default());
    let refs = a.references(at(SRC, "relu", 0), true);
    let names: Vec<&str> = refs
        .iter()
        .map(|s| a.sources.get(s.file).name.as_str())
        .collect();
    assert_eq!(names, vec!["std/nn.pk", "k.pk"]);
    assert_eq!(refs[1].start, at(SRC, "relu", 0));
}
