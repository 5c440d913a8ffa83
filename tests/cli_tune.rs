//! `pkc tune` end to end: the space, pruning and libtpu's agreement with
//! the checker on five targets, the JSON report, `--seed` sampling, the
//! cache (a hit, a miss after the source changes) and `--tuned` in `pkc
//! build` and `pkc run`, `--plot`, and the errors of the command (counting
//! mode, `--in`, is in tests/cli_tune_count.rs; the cache's rules,
//! `--timeout` and the types of the JSON in tests/cli_tune_cache.rs).
//!
//! Tests that compile with libtpu print a notice and pass when it is not
//! installed, unless `CI=true`.

mod common;

use common::{code, have_libtpu, pkc, root, stderr, stdout, TempDir};
use std::path::Path;
use std::process::{Command, Output};

/// `pkc` with `PK_TUNE_CACHE` set to `cache`.
fn pkc_cached(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pkc"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .env("PK_TUNE_CACHE", cache)
        .env_remove("PK_LIBTPU")
        .output()
        .expect("pkc runs")
}

fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

/// A copy whose block shape is tuned; 16x256 like tests/data/add_16x256.
const COPY: &str = "\
kernel copy<
    M = 16,
    N = 256,
    bm = 8 in [8, 16],
    bn = 128 in [128, 256],
>(
    x: f32[M, N] block [bm, bn] at (i, j),
) -> y: f32[M, N] block [bm, bn] at (i, j)
grid (i in M / bm parallel, j in N / bn parallel)
where bm * bn <= 2048
{
    y[..] = x[..];
}
";

