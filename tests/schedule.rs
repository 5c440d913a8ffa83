//! libtpu's schedule of a kernel, kept by `pkc build --aot` and read by
//! `pkc tune --eval schedule`: pk's summary against libtpu's raw dump of
//! the same compile, parsed here independently, and against values
//! derived by hand (the MXU cycles a matmul step needs at least); the
//! fallback to the roofline model, with PK2013, when the schedule cannot
//! be read; and that no dump is left behind.
//!
//! Tests that compile with libtpu print a notice and pass when it is not
//! installed, unless `CI=true`.

mod common;

use common::{code, have_libtpu, root, stderr, stdout, TempDir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `pkc` with its own temporary directory (`TMPDIR`), tuning cache and
/// environment additions.
fn pkc_env(tmp: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pkc"));
    c.args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .env("TMPDIR", tmp)
        .env("PK_TUNE_CACHE", tmp.join("tune-cache"))
        .env_remove("PK_LIBTPU")
        .env_remove("LIBTPU_INIT_ARGS");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("pkc runs")
}

/// Entries of `dir` whose names start with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// What the test reads from libtpu's raw files of one computation, by its
/// own rules: bundle lines counted, `total scheduled bundles`, and each
/// unit's capacity and summed slots.
#[derive(Debug)]
struct Raw {
    bundle_lines: u64,
    total: u64,
    capacity: BTreeMap<String, u64>,
    slots: BTreeMap<String, u64>,
    /// Bundles from the loop body's first (`LB`) to the last printed at
    /// depth one (`: > {`): the grid's loop.
    depth_one: u64,
}

fn raw_kernel(dump: &Path) -> Raw {
    let mut files = Vec::new();
    files_under(dump, &mut files);
    // The kernel's files: the computation with the most bundles that is
    // not one of the wrappers (TLP, late initialisation and finalisation).
    let mut best: Option<Raw> = None;
    for b in files
        .iter()
        .filter(|p| p.to_string_lossy().ends_with("-final_bundles.txt"))
        .filter(|p| !p.to_string_lossy().contains("schedule-analysis"))
    {
        let dir = b.parent().unwrap();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if name == "TLP" || name.starts_with("late-") {
            continue;
        }
        let text = std::fs::read_to_string(b).unwrap();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| {
                let t = l.trim_start();
                let first = t.split_whitespace().next().unwrap_or("");
                (first == "0" || first.starts_with("0x")) && t.contains(':') && t.contains('{')
            })
            .collect();
        let addr = |l: &str| {
            let a = l.split_whitespace().next().unwrap();
            u64::from_str_radix(a.trim_start_matches("0x"), 16).unwrap()
        };
        let first = lines
            .iter()
            .find(|l| l.contains(" LB: > {"))
            .map(|l| addr(l));
        let last = lines
            .iter()
            .rev()
            .find(|l| l.contains(": > {"))
            .map(|l| addr(l));
        let depth_one = match (first, last) {
            (Some(f), Some(l)) => l - f + 1,
            _ => 0,
        };
        let sibling = |suffix: &str| {
            let f = files
                .iter()
                .find(|p| p.parent() == Some(dir) && p.to_string_lossy().ends_with(suffix))
                .unwrap_or_else(|| panic!("no {suffix} beside {}", b.display()));
            std::fs::read_to_string(f).unwrap()
        };
        let analysis = sibling("-schedule-analysis_final_bundles.txt");
        let total: u64 = analysis
            .lines()
            .find_map(|l| l.trim().strip_prefix("total scheduled bundles:"))
            .map(|v| v.trim().parse().unwrap())
            .unwrap();
        let util = sibling("-final_hlo-static-per-bundle-utilization.txt");
        let mut ul = util.lines();
        ul.next();
        let names: Vec<String> = ul
            .next()
            .unwrap()
            .split(',')
            .map(|s| s.trim().into())
            .collect();
        let caps: Vec<u64> = ul
            .next()
            .unwrap()
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        ul.next();
        let mut sums = vec![0u64; names.len()];
        for row in ul.filter(|l| !l.trim().is_empty()) {
            for (s, x) in sums.iter_mut().zip(row.split_whitespace()) {
                *s += x.parse::<u64>().unwrap();
            }
        }
        let raw = Raw {
            bundle_lines: lines.len() as u64,
            total,
            capacity: names.iter().cloned().zip(caps).collect(),
            slots: names.into_iter().zip(sums).collect(),
            depth_one,
        };
        if best.as_ref().is_none_or(|b| raw.total > b.total) {
            best = Some(raw);
        }
    }
    best.expect("the dump holds the kernel's program")
}

