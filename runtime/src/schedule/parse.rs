//! Reading libtpu's dump files into a [`Schedule`]. Every expectation about
//! the files' layout is checked; the first one that fails is a
//! [`FormatError`] naming the file and line.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use super::{KernelSchedule, Loop, Schedule, UnitUse, Window, SUMMARY_VERSION};

/// A dump that does not read as pk expects: the file, the line (1-based, 0
/// for the file as a whole) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    pub file: String,
    pub line: usize,
    pub expected: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: expected {}", self.file, self.expected)
        } else {
            write!(f, "{}:{}: expected {}", self.file, self.line, self.expected)
        }
    }
}

pub(super) fn err(file: &Path, line: usize, expected: impl Into<String>) -> FormatError {
    FormatError {
        file: file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into(),
        ),
        line,
        expected: expected.into(),
    }
}

/// The three files of one computation.
#[derive(Default)]
struct Files {
    bundles: Option<PathBuf>,
    analysis: Option<PathBuf>,
    utilization: Option<PathBuf>,
}

const BUNDLES: &str = "-final_bundles.txt";
const ANALYSIS: &str = "-schedule-analysis_final_bundles.txt";
const UTILIZATION: &str = "-final_hlo-static-per-bundle-utilization.txt";

/// Reads every computation's schedule under `dir` (libtpu's dump with
/// `--xla_jf_dump_use_subdirectories`: one folder per computation, under
/// one per module). Computations are named by their folder.
pub fn parse_dir(dir: &Path) -> Result<Schedule, FormatError> {
    parse_dir_with(dir, false)
}

/// [`parse_dir`], and with `source` each computation's operations with
/// their `.pk` lines ([`super::attrib`]), from the source annotations of a
/// dump asked for them.
pub fn parse_dir_with(dir: &Path, source: bool) -> Result<Schedule, FormatError> {
    let mut found: BTreeMap<String, Files> = BTreeMap::new();
    collect(dir, &mut found).map_err(|e| err(dir, 0, format!("a readable dump ({e})")))?;
    if found.is_empty() {
        return Err(err(dir, 0, format!("files named `*{BUNDLES}`")));
    }
    let mut kernels = Vec::new();
    for (name, files) in found {
        let need = |p: Option<PathBuf>, what: &str| {
            p.ok_or_else(|| {
                err(
                    dir,
                    0,
                    format!("`*{what}` beside the other files of `{name}`"),
                )
            })
        };
        let b = need(files.bundles, BUNDLES)?;
        let a = need(files.analysis, ANALYSIS)?;
        let u = need(files.utilization, UTILIZATION)?;
        let bundles_text = read(&b)?;
        let mut k = parse_kernel(&bundles_text, &b, &read(&a)?, &a, &read(&u)?, &u)?;
        if source {
            k.source = Some(super::attrib::attribute(&bundles_text, &b).map_err(|e| e.to_string()));
        }
        k.name = name;
        kernels.push(k);
    }
    Ok(Schedule {
        version: SUMMARY_VERSION,
        kernels,
    })
}

fn read(p: &Path) -> Result<String, FormatError> {
    std::fs::read_to_string(p).map_err(|e| err(p, 0, format!("a readable text file ({e})")))
}

/// Files by computation: the computation is the file's folder relative to
/// the dump's root, so that equal computation names of two modules stay
/// apart.
fn collect(dir: &Path, found: &mut BTreeMap<String, Files>) -> std::io::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let path = e.path();
            if e.file_type()?.is_dir() {
                stack.push(path);
                continue;
            }
            let file = e.file_name().to_string_lossy().into_owned();
            let kind = if file.ends_with(ANALYSIS) {
                0
            } else if file.ends_with(UTILIZATION) {
                1
            } else if file.ends_with(BUNDLES) {
                2
            } else {
                continue;
            };
            let f = found.entry(computation_name(dir, &d)).or_default();
            let slot = match kind {
                0 => &mut f.analysis,
                1 => &mut f.utilization,
                _ => &mut f.bundles,
            };
            *slot = Some(path);
        }
    }
    Ok(())
}

