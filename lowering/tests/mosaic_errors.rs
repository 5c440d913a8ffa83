//! The Mosaic back end's errors: what it refuses, with which code and where.

use miette::Diagnostic;
use pk_lang::Options;
use pk_lowering::mosaic::{self, MosaicError, EXPLANATIONS};

fn lower(src: &str, specialise: bool) -> Result<mosaic::MosaicModule, MosaicError> {
    let opts = Options {
        specialise,
        ..Options::default()
    };
    let module = pk_lang::compile_source("k.pk", src, &opts)
        .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    mosaic::lower(&module, &module.kernels[0], &mosaic::Options::default())
}

fn code(e: &MosaicError) -> String {
    e.code().map(|c| c.to_string()).unwrap_or_default()
}

#[test]
fn unspecialised_kernels_are_refused() {
    let src = "kernel k<M>(x: f32[M, 128] block [8, 128] at (i, 0)) -> y: f32[M, 128] block [8, 128] at (i, 0)\n\
               grid (i in M / 8 parallel)\n{ y[..] = x[..]; }\n";
    let e = lower(src, false).expect_err("M has no value");
    assert_eq!(code(&e), "PK2101");
    assert!(e.to_string().contains("parameter `M` has no value"), "{e}");
    assert!(e.help().is_some());
}

#[test]
fn integer_arg_max_is_refused_by_the_checker_at_its_source_line() {
    // Mosaic's `reduce_index` takes f32 only; the checker refuses the rest
    // before lowering, so `PK2103` stays a guard that sources never reach.
    let src = "kernel k<M = 16>(x: i32[M, 128] block [16, 128] at (0, 0)) -> y: i32[M, 128] block [16, 128] at (0, 0)\n\
               grid (i in 1 arbitrary)\n{\n    y[..] = broadcast(argmax(x[..], axis=1, keepdims=true), [16, 128]);\n}\n";
    let opts = Options {
        specialise: true,
        ..Options::default()
    };
    let f = pk_lang::compile_source("k.pk", src, &opts).expect_err("integer argmax");
    assert_eq!(
        f.diags.len(),
        1,
        "{}",
        f.render(pk_lang::diag::RenderStyle::Plain)
    );
    let d = &f.diags[0];
    assert_eq!(d.code.code, "PK0209");
    assert_eq!(f.sources.location(d.span).1, 4);
}

#[test]
fn a_lowered_kernel_is_deterministic() {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/add.pk"))
        .expect("kernels/add.pk is readable");
    let a = lower(&src, true).expect("add lowers");
    let b = lower(&src, true).expect("add lowers");
    assert_eq!(a, b);
    let no_locs = {
        let opts = Options {
            specialise: true,
            ..Options::default()
        };
        let m = pk_lang::compile_source("add.pk", &src, &opts).expect("add compiles");
        mosaic::lower(&m, &m.kernels[0], &mosaic::Options { locations: false }).expect("add lowers")
    };
    assert!(!no_locs.text.contains("loc("));
    assert!(a.text.contains("loc(\"k.pk\":"));
}

#[test]
fn every_code_has_an_explanation() {
    let at = ("k.pk".to_string(), 1, 1);
    let all = [
        MosaicError::NotSpecialised {
            kernel: "k".into(),
            detail: String::new(),
        },
        MosaicError::InvalidIr {
            kernel: "k".into(),
            message: String::new(),
            at: at.clone(),
        },
        MosaicError::Unsupported {
            what: String::new(),
            at: at.clone(),
        },
        MosaicError::Build {
            op: String::new(),
            message: String::new(),
            at,
        },
        MosaicError::Verify {
            kernel: "k".into(),
            message: String::new(),
        },
        MosaicError::Serialize {
            kernel: "k".into(),
            message: String::new(),
        },
    ];
    for e in &all {
        let c = code(e);
        assert!(c.starts_with("PK21"), "{c}");
        assert!(
            EXPLANATIONS.iter().any(|x| x.code == c),
            "{c} has no explanation"
        );
    }
    assert_eq!(EXPLANATIONS.len(), all.len());
}