fn aot_report(out: &Path, target: &str) -> serde_json::Value {
    let mut files = Vec::new();
    files_under(out, &mut files);
    let f = files
        .iter()
        .find(|p| p.ends_with(format!("aot/{target}.json")))
        .expect("the package has an AOT report");
    serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap()
}

/// The kernel's program in an AOT report's schedule.
fn kernel_of(report: &serde_json::Value) -> serde_json::Value {
    report["schedule"]["kernels"]
        .as_array()
        .expect("the report has a schedule")
        .iter()
        .filter(|k| {
            let n = k["name"].as_str().unwrap_or("");
            n != "TLP" && !n.starts_with("late-") && !n.starts_with('<')
        })
        .max_by_key(|k| k["bundles"].as_u64())
        .cloned()
        .expect("a kernel program")
}

const MATMUL: &[&str] = &[
    "build",
    "kernels/matmul.pk",
    "-p",
    "M=4096",
    "-p",
    "N=4096",
    "-p",
    "K=4096",
    "--target",
    "v5e",
    "--aot",
];

#[test]
fn the_aot_report_keeps_libtpus_schedule_as_its_raw_dump_states_it() {
    if !have_libtpu() {
        return;
    }
    let tmp = TempDir::new("sched-aot");
    let out = tmp.path().join("pkg");
    let mut args = MATMUL.to_vec();
    args.extend(["-o", out.to_str().unwrap()]);
    let o = pkc_env(tmp.path(), &[], &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        named(tmp.path(), "pk-schedule-").is_empty(),
        "the dump was left behind"
    );
    let k = kernel_of(&aot_report(&out, "v5e"));

    // The same compile with libtpu's dump asked for by the user: pk leaves
    // it where it was asked for, and the test reads it by its own rules.
    let dump = tmp.path().join("raw");
    let init = format!(
        "--xla_jf_dump_to={} --xla_jf_dump_llo_text=true --xla_jf_dump_use_subdirectories=true",
        dump.display()
    );
    let out2 = tmp.path().join("pkg2");
    let mut args2 = MATMUL.to_vec();
    args2.extend(["-o", out2.to_str().unwrap()]);
    let o = pkc_env(tmp.path(), &[("LIBTPU_INIT_ARGS", &init)], &args2);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        aot_report(&out2, "v5e").get("schedule").is_none(),
        "no schedule is captured from a dump the user asked for"
    );
    let raw = raw_kernel(&dump);

    // pk's summary says what the raw files say.
    assert_eq!(k["bundles"].as_u64(), Some(raw.total), "{k}");
    assert_eq!(raw.bundle_lines, raw.total);
    let units = k["units"].as_array().unwrap();
    assert_eq!(units.len(), raw.capacity.len());
    for u in units {
        let name = u["unit"].as_str().unwrap();
        assert_eq!(
            u["capacity"].as_u64(),
            raw.capacity.get(name).copied(),
            "{name}"
        );
        assert_eq!(u["slots"].as_u64(), raw.slots.get(name).copied(), "{name}");
    }
    let main = k["loops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["depth"] == 0)
        .max_by_key(|l| l["bundles"].as_u64())
        .expect("the grid runs as a loop")
        .clone();
    assert_eq!(main["bundles"].as_u64(), Some(raw.depth_one), "{main}");

    // By hand: a v5e core has 4 MXUs of 128 x 128 (the MATMUL capacity),
    // so a 256 x 256 x 512 bf16 step is 2 * 256 * 256 * 512 /
    // (4 * 128 * 128 * 2) = 512 ideal MXU cycles. libtpu 0.0.51 schedules
    // the whole kernel in 724 bundles (TPU_TOOLCHAIN.md section 7), the
    // step in 702 of them: the ideal cycles and the step's bookkeeping.
    assert_eq!(raw.capacity.get("MATMUL"), Some(&4));
    assert_eq!(raw.total, 724);
    let step = main["bundles"].as_u64().unwrap();
    assert!((512..=724).contains(&step), "{step} bundles a step");
    // The loop's exit test states its trips: the 16 x 16 x 8 = 2,048 grid
    // steps, plus the pipeline's fill and drain.
    let trips = main["trips"]
        .as_u64()
        .expect("the grid loop's trips are static");
    assert!((2048..=2052).contains(&trips), "{trips} trips");
}

