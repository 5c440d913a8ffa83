//! `pkc profile`: its figures against libtpu's raw dump of the same
//! compile (kept with `--keep-dump`) counted here by a different method
//! than pk's parser, its JSON's shape, its Chrome trace, and its HTML page
//! as headless Chromium renders it.
//!
//! Tests that compile with libtpu print a notice and pass when it is not
//! installed, unless `CI=true`; the HTML check prints a notice and passes
//! when Chromium is not installed (`apt-get install -y chromium`).

mod common;

use common::{code, have_libtpu, root, stderr, stdout, TempDir};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const SMALL: &[&str] = &[
    "-p", "M=256", "-p", "N=256", "-p", "K=256", "-p", "bm=128", "-p", "bn=128", "-p", "bk=128",
];

fn pkc(tmp: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pkc"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .env("TMPDIR", tmp)
        .env_remove("LIBTPU_INIT_ARGS")
        .output()
        .expect("pkc runs")
}

/// The kernel's final bundles in a kept dump: the `*-final_bundles.txt`
/// with the most lines.
fn kernel_bundles(dump: &Path) -> String {
    let mut best = String::new();
    let mut stack = vec![dump.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with("-final_bundles.txt")
                && !p.to_string_lossy().contains("schedule-analysis")
            {
                let t = std::fs::read_to_string(&p).unwrap();
                if t.lines().count() > best.lines().count() {
                    best = t;
                }
            }
        }
    }
    best
}

/// Bundle lines, as `(is inside a loop, text)`: a line whose first word is
/// an address and whose rest holds `: ` then `{`; inside a loop when a `>`
/// comes between them.
fn bundles(text: &str) -> Vec<(bool, String)> {
    text.lines()
        .filter_map(|l| {
            let t = l.trim_start();
            let first = t.split(' ').next()?;
            let is_addr = first.starts_with("0x") || first.chars().all(|c| c.is_ascii_digit());
            if !is_addr || first.is_empty() {
                return None;
            }
            let colon = t.find(':')?;
            let after = &t[colon + 1..];
            let brace = after.find('{')?;
            Some((after[..brace].contains('>'), after[brace..].to_string()))
        })
        .collect()
}

