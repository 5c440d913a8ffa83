//! A compile session: parse and resolve once, check many times, re-parse
//! only what an edit changed.

use pk_lang::ir::ParamValue;
use pk_lang::{Options, Session, Target};
use std::path::{Path, PathBuf};

const HELPER: &str = "/// Doubles `x`.\nfn twice(x) {\n    x + x\n}\n";

const ROOT: &str = "use helper;
use std::math;

kernel scale<M = 1024, bm = 256>(
    x: f32[M, 128] block [bm, 128] at (i, 0),
) -> y: f32[M, 128] block [bm, 128] at (i, 0)
grid (i in M / bm parallel)
{
    y[..] = math::clamp(helper::twice(x[..]), 0.0, 1.0);
}
";

/// A fresh directory holding `helper.pk` and `root.pk`.
fn project(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pk-session-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("helper.pk"), HELPER).unwrap();
    std::fs::write(dir.join("root.pk"), ROOT).unwrap();
    dir
}

fn opts(target: Target, params: &[(&str, &str)]) -> Options {
    Options {
        target,
        params: params
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        specialise: true,
        ..Options::default()
    }
}

fn steps(s: &Session, o: &Options) -> i64 {
    let m = s
        .check(o)
        .unwrap_or_else(|f| panic!("{}", f.render(pk_lang::diag::RenderStyle::Plain)));
    m.kernels[0].grid[0].extent.known().expect("a known extent")
}

#[test]
fn one_parse_serves_every_parameter_set_and_target() {
    let dir = project("sets");
    let s = Session::open(&dir.join("root.pk")).expect("reads");
    // root.pk, helper.pk and std/math.pk.
    assert_eq!(s.parses(), 3);
    assert_eq!(s.resolves(), 3);
    assert_eq!(s.kernels(), vec!["scale"]);
    let files = s.sources().files().count();
    // M / bm steps, by hand: 1024/256, 2048/128, 4096/512.
    assert_eq!(steps(&s, &opts(Target::V5e, &[])), 4);
    assert_eq!(
        steps(&s, &opts(Target::V6e, &[("M", "2048"), ("bm", "128")])),
        16
    );
    assert_eq!(
        steps(&s, &opts(Target::V4, &[("M", "4096"), ("bm", "512")])),
        8
    );
    // The `-p` overlay of one call is not the next call's.
    assert_eq!(steps(&s, &opts(Target::V5e, &[])), 4);
    assert_eq!(s.parses(), 3);
    assert_eq!(s.resolves(), 3);
    assert_eq!(s.sources().files().count(), files);
    let ps = s
        .params(&opts(Target::V5e, &[("bm", "64")]))
        .expect("params");
    let bm = ps[0].1.iter().find(|p| p.name == "bm").expect("bm");
    assert!(matches!(bm.value, ParamValue::Int(64)));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_edit_parses_and_resolves_only_what_changed() {
    let dir = project("edit");
    let mut s = Session::open(&dir.join("root.pk")).expect("reads");
    assert_eq!((s.parses(), s.resolves()), (3, 3));
    // The root changes: only it is parsed and resolved again.
    s.edit(&ROOT.replace("bm = 256", "bm = 512"));
    assert_eq!((s.parses(), s.resolves()), (4, 4));
    assert_eq!(steps(&s, &opts(Target::V5e, &[])), 2);
    // An edit that changes nothing parses nothing.
    s.reload();
    assert_eq!((s.parses(), s.resolves()), (4, 4));
    // A used module changes (an editor's unsaved buffer): it is parsed
    // again, and resolved with the root that uses it; std is neither.
    let helper = dir.join("helper.pk");
    s.set_module(&helper, "fn twice(x) {\n    2.0 * x\n}\n");
    assert_eq!((s.parses(), s.resolves()), (5, 6));
    assert_eq!(steps(&s, &opts(Target::V5e, &[])), 2);
    // Back to the disk's text.
    s.clear_module(&helper);
    assert_eq!(s.parses(), 6);
    // An error after an edit is reported with the edited text's spans, and
    // fixing it recovers.
    s.edit(&ROOT.replace("helper::twice", "helper::thrice"));
    let f = s.check(&opts(Target::V5e, &[])).expect_err("no thrice");
    let d = &f.diags[0];
    let text = &f.sources.get(d.span.file).text;
    assert_eq!(
        &text[d.span.start as usize..d.span.end as usize],
        "helper::thrice"
    );
    s.edit(ROOT);
    assert_eq!(steps(&s, &opts(Target::V5e, &[])), 4);
    // Std was parsed once, ever; helper.pk three times (the disk's text,
    // the buffer's, the disk's); the root four times (three edits).
    assert_eq!(s.parses(), 1 + 3 + 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn threads_check_one_session_at_once() {
    let dir = project("threads");
    let s = Session::open(&dir.join("root.pk")).expect("reads");
    let got: Vec<i64> = std::thread::scope(|sc| {
        let hs: Vec<_> = [64, 128, 256, 512]
            .iter()
            .map(|bm| {
                let s = &s;
                sc.spawn(move || steps(s, &opts(Target::V6e, &[("bm", &bm.to_string())])))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(got, vec![16, 8, 4, 2]);
    assert_eq!(s.parses(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_file_is_a_failure_not_a_session() {
    let f = Session::open(Path::new("/nonexistent/pk/none.pk")).expect_err("no file");
    assert!(f.diags[0].code.code.starts_with("PK"));
}