#[test]
fn every_configuration_the_checker_keeps_compiles_with_libtpu_on_five_targets() {
    if !have_libtpu() {
        return;
    }
    // bm, bn, bk in pow2(128, 1024) over a 512^3 matmul: 64 configurations
    // per target, of which the checker rejects the blocks larger than the
    // arrays; libtpu must accept every one it keeps.
    let cache = TempDir::new("tune-agree");
    let o = pkc_cached(
        cache.path(),
        &[
            "tune",
            "kernels/matmul.pk",
            "-p",
            "M=512",
            "-p",
            "N=512",
            "-p",
            "K=512",
            "--target",
            "all",
            // The agreement needs libtpu's compile, not its schedule: the
            // roofline ranks while the compiles run in parallel.
            "--eval",
            "model",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let reports = json_lines(&o);
    assert_eq!(reports.len(), 5, "one report per target");
    for r in &reports {
        let t = r["target"].as_str().expect("a target");
        assert_eq!(r["space"], 64, "{t}");
        assert_eq!(r["aot"], true, "{t}");
        assert_eq!(r["tried"], 64, "{t}: the space is below the budget");
        let pruned: u64 = r["pruned"]
            .as_object()
            .expect("counts per code")
            .values()
            .map(|n| n.as_u64().expect("a count"))
            .sum();
        // 3 of 4 block sizes fit 512 per axis: 27 configurations remain.
        assert_eq!(pruned, 64 - 27, "{t}: {}", r["pruned"]);
        assert_eq!(
            r["refused"].as_array().map(Vec::len),
            Some(0),
            "{t}: {}",
            r["refused"]
        );
        assert_eq!(r["ranked"], 27, "{t}");
        let best = &r["best"][0];
        assert!(
            best["generated_code_bytes"].as_u64().unwrap_or(0) > 0,
            "{t}: {best}"
        );
    }
}

/// Block sizes `(bq, bk)`.
type Blocks = Vec<(String, String)>;

/// The configurations of one report the checker pruned.
fn pruned_blocks(r: &serde_json::Value) -> Blocks {
    let mut v: Blocks = r["points"]
        .as_array()
        .expect("points")
        .iter()
        .filter(|p| p["status"] == "pruned")
        .map(|p| {
            assert_eq!(p["code"], "PK0306", "{p}");
            let get = |n: &str| p["params"][n].as_i64().expect("a value").to_string();
            (get("bq"), get("bk"))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_flash_attention_configuration_the_checker_keeps_compiles_with_libtpu() {
    if !have_libtpu() {
        return;
    }
    // bq, bk in pow2(128, 2048) at the defaults (B1 H8 S=SK=2048 D128
    // bf16): 25 configurations per kernel. Only v4 (16 MiB of VMEM) cannot
    // hold the largest: the f32 scores of bq x bk (8 MiB at 2048 x 1024)
    // beside the blocks and scratch. The forward kernel on all five
    // targets, the backward ones on v4, where their limits lie.
    let cache = TempDir::new("tune-agree-flash");
    let big = |pairs: &[(&str, &str)]| -> Blocks {
        let mut v: Blocks = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        v.sort();
        v
    };
    let cases: [(&str, &str, Blocks); 3] = [
        (
            "flash_attention",
            "all",
            big(&[("2048", "1024"), ("2048", "2048")]),
        ),
        (
            "flash_attention_bwd_dq",
            "v4",
            big(&[("2048", "1024"), ("2048", "2048")]),
        ),
        (
            "flash_attention_bwd_dkv",
            "v4",
            big(&[("1024", "2048"), ("2048", "1024"), ("2048", "2048")]),
        ),
    ];
    for (kernel, targets, on_v4) in cases {
        let o = pkc_cached(
            cache.path(),
            &[
                "tune",
                "kernels/flash.pk",
                "-k",
                kernel,
                "--target",
                targets,
                "--eval",
                "model",
                "--json",
            ],
        );
        assert_eq!(code(&o), 0, "{kernel}: {}", stderr(&o));
        for r in &json_lines(&o) {
            let t = r["target"].as_str().expect("a target");
            assert_eq!(r["tried"], 25, "{kernel} {t}");
            assert_eq!(
                r["refused"].as_array().map(Vec::len),
                Some(0),
                "{kernel} {t}: {}",
                r["refused"]
            );
            let want = if t == "v4" { on_v4.clone() } else { Vec::new() };
            assert_eq!(pruned_blocks(r), want, "{kernel} {t}");
            assert_eq!(r["ranked"], 25 - want.len(), "{kernel} {t}");
        }
    }
}

/// A copy over a 4 x 4 space of which the `where` keeps 6.
const CONSTRAINED: &str = "\
kernel copy<
    M = 64,
    N = 1024,
    bm = 8 in [8, 16, 32, 64],
    bn = 128 in [128, 256, 512, 1024],
>(
    x: f32[M, N] block [bm, bn] at (i, j),
) -> y: f32[M, N] block [bm, bn] at (i, j)
grid (i in M / bm parallel, j in N / bn parallel)
where bm * bn <= 4096
{
    y[..] = x[..];
}
";

#[test]
fn the_where_constraints_filter_the_space_before_the_budget_samples_it() {
    let dir = TempDir::new("tune-where");
    let src = dir.file("copy.pk", CONSTRAINED.as_bytes());
    let tune = |budget: &str| {
        let o = pkc_cached(
            &dir.path().join("cache"),
            &[
                "tune",
                src.to_str().expect("UTF-8 path"),
                "--no-aot",
                "--force",
                "--json",
                "--budget",
                budget,
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        (json_lines(&o).remove(0), stderr(&o))
    };
    // bm * bn <= 4096, counted by hand: bm = 8 with bn 128, 256, 512;
    // bm = 16 with 128, 256; bm = 32 with 128. Six of sixteen.
    let legal = [
        (8, 128),
        (8, 256),
        (8, 512),
        (16, 128),
        (16, 256),
        (32, 128),
    ];
    let tried = |r: &serde_json::Value| -> Vec<(i64, i64)> {
        let mut v: Vec<(i64, i64)> = r["points"]
            .as_array()
            .expect("points")
            .iter()
            .map(|p| {
                let get = |n: &str| p["params"][n].as_i64().expect("a number");
                (get("bm"), get("bn"))
            })
            .collect();
        v.sort();
        v
    };
    // A budget over the legal count tries every legal configuration and
    // nothing else.
    let (r, err) = tune("64");
    assert_eq!(r["space"], 16, "{r}");
    assert_eq!(tried(&r), legal, "{r}");
    assert_eq!(r["ranked"], 6, "{r}");
    assert_eq!(r["pruned"], serde_json::json!({}), "{r}");
    assert!(
        err.contains(
            "the `where` constraints exclude 10 of the 16 configurations considered; 6 tried"
        ),
        "{err}"
    );
    // A budget of 4 draws 4 legal ones, the default among them, whatever
    // the seed: no slot is spent on a configuration the `where` refuses.
    for seed in ["0", "1", "2", "3"] {
        let o = pkc_cached(
            &dir.path().join("cache"),
            &[
                "tune",
                src.to_str().expect("UTF-8 path"),
                "--no-aot",
                "--force",
                "--json",
                "--budget",
                "4",
                "--seed",
                seed,
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let r = json_lines(&o).remove(0);
        let got = tried(&r);
        assert_eq!(got.len(), 4, "seed {seed}: {r}");
        assert_eq!(r["ranked"], 4, "seed {seed}: {r}");
        assert!(got.contains(&(8, 128)), "seed {seed}: the default: {got:?}");
        assert!(
            got.iter().all(|c| legal.contains(c)),
            "seed {seed}: {got:?}"
        );
    }
}

#[test]
fn tune_caches_the_best_and_build_and_run_use_it_until_the_source_changes() {
    if !have_libtpu() {
        return;
    }
    let dir = TempDir::new("tune-cache");
    let cache = dir.path().join("cache");
    let src = dir.file("copy.pk", COPY.as_bytes());
    let src_arg = src.to_str().expect("UTF-8 path");
    let o = pkc_cached(&cache, &["tune", src_arg, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = &json_lines(&o)[0];
    // bm=16 bn=256 breaks the `where` (4096 > 2048): it is filtered out
    // before the space is sampled, so three configurations are tried and
    // ranked, and none is pruned.
    assert_eq!(r["tried"], 3, "{r}");
    assert_eq!(r["pruned"], serde_json::json!({}), "{r}");
    assert_eq!(r["ranked"], 3);
    let best = r["best"][0]["params"].clone();
    let cached = r["cache"].as_str().expect("the cache file");
    assert!(Path::new(cached).starts_with(&cache), "{cached}");
    let entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cached).expect("readable")).expect("JSON");
    // With libtpu, the schedule is the default evaluator.
    assert_eq!(entry["key"]["evaluator"], "schedule");
    assert_eq!(&entry["report"], r, "the entry holds the report printed");
    let want = format!("bm={} bn={}", best["bm"], best["bn"]);

    // A hit: build names the package after the tuned values and says so.
    let out = dir.path().join("out");
    let o = pkc_cached(
        &cache,
        &["build", "--tuned", src_arg, "-o", out.to_str().unwrap()],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("(schedule): {want}")),
        "{}",
        stderr(&o)
    );
    let pkg = format!("copy-bm{}-bn{}", best["bm"], best["bn"]);
    assert!(
        out.join(&pkg).is_dir(),
        "{pkg} in {:?}",
        std::fs::read_dir(&out).map(|d| d.count())
    );

    // run --tuned computes the copy with the tuned blocks.
    let y = dir.path().join("y.npy");
    let o = pkc_cached(
        &cache,
        &[
            "run",
            "--tuned",
            src_arg,
            "--in",
            "x=tests/data/add_16x256/x.npy",
            "--out",
            &format!("y={}", y.display()),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    let x = pk_runtime::cpu::npy::read(&root().join("tests/data/add_16x256/x.npy")).expect("x");
    let got = pk_runtime::cpu::npy::read(&y).expect("y");
    assert_eq!(
        pk_runtime::cpu::npy::values(&got, pk_lang::ir::DType::F32),
        pk_runtime::cpu::npy::values(&x, pk_lang::ir::DType::F32)
    );

    // Another shape is another entry: a miss, said so, defaults used.
    let o = pkc_cached(
        &cache,
        &[
            "build",
            "--tuned",
            src_arg,
            "-p",
            "M=32",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no tuning cache entry for `copy`"),
        "{}",
        stderr(&o)
    );
    assert!(out.join("copy-M32").is_dir());

    // Changing the source invalidates the entry.
    std::fs::write(&src, format!("// edited\n{COPY}")).expect("rewrite");
    let o = pkc_cached(
        &cache,
        &["build", "--tuned", src_arg, "-o", out.to_str().unwrap()],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no tuning cache entry"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_sampled_search_is_repeatable_with_its_seed_and_cpu_timing_ranks() {
    let dir = TempDir::new("tune-seed");
    let src = dir.file("copy.pk", COPY.as_bytes());
    let src_arg = src.to_str().expect("UTF-8 path");
    let run = |seed: &str| {
        let o = pkc_cached(
            &dir.path().join("cache"),
            &[
                "tune", src_arg, "--budget", "2", "--seed", seed, "--no-aot", "--eval", "cpu",
                "--json",
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        json_lines(&o).remove(0)
    };
    let a = run("7");
    assert_eq!(a["evaluator"], "cpu");
    assert_eq!(a["aot"], false, "--no-aot skips libtpu");
    assert_eq!(a["tried"], 2, "the budget caps the configurations tried");
    let configs = |r: &serde_json::Value| {
        let mut v: Vec<String> = r["best"]
            .as_array()
            .expect("ranked")
            .iter()
            .map(|c| c["params"].to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        configs(&a),
        configs(&run("7")),
        "the same seed samples the same configurations"
    );
    // The default (bm=8 bn=128) is always among those sampled.
    assert!(configs(&a)
        .iter()
        .any(|c| c.contains("\"bm\":8") && c.contains("\"bn\":128")));
}

#[test]
fn a_default_that_breaks_a_rule_for_the_shapes_does_not_stop_tuning() {
    // At 128^3 the default blocks (256, 256, 512) are larger than the
    // arrays; the one configuration of 128-blocks is still found.
    let cache = TempDir::new("tune-small");
    let o = pkc_cached(
        cache.path(),
        &[
            "tune",
            "kernels/matmul.pk",
            "-p",
            "M=128",
            "-p",
            "N=128",
            "-p",
            "K=128",
            "--no-aot",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = &json_lines(&o)[0];
    assert_eq!(r["ranked"], 1, "{r}");
    assert_eq!(
        r["best"][0]["params"],
        serde_json::json!({"bm": 128, "bn": 128, "bk": 128})
    );
    assert!(r["default"].is_null(), "the default was pruned: {r}");
}

#[test]
fn tune_reports_its_errors_with_codes_and_exit_codes() {
    let cache = TempDir::new("tune-errors");
    // Nothing to tune: add.pk declares no candidates.
    let o = pkc_cached(cache.path(), &["tune", "kernels/add.pk", "--no-aot"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK6001"), "{}", stderr(&o));
    // Every configuration pruned: every candidate block is larger than 96.
    let o = pkc_cached(
        cache.path(),
        &[
            "tune",
            "kernels/matmul.pk",
            "-p",
            "M=96",
            "-p",
            "N=96",
            "-p",
            "K=96",
            "--no-aot",
        ],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK6002"), "{}", stderr(&o));
    // --eval tpu on a host without a TPU: a coded toolchain error.
    if pk_runtime::pjrt::locate_libtpu(None).is_ok() {
        let o = pkc_cached(
            cache.path(),
            &["tune", "kernels/matmul.pk", "--eval", "tpu"],
        );
        assert_eq!(code(&o), 5, "{}", stderr(&o));
        assert!(stderr(&o).contains("PK2"), "{}", stderr(&o));
    }
    // An unwritable cache directory.
    let o = pkc(&[
        "tune",
        "kernels/matmul.pk",
        "--no-aot",
        "--tuned-cache",
        "/proc/pk-tune",
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK6003"), "{}", stderr(&o));
    // --screen chooses what --eval schedule compiles: a usage error with
    // another evaluator, and a factor below 1 is refused by the parser.
    let o = pkc_cached(
        cache.path(),
        &[
            "tune",
            "kernels/matmul.pk",
            "--no-aot",
            "--eval",
            "model",
            "--screen",
            "2",
        ],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK4002"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--screen"), "{}", stderr(&o));
    let o = pkc_cached(
        cache.path(),
        &["tune", "kernels/matmul.pk", "--screen", "0.5"],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("at least 1"), "{}", stderr(&o));
    // --tuned applies to sources: a package holds one specialisation.
    let o = pkc(&["run", "--tuned", "tests/data"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK4002"), "{}", stderr(&o));
    let o = pkc(&["explain", "PK6002"]);
    assert_eq!(code(&o), 0);
}

/// An element of the plot's SVG: its name, attributes, text and children.
#[derive(Debug, Default)]
struct El {
    name: String,
    attrs: std::collections::BTreeMap<String, String>,
    text: String,
    children: Vec<El>,
}

impl El {
    fn attr(&self, name: &str) -> &str {
        self.attrs.get(name).map_or("", String::as_str)
    }

    fn num(&self, name: &str) -> f64 {
        self.attr(name)
            .parse()
            .unwrap_or_else(|_| panic!("<{} {name}=...> is a number: {:?}", self.name, self.attrs))
    }

    fn has_class(&self, class: &str) -> bool {
        self.attr("class").split_whitespace().any(|c| c == class)
    }

    /// Every element below this one (depth first) that has `class`.
    fn all<'a>(&'a self, class: &str, out: &mut Vec<&'a El>) {
        for c in &self.children {
            if c.has_class(class) {
                out.push(c);
            }
            c.all(class, out);
        }
    }

    fn find(&self, class: &str) -> Vec<&El> {
        let mut v = Vec::new();
        self.all(class, &mut v);
        v
    }
}

/// Parses the SVG as XML (the subset it uses: elements, attributes in
/// double quotes, text, the five entities); every start tag must be closed
/// in order and there must be one root element.
fn parse_xml(text: &str) -> Result<El, String> {
    let unescape = |s: &str| {
        s.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&")
    };
    let mut stack: Vec<El> = vec![El::default()];
    let mut rest = text;
    while let Some(lt) = rest.find('<') {
        let before = &rest[..lt];
        if let Some(top) = stack.last_mut() {
            top.text.push_str(&unescape(before));
        }
        let gt = rest[lt..].find('>').ok_or("a tag is not closed")? + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let el = stack.pop().ok_or("too many end tags")?;
            if el.name != name.trim() {
                return Err(format!("</{name}> closes <{}>", el.name));
            }
            stack
                .last_mut()
                .ok_or("an end tag closes the document")?
                .children
                .push(el);
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name: String = tag.chars().take_while(|c| !c.is_whitespace()).collect();
        if name.is_empty() {
            return Err(format!("a tag without a name: <{tag}>"));
        }
        let mut el = El {
            name: name.clone(),
            ..El::default()
        };
        let mut attrs = tag[name.len()..].trim();
        while !attrs.is_empty() {
            let eq = attrs
                .find("=\"")
                .ok_or(format!("an attribute without a value in <{tag}>"))?;
            let key = attrs[..eq].trim().to_string();
            let end = attrs[eq + 2..]
                .find('"')
                .ok_or("an attribute is not closed")?
                + eq
                + 2;
            el.attrs.insert(key, unescape(&attrs[eq + 2..end]));
            attrs = attrs[end + 1..].trim();
        }
        if self_closing {
            stack.last_mut().ok_or("no parent")?.children.push(el);
        } else {
            stack.push(el);
        }
    }
    let doc = stack.pop().ok_or("no document")?;
    if !stack.is_empty() {
        return Err(format!("<{}> is not closed", doc.name));
    }
    let mut roots = doc.children.into_iter().filter(|c| !c.name.is_empty());
    match (roots.next(), roots.next()) {
        (Some(root), None) => Ok(root),
        _ => Err("not one root element".into()),
    }
}

/// Whether the point `(x, y)` lies inside the rectangle `r`.
fn inside(r: &El, x: f64, y: f64) -> bool {
    let (rx, ry, w, h) = (r.num("x"), r.num("y"), r.num("width"), r.num("height"));
    x >= rx && x <= rx + w && y >= ry && y <= ry + h
}

#[test]
fn plot_draws_time_against_each_tuned_parameter_of_every_target() {
    let dir = TempDir::new("tune-plot");
    // The copy with its constraint as an assertion: a `where` would keep
    // bm=16 bn=256 out of the space, and the plot is to show one pruned.
    let asserted = COPY.replace(
        "where bm * bn <= 2048",
        "assert(bm * bn <= 2048, \"a block of 2048 at most\")",
    );
    assert_ne!(asserted, COPY);
    let src = dir.file("copy.pk", asserted.as_bytes());
    let plot = dir.path().join("space.svg");
    let args = |plot: &Path| -> Vec<String> {
        [
            "tune",
            src.to_str().expect("UTF-8 path"),
            "--no-aot",
            "--target",
            "v5e,v6e",
            "--plot",
            plot.to_str().expect("UTF-8 path"),
        ]
        .map(String::from)
        .to_vec()
    };
    let argv = args(&plot);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let o = pkc_cached(&dir.path().join("cache"), &argv);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let svg = std::fs::read_to_string(&plot).expect("the plot is written");
    let doc = parse_xml(&svg).unwrap_or_else(|e| panic!("{e}:\n{svg}"));
    assert_eq!(doc.name, "svg");
    let targets = doc.find("target");
    let names: Vec<&str> = targets.iter().map(|t| t.attr("data-target")).collect();
    assert_eq!(names, ["v5e", "v6e"], "a section per target");
    for t in &targets {
        let which = t.attr("data-target");
        let title = &t.find("title")[0].text;
        assert!(title.contains(&format!("copy on {which}")), "{title}");
        // One panel per tuned parameter.
        let panels = t.find("panel");
        let params: Vec<&str> = panels.iter().map(|p| p.attr("data-param")).collect();
        assert_eq!(params, ["bm", "bn"], "{which}");
        for p in &panels {
            let param = p.attr("data-param");
            let frames = p.find("plot-area");
            assert_eq!(frames.len(), 1, "{which} {param}");
            let frame = frames[0];
            // Both axes are labelled: the parameter on a log2 axis (its
            // candidates are powers of two), the time in microseconds.
            let labels: Vec<&str> = p
                .find("axis-label")
                .iter()
                .map(|l| l.text.as_str())
                .collect();
            assert!(
                labels.contains(&format!("{param} (log2 scale)").as_str()),
                "{labels:?}"
            );
            assert!(
                labels.contains(&"predicted time (µs, log scale)"),
                "{labels:?}"
            );
            // A tick at each candidate, and at least two time ticks.
            let ticks: Vec<&str> = p.find("tick").iter().map(|l| l.text.as_str()).collect();
            let candidates = if param == "bm" {
                ["8", "16"]
            } else {
                ["128", "256"]
            };
            for c in candidates {
                assert!(ticks.contains(&c), "{param}: {ticks:?}");
            }
            // Two candidates, two time ticks or more, and the strip's name.
            assert!(ticks.len() >= 5, "{param}: {ticks:?}");
            // Every configuration tried is a mark in the frame: three
            // ranked, one pruned by the assertion.
            let points = p.find("point");
            assert_eq!(points.len(), 4, "{which} {param}");
            assert_eq!(p.find("ranked").len(), 3, "{which} {param}");
            assert_eq!(p.find("pruned").len(), 1, "{which} {param}");
            for c in &points {
                assert!(
                    inside(frame, c.num("cx"), c.num("cy")),
                    "{which} {param}: {:?}",
                    c.attrs
                );
            }
            // The best and the default are marked and labelled, wholly
            // inside the frame.
            for m in ["best", "default"] {
                let marks: Vec<&El> = p
                    .find("marker")
                    .into_iter()
                    .filter(|e| e.has_class(m))
                    .collect();
                assert_eq!(marks.len(), 1, "{which} {param} {m}");
                let mk = marks[0];
                assert!(
                    inside(frame, mk.num("data-x"), mk.num("data-y")),
                    "{m}: {:?}",
                    mk.attrs
                );
                let label = mk.find("marker-label");
                assert_eq!(label.len(), 1);
                let (lx, ly, w) = (
                    label[0].num("x"),
                    label[0].num("y"),
                    label[0].num("data-width"),
                );
                assert_eq!(label[0].text, m);
                assert!(
                    inside(frame, lx, ly) && inside(frame, lx + w, ly - 11.0),
                    "{which} {param} {m}: label at {lx}, {ly} (+{w}) outside {:?}",
                    frame.attrs
                );
            }
        }
    }
    // Written by renaming a finished temporary file: nothing else is left.
    let mut left = dir.entries();
    left.sort();
    assert_eq!(left, vec!["cache", "copy.pk", "space.svg"]);

    // An identical run is answered from the cache and draws the same plot.
    let again = dir.path().join("again.svg");
    let argv = args(&again);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let o = pkc_cached(&dir.path().join("cache"), &argv);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("cached"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&again).expect("drawn"), svg);

    // A destination that cannot be written fails before any tuning.
    let o = pkc_cached(
        &dir.path().join("cache"),
        &[
            "tune",
            src.to_str().expect("UTF-8 path"),
            "--no-aot",
            "--plot",
            dir.path()
                .join("no/such/dir.svg")
                .to_str()
                .expect("UTF-8 path"),
        ],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        common::codes_in(&stderr(&o)),
        vec!["PK1007"],
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "nothing tuned: {}", stdout(&o));
}
