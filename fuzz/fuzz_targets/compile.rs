//! Fuzz target: the whole front end (lexer, parser, resolver, checker and
//! IR verifier, and the editor analysis of `pkc lsp`) on arbitrary UTF-8.
//! It must never panic, and every failure
//! must be coded diagnostics with spans inside their source files that
//! render as text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pk_lang::diag::{codes, RenderStyle};
use pk_lang::{Options, Target};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first byte picks the target, so every generation's rules are
    // reached; both the checking and the specialising modes run.
    let target = Target::ALL[usize::from(data.first().copied().unwrap_or(0)) % Target::ALL.len()];
    for specialise in [false, true] {
        let opts = Options {
            target,
            specialise,
            ..Options::default()
        };
        let Err(f) = pk_lang::compile_source("fuzz.pk", text, &opts) else {
            continue;
        };
        assert!(
            f.diags.iter().any(|d| d.is_error()),
            "failure without an error"
        );
        let nfiles = f.sources.files().count();
        for d in &f.diags {
            assert!(
                codes::ALL.iter().any(|e| std::ptr::eq(*e, d.code)),
                "unregistered code {}",
                d.code.code
            );
            assert_ne!(
                d.code.code,
                codes::INTERNAL.code,
                "internal error: {}",
                d.message
            );
            let spans = std::iter::once(&d.span).chain(d.secondary.iter().map(|(s, _)| s));
            for s in spans {
                assert!(
                    (s.file.0 as usize) < nfiles,
                    "{}: span in an unknown file",
                    d.code.code
                );
                let src = &f.sources.get(s.file).text;
                let (a, b) = (s.start as usize, s.end as usize);
                assert!(
                    a <= b && b <= src.len() && src.is_char_boundary(a) && src.is_char_boundary(b),
                    "{}: span {a}..{b} outside its {}-byte file: {}",
                    d.code.code,
                    src.len(),
                    d.message
                );
            }
        }
        let _ = f.render(RenderStyle::Plain);
    }
    // The editor analysis (`pkc lsp`) answers every query on the same
    // text, at the start, the middle, the end and past the end.
    let a = pk_lang::analysis::Analysis::run(
        "fuzz.pk",
        text,
        None,
        &pk_lang::analysis::Workspace::default(),
    );
    let n = text.len() as u32;
    for o in [0, n / 2, n, n + 1] {
        let _ = a.hover(o);
        let _ = a.definition(o);
        let _ = a.references(o, true);
        let _ = a.complete(o);
        let _ = a.signature(o);
    }
    let _ = a.let_hints();
    for f in &a.diags {
        let _ = a.quick_fix(&f.diag);
    }
    let _ = a.tokens();
});