#[test]
fn profile_figures_agree_with_libtpus_dump_and_render() {
    if !have_libtpu() {
        return;
    }
    let tmp = TempDir::new("profile");
    let dump = tmp.path().join("dump-kept");
    let html = tmp.path().join("p.html");
    let trace = tmp.path().join("p.trace.json");
    let mut args = vec!["profile", "kernels/matmul.pk", "-t", "v5e", "--json"];
    args.extend_from_slice(SMALL);
    let (d, h, t) = (
        dump.to_str().unwrap(),
        html.to_str().unwrap(),
        trace.to_str().unwrap(),
    );
    args.extend_from_slice(&["--keep-dump", d, "--html", h, "--trace", t]);
    let o = pkc(tmp.path(), &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r: Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    // The dump was moved whole to --keep-dump; nothing is left behind.
    assert!(!std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("pk-schedule")));

    // The step's bundles: those from the first bundle inside the loop to
    // the last, with the empty bundles that follow it (an empty bundle,
    // `{}`, prints without `>` and stays in the loop open around it).
    let text = kernel_bundles(&dump.join("dump"));
    let all = bundles(&text);
    let first = all.iter().position(|(l, _)| *l).expect("a loop");
    let mut last = all.iter().rposition(|(l, _)| *l).unwrap();
    while all.get(last + 1).is_some_and(|(_, b)| b.starts_with("{}")) {
        last += 1;
    }
    let step = &all[first..=last];
    assert_eq!(r["step"]["bundles"].as_u64(), Some(step.len() as u64));
    assert_eq!(
        r["step"]["program_bundles"].as_u64(),
        Some(all.len() as u64)
    );
    // Every bundle of the step is shared out among the rows.
    let rows: Vec<&Value> = r["lines"]
        .as_array()
        .unwrap()
        .iter()
        .chain(r["other"].as_object().unwrap().values())
        .collect();
    let share: f64 = rows.iter().map(|v| v["share"].as_f64().unwrap()).sum();
    assert!((share - step.len() as f64).abs() < 0.01, "{share}");
    // The MXU's instructions of the step, by substring.
    let mxu: usize = step
        .iter()
        .map(|(_, b)| {
            b.split(";;")
                .filter(|s| {
                    let s = s.split(" = ").nth(1).unwrap_or("");
                    s.starts_with("vmatmul")
                        || s.starts_with("vmatpush")
                        || s.starts_with("vdwg")
                        || (s.starts_with("vpop") && s.contains(".mrf"))
                })
                .count()
        })
        .sum();
    let mxu_rows: u64 = rows.iter().map(|v| v["ops"]["MXU"].as_u64().unwrap()).sum();
    assert_eq!(mxu_rows, mxu as u64);
    assert!(mxu > 0);
    // The dot's line holds MXU work; the zeroing line's holds stores only.
    let line = |n: u64| {
        r["lines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["line"].as_u64() == Some(n))
            .unwrap_or_else(|| panic!("line {n} in {r}"))
    };
    let src = std::fs::read_to_string(root().join("kernels/matmul.pk")).unwrap();
    let dot = src.lines().position(|l| l.contains("+= dot(")).unwrap() as u64 + 1;
    let zero = src.lines().position(|l| l.contains("c[..] = 0.0")).unwrap() as u64 + 1;
    assert!(line(dot)["ops"]["MXU"].as_u64().unwrap() > 0);
    // The operations libtpu locates at the dot's line, by substring; the
    // row holds those and the ones given it by data flow.
    let located = |n: u64| -> u64 {
        step.iter()
            .map(|(_, b)| b.matches(&format!("matmul.pk\":{n}:")).count() as u64)
            .sum()
    };
    let total = |v: &Value| -> u64 {
        v["ops"]
            .as_object()
            .unwrap()
            .values()
            .map(|x| x.as_u64().unwrap())
            .sum()
    };
    for n in [dot, zero] {
        let l = line(n);
        assert_eq!(
            total(l) - l["inferred_ops"].as_u64().unwrap(),
            located(n),
            "line {n}"
        );
    }
    let z = line(zero);
    assert_eq!(z["ops"]["MXU"].as_u64(), Some(0));
    // Zeroing the f32 128 x 128 output block stores it once: 16 vector
    // registers of 8 x 128.
    assert_eq!(z["ops"]["load/store"].as_u64(), Some(128 * 128 / (8 * 128)));
    // The MATMUL slots' utilization, from the utilization file's rows.
    let util = std::fs::read_dir(dump.join("dump"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|e| std::fs::read_dir(e.path()).unwrap().flatten())
        .map(|e| e.path())
        .filter(|p| {
            p.to_string_lossy()
                .ends_with("-final_hlo-static-per-bundle-utilization.txt")
        })
        .map(|p| std::fs::read_to_string(p).unwrap())
        .max_by_key(|t| t.lines().count())
        .unwrap();
    let ls: Vec<&str> = util.lines().collect();
    let names: Vec<&str> = ls[1].split(',').map(str::trim).collect();
    let caps: Vec<f64> = ls[2]
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    let mm = names.iter().position(|n| *n == "MATMUL").unwrap();
    let used: f64 = ls[4..][first..=last]
        .iter()
        .map(|l| {
            l.split_whitespace()
                .nth(mm)
                .unwrap()
                .parse::<f64>()
                .unwrap()
        })
        .sum();
    let expect = used / (step.len() as f64 * caps[mm]);
    let got = r["step"]["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["unit"] == "MATMUL")
        .unwrap()["utilization"]
        .as_f64()
        .unwrap();
    assert!((got - expect).abs() < 1e-9, "{got} {expect}");

    // JSON: the documented fields, numbers as numbers.
    assert_eq!(r["type"], "profile");
    let classes = ["MXU", "VPU", "EUP", "XLU", "load/store", "DMA", "scalar"];
    let is_row = |v: &Value| {
        v["bundles"].is_u64()
            && v["share"].is_number()
            && v["inferred_ops"].is_u64()
            && classes.iter().all(|c| v["ops"][c].is_u64())
            && v["ops"].as_object().unwrap().len() == classes.len()
    };
    for l in r["lines"].as_array().unwrap() {
        assert!(is_row(l), "{l}");
        assert!(l["file"].is_string() && l["text"].is_string(), "{l}");
        assert!(l["kernel_file"].is_boolean() && l["line"].is_u64(), "{l}");
    }
    let other = r["other"].as_object().unwrap();
    let mut keys: Vec<&str> = other.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["dma", "empty", "scalar", "vector"]);
    assert!(other.values().all(is_row));
    for k in ["ops", "attributed_ops", "stated_ops", "inferred_ops"] {
        assert!(r["attribution"][k].is_u64(), "{k}");
    }
    assert_eq!(
        r["attribution"]["attributed_ops"].as_u64(),
        Some(
            r["attribution"]["stated_ops"].as_u64().unwrap()
                + r["attribution"]["inferred_ops"].as_u64().unwrap()
        )
    );
    for k in [
        "bundles",
        "outside_bundles",
        "program_bundles",
        "clock_hz",
        "compute_seconds",
        "dma_seconds",
        "overhead_seconds",
        "seconds",
        "dma_bytes",
        "cores",
    ] {
        assert!(r["step"][k].is_number(), "step.{k}");
    }
    for u in r["step"]["units"].as_array().unwrap() {
        assert!(u["unit"].is_string() && u["class"].is_string(), "{u}");
        assert!(
            u["capacity"].is_u64() && u["utilization"].is_number(),
            "{u}"
        );
    }
    for e in r["timeline"].as_array().unwrap() {
        assert!(["compute", "DMA", "overhead"].contains(&e["track"].as_str().unwrap()));
        assert!(e["start_us"].is_number() && e["dur_us"].is_number() && e["step"].is_i64());
    }
    for k in ["seconds", "roofline_fraction"] {
        assert!(r["roofline_model"][k].is_number(), "{k}");
    }
    assert_eq!(r["params"]["M"].as_i64(), Some(256));
    assert_eq!(r["params"]["T"].as_str(), Some("bf16"));
    assert_eq!(r["steps"].as_u64(), Some(8));
    assert_eq!(r["prediction"]["model"], "schedule");
    let secs = r["prediction"]["seconds"].as_f64().unwrap();
    let frac = r["prediction"]["roofline_fraction"].as_f64().unwrap();
    assert!(secs > 0.0 && frac > 0.0 && frac <= 1.0, "{r}");
    // A step is its compute or its copies, whichever is longer, plus the
    // overhead; compute is one bundle per cycle.
    let st = &r["step"];
    let f = |k: &str| st[k].as_f64().unwrap();
    assert!((f("compute_seconds") - f("bundles") / f("clock_hz")).abs() < 1e-15);
    assert!(
        (f("seconds") - f("compute_seconds").max(f("dma_seconds")) - f("overhead_seconds")).abs()
            < 1e-15
    );

    // The trace: Chrome's JSON object form.
    let tr: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let ev = tr["traceEvents"].as_array().unwrap();
    let complete: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "X").collect();
    assert!(!complete.is_empty());
    for e in &complete {
        for k in ["ts", "dur", "pid", "tid"] {
            assert!(e[k].is_number(), "{k} in {e}");
        }
        assert!(e["name"].is_string());
    }
    let compute: Vec<f64> = complete
        .iter()
        .filter(|e| e["tid"] == 1)
        .map(|e| e["dur"].as_f64().unwrap())
        .collect();
    assert_eq!(compute.len(), 8);
    for c in compute {
        assert!((c - f("compute_seconds") * 1e6).abs() < 1e-9);
    }

    // The page as Chromium renders it.
    let Some(chromium) = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
    else {
        eprintln!("notice: Chromium is not installed; the HTML page is not rendered (apt-get install -y chromium)");
        return;
    };
    let dom = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("file://{}", html.display()))
        .env("HOME", tmp.path())
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&dom.stdout).to_string();
    let attr = |id: &str, name: &str| -> String {
        let at = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("#{id} in {dom}"));
        let tag = &dom[dom[..at].rfind('<').unwrap()..];
        let tag = &tag[..tag.find('>').unwrap()];
        let k = tag.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        tag[k..k + tag[k..].find('"').unwrap()].to_string()
    };
    assert_eq!(attr("step-bundles", "data-value"), step.len().to_string());
    assert_eq!(
        attr("critical-unit", "data-class"),
        st["critical"]["class"].as_str().unwrap()
    );
    let shown: f64 = attr("predicted", "data-seconds").parse().unwrap();
    assert!((shown - secs).abs() <= secs * 1e-12);
    // One drawn rectangle per modelled interval.
    assert_eq!(dom.matches("class=\"event\"").count(), complete.len());
    // The dot's row, drawn with its figures and heat.
    let row_at = dom
        .find(&format!("data-line=\"{dot}\""))
        .expect("the dot's row");
    let row = &dom[dom[..row_at].rfind("<tr").unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    let cell = |class: &str| {
        let k = row.find(&format!("class=\"{class}\">")).unwrap() + class.len() + 9;
        row[k..k + row[k..].find('<').unwrap()].to_string()
    };
    assert_eq!(cell("bundles"), line(dot)["bundles"].to_string());
    assert_eq!(
        cell("share"),
        format!("{:.1}", line(dot)["share"].as_f64().unwrap())
    );
    assert!(row.contains("background"), "{row}");
}