/// The computation of a folder of the dump: its last component (`fusion`,
/// `TLP`), without the suffix libtpu adds to a deduplicated one.
fn computation_name(root: &Path, d: &Path) -> String {
    let rel = d.strip_prefix(root).unwrap_or(d);
    let last = rel.components().next_back().map_or(String::new(), |c| {
        c.as_os_str().to_string_lossy().into_owned()
    });
    let last = last.strip_suffix(".deduplicated").unwrap_or(&last);
    // A deduplicated computation's folder is `<module>.<computation>`.
    if rel.components().count() == 1 {
        if let Some((_, comp)) = last.split_once('.') {
            return comp.to_string();
        }
    }
    last.to_string()
}

/// Summarises one computation from the text of its three files (the paths
/// name them in errors).
pub fn parse_kernel(
    bundles: &str,
    bundles_path: &Path,
    analysis: &str,
    analysis_path: &Path,
    utilization: &str,
    utilization_path: &Path,
) -> Result<KernelSchedule, FormatError> {
    let program = parse_bundles(bundles, bundles_path)?;
    // libtpu writes no analysis (an empty file) for a program of empty
    // bundles only, such as v4's late initialisation.
    let n = program.addresses.len() as u64;
    let (total, empty) = if analysis.trim().is_empty() && program.empty == n {
        (n, n)
    } else {
        parse_analysis(analysis, analysis_path)?
    };
    let (units, rows) = parse_utilization(utilization, utilization_path)?;
    if program.addresses.len() as u64 != total {
        return Err(err(
            bundles_path,
            0,
            format!(
                "{total} bundles, as the schedule analysis totals (found {})",
                program.addresses.len()
            ),
        ));
    }
    if rows.len() as u64 != total {
        return Err(err(
            utilization_path,
            0,
            format!(
                "one utilization row per bundle, {total} (found {})",
                rows.len()
            ),
        ));
    }
    let unit_uses = units
        .iter()
        .enumerate()
        .map(|(i, (name, cap))| UnitUse {
            unit: name.clone(),
            capacity: *cap,
            slots: rows.iter().map(|r| r[i] as u64).sum(),
            busy_bundles: rows.iter().filter(|r| r[i] > 0).count() as u64,
        })
        .collect();
    let loops = program
        .loops
        .iter()
        .map(|l| Loop {
            slots: (0..units.len())
                .map(|u| rows[l.first..=l.last].iter().map(|r| r[u] as u64).sum())
                .collect(),
            start: program.addresses[l.first],
            end: program.addresses[l.last],
            bundles: (l.last - l.first + 1) as u64,
            depth: l.depth,
            parent: l.parent,
            trips: l.trips,
        })
        .collect();
    Ok(KernelSchedule {
        name: String::new(),
        bundles: total,
        empty_bundles: empty,
        predicated_bundles: program.predicated,
        loops,
        units: unit_uses,
        windows: program.windows,
        source: None,
    })
}

/// `total scheduled bundles: N` and `empty scheduled bundles: N`.
fn parse_analysis(text: &str, path: &Path) -> Result<(u64, u64), FormatError> {
    let field = |key: &str| -> Result<u64, FormatError> {
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if let Some(rest) = t.strip_prefix(key) {
                let v = rest.trim_start_matches(':').trim();
                return v
                    .parse()
                    .map_err(|_| err(path, i + 1, format!("a count after `{key}:`")));
            }
        }
        Err(err(path, 0, format!("a line `{key}: N`")))
    };
    if !text.trim_start().starts_with("Schedule analysis") {
        return Err(err(path, 1, "`Schedule analysis:`"));
    }
    let total = field("total scheduled bundles")?;
    let empty = field("empty scheduled bundles")?;
    if empty > total {
        return Err(err(path, 0, "no more empty bundles than bundles"));
    }
    Ok((total, empty))
}

