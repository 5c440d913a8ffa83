//! The tuning cache as `pkc tune`, `pkc build --tuned` and `pkc run
//! --tuned` use it: where it lives, what an entry must match to be used, a
//! damaged entry, an unwritable folder, file modes, an identical `pkc
//! tune` answered from the cache (and `--force`); and `pkc tune --eval
//! cpu --timeout`, the types of values in `--json`, and the plot's
//! structure. Everything here runs with `--no-aot` (libtpu is not the
//! point), so it runs without libtpu.

mod common;

use common::{code, codes_in, root, stderr, stdout, TempDir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A copy whose block shape is tuned: 4 configurations, one of which
/// breaks the `where`.
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

/// A kernel that never finishes at `bn = 128` and copies at `bn = 256`:
/// the loop's counter starts at zero (any input times zero) and stays
/// there.
const SPIN: &str = "\
kernel spin<
    M = 8,
    N = 256,
    bn = 128 in [128, 256],
>(
    x: i32[M, N] block [M, bn] at (0, j),
) -> y: i32[M, N] block [M, bn] at (0, j)
grid (j in N / bn parallel)
{
    let mut k = x[0, 0] * 0;
    if bn == 128 {
        while k < 100 {
            k = k * 1;
        }
    }
    y[..] = x[..] + k;
}
";

/// `pkc` in the repository root with a clean cache environment: none of
/// the variables that choose the cache is inherited, `HOME` is `home`, and
/// `env` adds to that.
fn pkc_env(home: &Path, env: &[(&str, &Path)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pkc"));
    c.args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .env_remove("PK_LIBTPU")
        .env_remove("PK_TUNE_CACHE")
        .env_remove("PK_CACHE_DIR")
        .env_remove("XDG_CACHE_HOME")
        .env("HOME", home);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("pkc runs")
}

/// `pkc` with the cache in `cache` (through `PK_TUNE_CACHE`).
fn pkc_cached(cache: &Path, args: &[&str]) -> Output {
    pkc_env(cache, &[("PK_TUNE_CACHE", cache)], args)
}

fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// The files of a directory, sorted (empty when it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// miette's wrapped lines joined again.
fn flat(text: &str) -> String {
    text.lines()
        .map(|l| l.trim_start_matches(['│', ' ']).trim_end())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn an_entry_for_other_fixed_values_is_never_used() {
    let dir = TempDir::new("tc-fixed");
    let cache = dir.path().join("cache");
    let out = dir.path().join("out");
    // The default request (M = N = K = 1024, T = bf16) and one with other
    // fixed values, each tuned and cached.
    let tune = |extra: &[&str]| {
        let mut args = vec!["tune", "kernels/matmul.pk", "--no-aot", "--json"];
        args.extend_from_slice(extra);
        let o = pkc_cached(&cache, &args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let r = json_lines(&o).remove(0);
        (PathBuf::from(r["cache"].as_str().expect("cached")), r)
    };
    let (default_entry, r) = tune(&[]);
    // Every resolved value that is not tuned is in the key, the defaults
    // included.
    let entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&default_entry).expect("read"))
            .expect("JSON");
    assert_eq!(
        entry["key"]["fixed"],
        serde_json::json!([["M", "1024"], ["N", "1024"], ["K", "1024"], ["T", "bf16"]])
    );
    assert_eq!(entry["report"], r, "the entry holds the report printed");
    let (other_entry, _) = tune(&["-p", "M=2048", "-p", "T=f32"]);
    assert_ne!(default_entry, other_entry);

    // The other request's entry copied over the default's: the default
    // request finds a file written for M=2048 T=f32 and does not use it.
    std::fs::copy(&other_entry, &default_entry).expect("copy");
    let o = pkc_cached(
        &cache,
        &["build", "--tuned", "kernels/matmul.pk", "-o", s(&out)],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = flat(&stderr(&o));
    assert_eq!(codes_in(&stderr(&o)), vec!["PK6008"], "{err}");
    assert!(err.contains("M=2048"), "{err}");
    assert!(err.contains("using the defaults"), "{err}");
    assert_eq!(
        files(&out),
        vec![out.join("matmul")],
        "the defaults, not M=2048: {err}"
    );

    // An entry edited to set a parameter that is not tuned (the shape) is
    // not used either, whatever its key says.
    let mut edited = entry.clone();
    edited["best"]
        .as_array_mut()
        .expect("best")
        .push(serde_json::json!(["M", 2048]));
    std::fs::write(&default_entry, edited.to_string()).expect("write");
    let o = pkc_cached(
        &cache,
        &["build", "--tuned", "kernels/matmul.pk", "-o", s(&out)],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = flat(&stderr(&o));
    assert_eq!(codes_in(&stderr(&o)), vec!["PK6008"], "{err}");
    assert!(err.contains("`M`, which is not tuned"), "{err}");
    assert_eq!(files(&out), vec![out.join("matmul")], "{err}");

    // The entry as written is used: the package is named after the tuned
    // blocks only.
    std::fs::write(&default_entry, entry.to_string()).expect("write");
    let o = pkc_cached(
        &cache,
        &["build", "--tuned", "kernels/matmul.pk", "-o", s(&out)],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let best = &r["best"][0]["params"];
    let tuned = format!("matmul-bm{}-bn{}-bk{}", best["bm"], best["bn"], best["bk"]);
    assert!(out.join(&tuned).is_dir(), "{tuned}: {:?}", files(&out));
}

#[test]
fn a_damaged_entry_is_a_coded_warning_and_is_replaced() {
    let dir = TempDir::new("tc-damaged");
    let cache = dir.path().join("cache");
    let src = dir.file("copy.pk", COPY.as_bytes());
    let o = pkc_cached(&cache, &["tune", s(&src), "--no-aot", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let entry = PathBuf::from(json_lines(&o)[0]["cache"].as_str().expect("cached"));
    std::fs::write(&entry, b"{\"truncated").expect("damage the entry");

    // build --tuned warns with a code and builds the defaults.
    let out = dir.path().join("out");
    let o = pkc_cached(&cache, &["build", "--tuned", s(&src), "-o", s(&out)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(codes_in(&stderr(&o)), vec!["PK6008"], "{}", stderr(&o));
    assert!(stderr(&o).contains("⚠"), "a warning: {}", stderr(&o));
    assert!(
        stderr(&o).contains("no usable tuning cache entry"),
        "{}",
        stderr(&o)
    );
    assert_eq!(files(&out), vec![out.join("copy")]);
    // So does run --tuned, which then runs the defaults.
    let y = dir.path().join("y.npy");
    let o = pkc_cached(
        &cache,
        &[
            "run",
            "--tuned",
            s(&src),
            "--in",
            "x=tests/data/add_16x256/x.npy",
            "--out",
            &format!("y={}", y.display()),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(codes_in(&stderr(&o)), vec!["PK6008"], "{}", stderr(&o));

    // tune warns, tunes again and replaces the entry with a readable one.
    let o = pkc_cached(&cache, &["tune", s(&src), "--no-aot", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(codes_in(&stderr(&o)), vec!["PK6008"], "{}", stderr(&o));
    let text = std::fs::read_to_string(&entry).expect("rewritten");
    let e: serde_json::Value = serde_json::from_str(&text).expect("a whole entry again");
    assert_eq!(e["report"], json_lines(&o)[0]);
    // And the next build uses it without a warning.
    let o = pkc_cached(&cache, &["build", "--tuned", s(&src), "-o", s(&out)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(codes_in(&stderr(&o)).is_empty(), "{}", stderr(&o));
}

#[test]
fn an_unwritable_cache_is_an_error_before_any_work() {
    let dir = TempDir::new("tc-unwritable");
    let src = dir.file("spin.pk", SPIN.as_bytes());
    // A kernel whose timing never finishes at bn = 128, under a limit of
    // 30 s: only a check before any work answers well before it.
    let t = Instant::now();
    let o = pkc_env(
        dir.path(),
        &[],
        &[
            "tune",
            s(&src),
            "--no-aot",
            "--eval",
            "cpu",
            "--timeout",
            "30",
            "--tuned-cache",
            "/proc/pk-tune",
        ],
    );
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(codes_in(&stderr(&o)), vec!["PK6003"], "{}", stderr(&o));
    let err = flat(&stderr(&o));
    assert!(
        err.contains("--tuned-cache") && err.contains("PK_TUNE_CACHE"),
        "{err}"
    );
    assert!(stdout(&o).is_empty(), "nothing tuned: {}", stdout(&o));
    // The same through the environment.
    let o = pkc_cached(
        Path::new("/proc/pk-tune"),
        &["tune", "kernels/matmul.pk", "--no-aot"],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(codes_in(&stderr(&o)), vec!["PK6003"], "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "nothing tuned: {}", stdout(&o));
}

#[cfg(unix)]
#[test]
fn entries_get_the_mode_the_umask_gives() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("tc-umask");
    let src = dir.file("copy.pk", COPY.as_bytes());
    for (umask, want) in [("022", 0o644), ("027", 0o640)] {
        let cache = dir.path().join(format!("cache-{umask}"));
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_pkc"))
            .args(["tune", s(&src), "--no-aot", "--tuned-cache", s(&cache)])
            .current_dir(root())
            .env("TPU_SKIP_MDS_QUERY", "1")
            .output()
            .expect("sh runs pkc");
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let entries = files(&cache);
        assert_eq!(entries.len(), 1, "one entry, no temporary file left");
        let mode = std::fs::metadata(&entries[0])
            .expect("meta")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, want, "umask {umask}: {mode:o}");
    }
}

#[test]
fn the_cache_lives_under_pk_cache_dir_and_the_flags_and_variables_override_in_order() {
    let dir = TempDir::new("tc-where");
    let src = dir.file("copy.pk", COPY.as_bytes());
    let home = dir.path().join("home");
    let tune = |env: &[(&str, &Path)], extra: &[&str]| -> PathBuf {
        let mut args = vec!["tune", s(&src), "--no-aot", "--json", "--force"];
        args.extend_from_slice(extra);
        let o = pkc_env(&home, env, &args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let p = PathBuf::from(json_lines(&o)[0]["cache"].as_str().expect("cached"));
        assert!(p.is_file(), "{}", p.display());
        p.parent().expect("a directory").to_path_buf()
    };
    let pk_cache = dir.path().join("pk-cache");
    let xdg = dir.path().join("xdg");
    let tune_cache = dir.path().join("tune-cache");
    let flag = dir.path().join("flag");
    // HOME alone: ~/.cache/pk/tune.
    assert_eq!(tune(&[], &[]), home.join(".cache/pk/tune"));
    // XDG_CACHE_HOME over HOME, PK_CACHE_DIR over both: the root libtpu's
    // copy lives under too.
    assert_eq!(tune(&[("XDG_CACHE_HOME", &xdg)], &[]), xdg.join("pk/tune"));
    let both: [(&str, &Path); 2] = [("XDG_CACHE_HOME", &xdg), ("PK_CACHE_DIR", &pk_cache)];
    assert_eq!(tune(&both, &[]), pk_cache.join("tune"));
    // PK_TUNE_CACHE over the root, --tuned-cache over everything.
    let all: [(&str, &Path); 3] = [
        ("XDG_CACHE_HOME", &xdg),
        ("PK_CACHE_DIR", &pk_cache),
        ("PK_TUNE_CACHE", &tune_cache),
    ];
    assert_eq!(tune(&all, &[]), tune_cache);
    assert_eq!(tune(&all, &["--tuned-cache", s(&flag)]), flag);

    // build --tuned reads from the same place: here PK_CACHE_DIR.
    let out = dir.path().join("out");
    let o = pkc_env(
        &home,
        &[("PK_CACHE_DIR", &pk_cache)],
        &["build", "--tuned", s(&src), "-o", s(&out)],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(s(&pk_cache.join("tune"))),
        "{}",
        stderr(&o)
    );
}

#[test]
fn build_and_run_read_the_cache_given_with_tuned_cache() {
    let dir = TempDir::new("tc-flag");
    let src = dir.file("copy.pk", COPY.as_bytes());
    let cache = dir.path().join("elsewhere");
    let home = dir.path().join("home");
    let o = pkc_env(
        &home,
        &[],
        &[
            "tune",
            s(&src),
            "--no-aot",
            "--json",
            "--tuned-cache",
            s(&cache),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let best = json_lines(&o)[0]["best"][0]["params"].clone();
    let want = format!("bm={} bn={}", best["bm"], best["bn"]);
    // Without the flag the default cache (under HOME) has no entry.
    let out = dir.path().join("out");
    let o = pkc_env(&home, &[], &["build", "--tuned", s(&src), "-o", s(&out)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no tuning cache entry"),
        "{}",
        stderr(&o)
    );
    // With it, build and run use the entry.
    let o = pkc_env(
        &home,
        &[],
        &[
            "build",
            "--tuned",
            "--tuned-cache",
            s(&cache),
            s(&src),
            "-o",
            s(&out),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    assert!(out
        .join(format!("copy-bm{}-bn{}", best["bm"], best["bn"]))
        .is_dir());
    let y = dir.path().join("y.npy");
    let o = pkc_env(
        &home,
        &[],
        &[
            "run",
            "--tuned",
            "--tuned-cache",
            s(&cache),
            s(&src),
            "--in",
            "x=tests/data/add_16x256/x.npy",
            "--out",
            &format!("y={}", y.display()),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    // The flag means nothing without --tuned.
    let o = pkc_env(
        &home,
        &[],
        &["build", "--tuned-cache", s(&cache), s(&src), "-o", s(&out)],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn an_identical_tune_prints_the_cached_report_and_force_tunes_again() {
    let dir = TempDir::new("tc-hit");
    let cache = dir.path().join("cache");
    let src = dir.file("copy.pk", COPY.as_bytes());
    // CPU timings differ from run to run: equal output proves the second
    // report came from the cache.
    let args = [
        "tune",
        s(&src),
        "--no-aot",
        "--eval",
        "cpu",
        "--target",
        "v5e,v6e",
    ];
    let first = pkc_cached(&cache, &[&args[..], &["--json"]].concat());
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let t = Instant::now();
    let second = pkc_cached(&cache, &[&args[..], &["--json"]].concat());
    let took = t.elapsed();
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert_eq!(stdout(&second), stdout(&first), "the same JSON");
    assert!(stderr(&second).contains("cached"), "{}", stderr(&second));
    assert!(took < Duration::from_secs(20), "{took:?}");
    // The text report is the one the first run printed, too.
    let text1 = pkc_cached(&cache, &[&args[..], &["--force"]].concat());
    assert_eq!(code(&text1), 0, "{}", stderr(&text1));
    assert!(!stderr(&text1).contains("is cached"), "{}", stderr(&text1));
    let text2 = pkc_cached(&cache, &args);
    assert_eq!(stdout(&text2), stdout(&text1));
    assert!(stdout(&text1).contains("copy on v6e"), "{}", stdout(&text1));
    // --force measured again and replaced the entries: the JSON now
    // differs from the first run's (new timings).
    let third = pkc_cached(&cache, &[&args[..], &["--json"]].concat());
    assert_ne!(stdout(&third), stdout(&first));
    // Another budget tries other configurations: not the same tuning.
    let o = pkc_cached(&cache, &[&args[..], &["--json", "--budget", "2"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("is cached"), "{}", stderr(&o));
    assert_eq!(json_lines(&o)[0]["tried"], 2);
}

#[test]
fn cpu_timing_stops_each_run_at_the_timeout_and_lists_what_timed_out() {
    let dir = TempDir::new("tc-timeout");
    let cache = dir.path().join("cache");
    let src = dir.file("spin.pk", SPIN.as_bytes());
    // bn = 128 never finishes, bn = 256 does: one ranked, one timed out.
    let t = Instant::now();
    let o = pkc_cached(
        &cache,
        &[
            "tune",
            s(&src),
            "--no-aot",
            "--eval",
            "cpu",
            "--timeout",
            "1",
            "--json",
        ],
    );
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = &json_lines(&o)[0];
    assert_eq!(r["ranked"], 1, "{r}");
    assert_eq!(r["best"][0]["params"], serde_json::json!({"bn": 256}));
    assert_eq!(r["timed_out"].as_array().map(Vec::len), Some(1), "{r}");
    assert_eq!(r["timed_out"][0]["config"], "bn=128");
    let why = r["timed_out"][0]["message"].as_str().expect("a reason");
    assert!(
        why.contains("--timeout of 1 s") && why.contains("PK1015"),
        "{why}"
    );
    let point = r["points"]
        .as_array()
        .expect("points")
        .iter()
        .find(|p| p["params"]["bn"] == 128)
        .expect("bn=128 is a point");
    assert_eq!(point["status"], "timed_out", "{point}");
    // The table lists it with its reason.
    let o = pkc_cached(
        &cache,
        &[
            "tune",
            s(&src),
            "--no-aot",
            "--eval",
            "cpu",
            "--timeout",
            "1",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("timed out: 1\n    bn=128: "),
        "{}",
        stdout(&o)
    );

    // Only bn = 128: nothing can be ranked, and PK6002 says why and how
    // to get further.
    let t = Instant::now();
    let o = pkc_cached(
        &cache,
        &[
            "tune",
            s(&src),
            "--no-aot",
            "--eval",
            "cpu",
            "--timeout",
            "1",
            "-p",
            "N=128",
        ],
    );
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(codes_in(&stderr(&o)), vec!["PK6002"], "{}", stderr(&o));
    let err = flat(&stderr(&o));
    assert!(
        err.contains("1 timed out on the CPU reference (--timeout 1 s per run)"),
        "{err}"
    );
    assert!(err.contains("--timeout none"), "{err}");
    assert!(
        !err.contains("pkc check"),
        "help for the cause at hand: {err}"
    );
    assert!(stdout(&o).contains("bn=128: "), "{}", stdout(&o));

    // The limit applies to CPU timing only, and is checked like pkc run's.
    let o = pkc_cached(&cache, &["tune", s(&src), "--no-aot", "--timeout", "1"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(codes_in(&stderr(&o)), vec!["PK4002"], "{}", stderr(&o));
    let o = pkc_cached(
        &cache,
        &[
            "tune",
            s(&src),
            "--no-aot",
            "--eval",
            "cpu",
            "--timeout",
            "0",
        ],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("say `none`"), "{}", stderr(&o));
}

#[test]
fn json_values_keep_their_types() {
    let dir = TempDir::new("tc-types");
    let o = pkc_cached(
        dir.path(),
        &[
            "tune",
            "kernels/flash.pk",
            "-k",
            "flash_attention",
            "--no-aot",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = &json_lines(&o)[0];
    // Tuned values are integers, in every place a configuration is shown.
    for params in r["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| &p["params"])
        .chain(
            r["best"]
                .as_array()
                .expect("best")
                .iter()
                .map(|c| &c["params"]),
        )
        .chain(std::iter::once(&r["default"]["params"]))
    {
        for n in ["bq", "bk"] {
            assert!(params[n].is_i64(), "{n}: {params}");
        }
    }
    assert_eq!(
        r["default"]["params"],
        serde_json::json!({"bq": 512, "bk": 512})
    );
    // The fixed values: integers, floats, booleans and dtype names.
    let fixed = &r["fixed"];
    assert_eq!(fixed["S"], 2048, "{fixed}");
    assert_eq!(fixed["sm_scale"], 0.08838834764831845, "{fixed}");
    assert_eq!(fixed["causal"], true, "{fixed}");
    assert_eq!(fixed["segments"], false, "{fixed}");
    assert_eq!(fixed["T"], "bf16", "{fixed}");
    assert_eq!(
        r["axes"],
        serde_json::json!([
            {"name": "bq", "candidates": [128, 256, 512, 1024, 2048], "default": 512},
            {"name": "bk", "candidates": [128, 256, 512, 1024, 2048], "default": 512},
        ])
    );
}