#[test]
fn tune_ranks_by_the_schedule_by_default_and_reports_the_roofline_beside_it() {
    if !have_libtpu() {
        return;
    }
    let tmp = TempDir::new("sched-tune");
    let plot = tmp.path().join("space.svg");
    let args = [
        "tune",
        "kernels/matmul.pk",
        "-p",
        "M=1024",
        "-p",
        "N=1024",
        "-p",
        "K=1024",
        "-p",
        "bm=256",
        "-p",
        "bn=256",
        "-t",
        "v5e",
        "--json",
        "--screen",
        "none",
        "-j",
        "1",
        "--plot",
        plot.to_str().unwrap(),
    ];
    let o = pkc_env(tmp.path(), &[], &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        named(tmp.path(), "pk-schedule-").is_empty(),
        "dump left behind"
    );
    let r: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(r["evaluator"], "schedule", "{r}");
    assert_eq!(r["ranked"], 4, "bk in 128..1024");
    assert!(r.get("schedule_fallbacks").is_none(), "{r}");
    assert!(r["device"].as_str().unwrap().contains("one TensorCore"));
    let best = r["best"].as_array().unwrap();
    for row in best {
        let s = &row["schedule"];
        let secs = row["seconds"].as_f64().unwrap();
        assert_eq!(s["seconds"].as_f64(), Some(secs), "ranked by the schedule");
        // A step of bk is 2 * 256 * 256 * bk / (4 * 128 * 128 * 2) ideal
        // MXU cycles; libtpu's step is at most 15% below that (the MXU's
        // pipelining: TPU_TOOLCHAIN.md section 7 measures 3,982 bundles for
        // 4,096 ideal cycles) and at most 300 bundles of bookkeeping
        // (pipeline indices, DMA issue and waits) above.
        let bk = row["params"]["bk"].as_u64().unwrap();
        let ideal = (256 * 256 * bk / (4 * 128 * 128)) as f64;
        let step = s["step_bundles"].as_u64().unwrap() as f64;
        assert!(
            (0.85 * ideal..=ideal + 300.0).contains(&step),
            "bk={bk}: {s}"
        );
        assert!(row["predicted_seconds"].as_f64().unwrap() > 0.0);
    }
    // The plot says the times are predicted.
    let svg = std::fs::read_to_string(&plot).expect("the plot is written");
    assert!(svg.contains("ranked (predicted time per call)"), "{svg}");
    // Sorted by the schedule's time.
    let times: Vec<f64> = best
        .iter()
        .map(|r| r["seconds"].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
}

#[test]
fn the_screen_compiles_only_what_the_roofline_model_cannot_rule_out() {
    if !have_libtpu() {
        return;
    }
    // A 1024^3 matmul at bm = bn = 256 over bk in 128..1024 on v5e. The
    // roofline model's times (asked for separately, without libtpu) decide
    // which configurations the default screen of 1.5x compiles: the
    // default (bk = 512) and those within 1.5x of the fastest. Each compile
    // keeps one schedule in the tuning cache, so the kept files count the
    // compiles.
    let tmp = TempDir::new("sched-screen");
    let shape = [
        "kernels/matmul.pk",
        "-p",
        "M=1024",
        "-p",
        "N=1024",
        "-p",
        "K=1024",
        "-p",
        "bm=256",
        "-p",
        "bn=256",
        "-t",
        "v5e",
        "--json",
    ];
    let run = |extra: &[&str]| -> serde_json::Value {
        let args: Vec<&str> = ["tune"]
            .iter()
            .chain(&shape)
            .chain(extra)
            .copied()
            .collect();
        let o = pkc_env(tmp.path(), &[], &args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap()
    };
    let bk = |p: &serde_json::Value| p["params"]["bk"].as_i64().unwrap();
    let roofline: BTreeMap<i64, f64> = run(&["--eval", "model", "--no-aot"])["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (bk(p), p["seconds"].as_f64().unwrap()))
        .collect();
    assert_eq!(roofline.len(), 4, "{roofline:?}");
    let fastest = roofline.values().copied().fold(f64::INFINITY, f64::min);
    let kept: Vec<i64> = roofline
        .iter()
        .filter(|(&b, &t)| b == 512 || t <= 1.5 * fastest)
        .map(|(&b, _)| b)
        .collect();
    assert!(kept.len() < 4, "the space screens nothing: {roofline:?}");
    let r = run(&[]);
    assert_eq!(r["screen"], 1.5, "{r}");
    assert_eq!(r["screened"], 4 - kept.len(), "{r}");
    assert_eq!(r["ranked"], kept.len(), "{r}");
    for p in r["points"].as_array().unwrap() {
        let b = bk(p);
        if kept.contains(&b) {
            assert_eq!(p["status"], "ranked", "{p}");
        } else {
            assert_eq!(p["status"], "screened", "{p}");
            assert_eq!(p["predicted_seconds"].as_f64(), Some(roofline[&b]), "{p}");
        }
    }
    let schedules = tmp.path().join("tune-cache").join("schedules");
    assert_eq!(
        std::fs::read_dir(&schedules).unwrap().count(),
        kept.len(),
        "one compile per configuration kept"
    );
    // `--screen none` compiles the rest too, and picks the same best.
    let all = run(&["--screen", "none"]);
    assert_eq!(all["ranked"], 4, "{all}");
    assert!(all.get("screened").is_none(), "{all}");
    assert_eq!(all["best"][0]["params"], r["best"][0]["params"]);
    assert_eq!(std::fs::read_dir(&schedules).unwrap().count(), 4);
    assert!(
        named(tmp.path(), "pk-schedule-").is_empty(),
        "dump left behind"
    );
}

#[test]
fn concurrent_compiles_each_capture_their_own_schedule() {
    if !have_libtpu() {
        return;
    }
    // The three 4096^3 matmul blocks whose whole programs
    // TPU_TOOLCHAIN.md section 7 measured on v5e with libtpu 0.0.51: 724,
    // 3,982 and 16,735 bundles. A `where` keeps exactly them, and three
    // threads compile them at the same time; a schedule read from another
    // compile's files would give another count.
    let tmp = TempDir::new("sched-concurrent");
    let text = std::fs::read_to_string(root().join("kernels/matmul.pk")).expect("matmul.pk");
    let grid = text.find("\ngrid ").expect("the grid clause");
    let end = grid + 1 + text[grid + 1..].find('\n').expect("its line");
    let mut src = text.clone();
    src.insert_str(
        end,
        "\nwhere (bm == 256 && bn == 256 && bk == 512) || (bm == 512 && bn == 512 && bk == 1024) \
         || (bm == 1024 && bn == 1024 && bk == 1024)",
    );
    let file = tmp.path().join("matmul3.pk");
    std::fs::write(&file, &src).expect("written");
    let args = [
        "tune",
        file.to_str().unwrap(),
        "-p",
        "M=4096",
        "-p",
        "N=4096",
        "-p",
        "K=4096",
        "-t",
        "v5e",
        "--json",
        "--screen",
        "none",
        "-j",
        "3",
    ];
    let o = pkc_env(tmp.path(), &[], &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        named(tmp.path(), "pk-schedule-").is_empty(),
        "dump left behind"
    );
    let r: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(r["evaluator"], "schedule", "{r}");
    assert_eq!(r["ranked"], 3, "{r}");
    assert!(r.get("schedule_fallbacks").is_none(), "{r}");
    let mut totals: Vec<(u64, u64)> = r["best"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let s = &row["schedule"];
            let bm = row["params"]["bm"].as_u64().unwrap();
            let whole =
                s["step_bundles"].as_u64().unwrap() + s["outside_bundles"].as_u64().unwrap();
            (bm, whole)
        })
        .collect();
    totals.sort();
    assert_eq!(totals, [(256, 724), (512, 3982), (1024, 16735)], "{r}");
}

#[test]
fn an_unreadable_schedule_falls_back_to_the_roofline_with_pk2013() {
    if !have_libtpu() {
        return;
    }
    let tmp = TempDir::new("sched-fallback");
    let dump = tmp.path().join("users-dump");
    let init = format!("--xla_jf_dump_to={}", dump.display());
    let args = [
        "tune",
        "kernels/matmul.pk",
        "-p",
        "M=512",
        "-p",
        "N=512",
        "-p",
        "K=512",
        "-p",
        "bm=256",
        "-p",
        "bn=256",
        "-t",
        "v5e",
        "--eval",
        "schedule",
        "--screen",
        "none",
        "--json",
    ];
    let o = pkc_env(tmp.path(), &[("LIBTPU_INIT_ARGS", &init)], &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(common::codes_in(&err), vec!["PK2013"], "{err}");
    assert!(err.contains("the roofline model ranks 3 of its 3"), "{err}");
    let r: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(r["schedule_fallbacks"].as_array().map(Vec::len), Some(3));
    for row in r["best"].as_array().unwrap() {
        assert_eq!(row["seconds"], row["predicted_seconds"], "{row}");
        assert!(row.get("schedule").is_none());
    }
    // The user's dump is theirs: it is where they asked for it.
    assert!(dump.is_dir());
}

#[test]
fn schedule_needs_libtpus_compile_here() {
    let o = common::pkc(&[
        "tune",
        "kernels/matmul.pk",
        "--eval",
        "schedule",
        "--no-aot",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK4002"), "{}", stderr(&o));
}

#[test]
fn a_configuration_that_recurs_is_ranked_from_its_kept_schedule_without_a_compile() {
    if !have_libtpu() {
        return;
    }
    let tmp = TempDir::new("sched-kept");
    let args = [
        "tune",
        "kernels/matmul.pk",
        "-p",
        "M=512",
        "-p",
        "N=512",
        "-p",
        "K=512",
        "-p",
        "bm=256",
        "-p",
        "bn=256",
        "-t",
        "v5e",
        "--json",
        "--force",
        "--screen",
        "none",
    ];
    let o = pkc_env(tmp.path(), &[], &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let kept = tmp.path().join("tune-cache/schedules");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&kept)
        .expect("schedules are kept")
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    assert_eq!(entries.len(), 3, "one per configuration compiled");
    // Mark one entry: a tuning that reads it reports its code size, which
    // no compile would give.
    let mut e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&entries[0]).unwrap()).unwrap();
    e["generated_code_bytes"] = 12345.into();
    std::fs::write(&entries[0], e.to_string()).unwrap();
    let o = pkc_env(tmp.path(), &[], &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    let codes: Vec<u64> = r["best"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["generated_code_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(
        codes.iter().filter(|&&c| c == 12345).count(),
        1,
        "{codes:?}"
    );
    assert!(named(tmp.path(), "pk-schedule-").is_empty());
}

#[test]
fn every_generations_schedule_reads_and_states_the_steps_a_core_runs() {
    if !have_libtpu() {
        return;
    }
    let tmp = TempDir::new("sched-all");
    let out = tmp.path().join("pkg");
    let o = pkc_env(
        tmp.path(),
        &[],
        &[
            "build",
            "kernels/matmul.pk",
            "--target",
            "all",
            "--aot",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(common::codes_in(&stderr(&o)).is_empty(), "{}", stderr(&o));
    // 1024^3 at 256 / 256 / 512: a 4 x 4 x 2 grid of 32 steps, plus the
    // pipeline's fill and drain. v5p's megacore splits the 16 parallel
    // (i, j) pairs between its cores: 16 steps each. libtpu 0.0.51's v4
    // program runs all 32 in one loop.
    for (t, trips, matmul_slots) in [
        ("v4", 34, 4),
        ("v5e", 34, 4),
        ("v5p", 18, 4),
        ("v6e", 34, 2),
        ("tpu7x", 34, 2),
    ] {
        let k = kernel_of(&aot_report(&out, t));
        let main = k["loops"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["depth"] == 0)
            .max_by_key(|l| l["bundles"].as_u64())
            .cloned()
            .unwrap_or_else(|| panic!("{t}: no loop in {k}"));
        assert_eq!(main["trips"], trips, "{t}");
        let cap = k["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["unit"] == "MATMUL")
            .map(|u| u["capacity"].clone());
        assert_eq!(cap, Some(matmul_slots.into()), "{t}");
    }
}