/// The units with their capacities, and one row of used slots per bundle.
#[allow(clippy::type_complexity)]
fn parse_utilization(
    text: &str,
    path: &Path,
) -> Result<(Vec<(String, u32)>, Vec<Vec<u32>>), FormatError> {
    let mut lines = text.lines().enumerate();
    // libtpu spells the header `== CAPACTIY:`; either spelling is taken.
    match lines.next() {
        Some((_, l)) if l.trim().starts_with("== CAPAC") => {}
        _ => return Err(err(path, 1, "`== CAPACITY:`")),
    }
    let names: Vec<String> = match lines.next() {
        Some((_, l)) => l.split(',').map(|s| s.trim().to_string()).collect(),
        None => return Err(err(path, 2, "the units' names")),
    };
    if names.is_empty() || names.iter().any(|n| n.is_empty() || n.contains(' ')) {
        return Err(err(path, 2, "comma-separated unit names"));
    }
    let numbers = |l: &str, i: usize| -> Result<Vec<u32>, FormatError> {
        let v: Result<Vec<u32>, _> = l.split_whitespace().map(str::parse).collect();
        match v {
            Ok(v) if v.len() == names.len() => Ok(v),
            _ => Err(err(
                path,
                i + 1,
                format!("{} counts, one per unit", names.len()),
            )),
        }
    };
    let caps = match lines.next() {
        Some((i, l)) => numbers(l, i)?,
        None => return Err(err(path, 3, "the units' capacities")),
    };
    match lines.next() {
        Some((_, l)) if l.trim() == "== UTILIZATION:" => {}
        Some((i, _)) => return Err(err(path, i + 1, "`== UTILIZATION:`")),
        None => return Err(err(path, 4, "`== UTILIZATION:`")),
    }
    let mut rows = Vec::new();
    for (i, l) in lines {
        if l.trim().is_empty() {
            continue;
        }
        let r = numbers(l, i)?;
        if r.iter().zip(&caps).any(|(u, c)| u > c) {
            return Err(err(path, i + 1, "no unit used past its capacity"));
        }
        rows.push(r);
    }
    Ok((names.into_iter().zip(caps).collect(), rows))
}

/// A loop found in the bundles, by bundle index.
struct RawLoop {
    first: usize,
    last: usize,
    depth: u32,
    parent: Option<usize>,
    trips: Option<u64>,
}

struct Program {
    addresses: Vec<u64>,
    /// Bundles that issue nothing (`{}`).
    empty: u64,
    loops: Vec<RawLoop>,
    predicated: u64,
    windows: Vec<Window>,
}

/// A bundle's first line: `ADDR MARKER: >> { ... }`. The address is
/// decimal (`0`) or hexadecimal (`0x1f`); the marker (`LB`, `PF`, ...) is
/// optional; each `>` is one level of loop nesting (an empty bundle, `{}`,
/// is printed without it).
pub(super) struct BundleLine<'a> {
    pub(super) address: u64,
    pub(super) marker: &'a str,
    pub(super) depth: u32,
    pub(super) body: &'a str,
}

pub(super) fn bundle_line(line: &str) -> Option<BundleLine<'_>> {
    let t = line.trim_start();
    let (addr, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
    let address = match addr.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => addr.parse().ok()?,
    };
    let colon = rest.find(':')?;
    let marker = rest[..colon].trim();
    let after = rest[colon + 1..].trim_start();
    let nest = after.len() - after.trim_start_matches(['>', ' ']).len();
    let depth = after[..nest].matches('>').count() as u32;
    let body = &after[nest..];
    body.starts_with('{').then_some(BundleLine {
        address,
        marker,
        depth,
        body,
    })
}

/// The trips of a loop whose exit test compares its induction variable
/// (counting from 0 by 1, as libtpu's loops do) with a constant:
/// `scmp.ge.s32.totalorder %s649_s15, 6 /* loop exit test */`.
fn exit_test_trips(body: &str) -> Option<u64> {
    let seg = body
        .split(";;")
        .find(|seg| seg.contains("/* loop exit test */"))?;
    let op = seg.split('=').nth(1)?.trim_start();
    if !op.starts_with("scmp.ge.s32") {
        return None;
    }
    let operands = op.split("/*").next()?;
    operands.rsplit(',').next()?.trim().parse().ok()
}