#[test]
fn a_schedule_pk_cannot_capture_is_pk2013_and_the_roofline_models_prediction() {
    if !have_libtpu() {
        return;
    }
    let tmp = TempDir::new("profile-off");
    let theirs = tmp.path().join("their-dump");
    let o = Command::new(env!("CARGO_BIN_EXE_pkc"))
        .args(["profile", "kernels/add.pk", "-t", "v5e", "--json"])
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env("TPU_SKIP_MDS_QUERY", "1")
        .env("TMPDIR", tmp.path())
        .env(
            "LIBTPU_INIT_ARGS",
            format!("--xla_jf_dump_to={}", theirs.display()),
        )
        .output()
        .expect("pkc runs");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("PK2013"), "{}", stderr(&o));
    assert!(stderr(&o).contains("xla_jf_dump_to"), "{}", stderr(&o));
    let r: Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    assert_eq!(r["prediction"]["model"], "roofline");
    assert_eq!(r["prediction"]["seconds"], r["roofline_model"]["seconds"]);
    assert!(r["step"].is_null() && r["lines"].is_null(), "{r}");
    // pk's own dump folder is not left in the temporary directory.
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("pk-schedule"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn profile_refuses_a_kept_dump_over_an_existing_path_and_an_unknown_target() {
    let tmp = TempDir::new("profile-args");
    let o = pkc(
        tmp.path(),
        &["profile", "kernels/matmul.pk", "--keep-dump", tmp.arg()],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--keep-dump"), "{}", stderr(&o));
    let o = pkc(tmp.path(), &["profile", "kernels/matmul.pk", "-t", "v9"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    // A file of several kernels needs --kernel, before libtpu is loaded.
    let o = pkc(tmp.path(), &["profile", "kernels/xent.pk"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("xent_bwd"), "{}", stderr(&o));
}

#[test]
fn profile_counts_the_work_on_the_given_inputs() {
    if !have_libtpu() {
        return;
    }
    let tmp = TempDir::new("profile-in");
    let o = pkc(
        tmp.path(),
        &[
            "profile",
            "tests/tune/paged.pk",
            "--in",
            "lengths=tests/tune/lengths_short.npy",
            "--in",
            "page_indices=tests/tune/page_indices.npy",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r: Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    // Lengths [20, 0, 37] in pages of 8 tokens: 3 + 0 + 5 pages, keys and
    // values, f32[8, 128] each (4096 bytes): 65536 bytes of DMA; the query
    // and output blocks, f32[2, 128] = 1024 bytes, once per step; 3 steps.
    assert_eq!(r["steps"].as_u64(), Some(3));
    let per_step = (65536.0 + 2.0 * 3.0 * 1024.0) / 3.0;
    assert!(
        (r["step"]["dma_bytes"].as_f64().unwrap() - per_step).abs() < 1e-9,
        "{r}"
    );
    // An input the kernel does not have is refused.
    let o = pkc(
        tmp.path(),
        &[
            "profile",
            "tests/tune/paged.pk",
            "--in",
            "nope=tests/tune/lengths_short.npy",
        ],
    );
    assert_ne!(code(&o), 0);
    assert!(stderr(&o).contains("PK"), "{}", stderr(&o));
}