fn parse_bundles(text: &str, path: &Path) -> Result<Program, FormatError> {
    let mut addresses = Vec::new();
    let mut loops: Vec<RawLoop> = Vec::new();
    // Open loops, outermost first, as indices into `loops`.
    let mut open: Vec<usize> = Vec::new();
    let mut predicated = 0u64;
    let mut empty = 0u64;
    let mut windows = Vec::new();
    let mut pending: Option<Window> = None;
    let mut in_key = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("= control target key start") {
            in_key = true;
            continue;
        }
        if t.starts_with("= control target key end") {
            in_key = false;
            continue;
        }
        if in_key || t.is_empty() {
            continue;
        }
        if let Some(b) = bundle_line(line) {
            if let Some(w) = pending.take() {
                windows.push(w);
            }
            if let Some(&prev) = addresses.last() {
                if b.address <= prev {
                    return Err(err(path, i + 1, "increasing bundle addresses"));
                }
            }
            if !matches!(b.marker, "" | "LH" | "LB" | "LE" | "PB" | "PF" | "CT") {
                return Err(err(
                    path,
                    i + 1,
                    format!(
                        "a known marker (LH, LB, LE, PB, PF, CT), not `{}`",
                        b.marker
                    ),
                ));
            }
            let at = addresses.len();
            addresses.push(b.address);
            // An empty bundle (`{}`) is printed without its nesting: it
            // stays in the loops open around it.
            let depth = if b.body.starts_with("{}") {
                empty += 1;
                open.len() as u32
            } else {
                b.depth
            };
            // Close the loops deeper than this bundle, open those it enters.
            while open.len() as u32 > depth {
                if let Some(l) = open.pop() {
                    loops[l].last = at - 1;
                }
            }
            while (open.len() as u32) < depth {
                open.push(loops.len());
                loops.push(RawLoop {
                    first: at,
                    last: at,
                    depth: open.len() as u32 - 1,
                    parent: open.iter().rev().nth(1).copied(),
                    trips: None,
                });
            }
            if b.marker == "PB" {
                predicated += 1;
            }
            if let (Some(&l), Some(n)) = (open.last(), exit_test_trips(b.body)) {
                loops[l].trips = Some(n);
            }
            continue;
        }
        if addresses.is_empty() {
            // The header before the first bundle.
            continue;
        }
        // The lines of a DMA's window descriptor, inside its bundle's
        // comment: `name: (a, b)` or `name: n`.
        if let Some((key, value)) = t.split_once(": ") {
            let nums = || -> Option<Vec<u64>> {
                let v = value.trim_end_matches("*/ }").trim();
                let v = v.trim_start_matches('(').trim_end_matches(')');
                v.split(',').map(|x| x.trim().parse().ok()).collect()
            };
            let w = pending.get_or_insert_with(|| Window {
                at: addresses.last().copied().unwrap_or(0),
                window_bounds: Vec::new(),
                iteration_bounds: Vec::new(),
                element_bytes: 0,
            });
            match key {
                "window_bounds" => w.window_bounds = nums().unwrap_or_default(),
                "iteration_bounds" => w.iteration_bounds = nums().unwrap_or_default(),
                "element_size_in_bytes" => {
                    w.element_bytes = nums().and_then(|v| v.first().copied()).unwrap_or(0)
                }
                _ => {}
            }
        }
    }
    if let Some(w) = pending.take() {
        windows.push(w);
    }
    let end = addresses.len().saturating_sub(1);
    while let Some(l) = open.pop() {
        loops[l].last = end;
    }
    if addresses.is_empty() {
        return Err(err(path, 0, "bundle lines (`ADDR : { ... }`)"));
    }
    windows.retain(|w| !w.window_bounds.is_empty());
    Ok(Program {
        addresses,
        empty,
        loops,
        predicated,
        windows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundle_lines_give_address_marker_and_depth() {
        let b = bundle_line("   0x7 LB: > { %s645_s13 = sadd.s32 4294967295, %s603_s12 }").unwrap();
        assert_eq!((b.address, b.marker, b.depth), (7, "LB", 1));
        let b = bundle_line("     0   :  { %7 = vsyncpa [#allocation4], 0 }").unwrap();
        assert_eq!((b.address, b.marker, b.depth), (0, "", 0));
        let b = bundle_line("  0x1a2   : >> { %1 = vadd.f32 %v1, %v2 }").unwrap();
        assert_eq!((b.address, b.depth), (0x1a2, 2));
        assert!(bundle_line("window_bounds: (16, 1)").is_none());
        assert!(bundle_line("hlo: name.1").is_none());
    }

    /// v4's late initialisation as libtpu 0.0.51 writes it: one empty
    /// bundle and an empty schedule analysis.
    #[test]
    fn an_empty_program_needs_no_analysis_but_a_bundle_program_does() {
        let bundles = "= control target key start\nLH: loop header\n= control target key end\n\n     0   :  {} /* Start/End empty region 0 */\n";
        let util = "== CAPACTIY:\nMATMUL, SALU\n    4     2\n== UTILIZATION:\n0 0\n";
        let p = Path::new("x");
        let k = parse_kernel(bundles, p, "", p, util, p).expect("an empty program reads");
        assert_eq!((k.bundles, k.empty_bundles), (1, 1));
        let busy = bundles.replace("{}", "{ %1 = smov.u32 0 }");
        let e = parse_kernel(&busy, p, "", p, util, p).expect_err("no analysis");
        assert!(e.expected.contains("Schedule analysis"), "{e}");
    }

    #[test]
    fn a_changed_format_is_an_error_naming_the_line() {
        let bundles = "     0   :  { %1 = smov.u32 0 }\n   0x1 LX: > { %2 = sadd.s32 1, %1 }\n";
        let analysis = "Schedule analysis:\n\ttotal scheduled bundles:    2\n\tempty scheduled bundles:    0\n";
        let util = "== CAPACTIY:\nMATMUL, SALU\n    4     2\n== UTILIZATION:\n0 1\n0 1\n";
        let p = Path::new("k-final_bundles.txt");
        let e = parse_kernel(bundles, p, analysis, p, util, p).expect_err("unknown marker");
        assert_eq!((e.line, e.file.as_str()), (2, "k-final_bundles.txt"));
        assert!(e.expected.contains("not `LX`"), "{e}");
        // One utilization row short of the bundles.
        let short = "== CAPACTIY:\nMATMUL, SALU\n    4     2\n== UTILIZATION:\n0 1\n";
        let ok = bundles.replace("LX", "LB");
        let e = parse_kernel(&ok, p, analysis, p, short, p).expect_err("rows");
        assert!(e.expected.contains("one utilization row per bundle"), "{e}");
        // A unit used past its capacity.
        let over = "== CAPACTIY:\nMATMUL, SALU\n    4     2\n== UTILIZATION:\n0 1\n0 3\n";
        let e = parse_kernel(&ok, p, analysis, p, over, p).expect_err("capacity");
        assert_eq!(e.line, 6);
        let k = parse_kernel(&ok, p, analysis, p, util, p).expect("reads");
        assert_eq!(k.loops.len(), 1);
        assert_eq!(
            (k.loops[0].start, k.loops[0].bundles, k.loops[0].slots[1]),
            (1, 1, 1)
        );
    }

    #[test]
    fn exit_tests_against_a_constant_give_trips() {
        let body = "{ %588 = vsyncadd (%p433_p5), %s304_s5, 4294965248  ;;  %p18_p7 = scmp.ge.s32.totalorder %s649_s15, 6 /* loop exit test */  ;;  %s848_s9 = smov.u32 %s595_s10 }";
        assert_eq!(exit_test_trips(body), Some(6));
        let dynamic =
            "{ %p18_p7 = scmp.ge.s32.totalorder %s649_s15, %s12_s3 /* loop exit test */ }";
        assert_eq!(exit_test_trips(dynamic), None);
    }
}
