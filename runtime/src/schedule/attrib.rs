//! Which `.pk` line each operation of libtpu's final program comes from,
//! as far as libtpu's dumps say (`pkc profile`).
//!
//! libtpu's final bundles carry no source locations, but they keep the
//! number of each LLO instruction (`%1087 = vmatmul...`) from the first
//! LLO program (`*-original.txt`) on, and the Mosaic module after its last
//! pass (`*-post-finalize-llo.txt`, dumped with
//! `--xla_mosaic_enable_dump_debug_info`) gives each `llo.*` operation the
//! `.pk` `file:line:col` pk attached. The first LLO program is that module
//! lowered in order, so its instructions are matched to Mosaic's
//! operations:
//!
//! - by kind and order: when Mosaic holds as many operations of a kind
//!   (`llo.vector_load`) as the first program holds instructions of the
//!   matching kind (`vld`), the k-th of one is the k-th of the other;
//!   kinds whose counts differ (a lowering that expands an operation into
//!   several) are not matched this way;
//! - by position: a vector instruction left between two matched ones is
//!   given a line when those two and every Mosaic operation between them
//!   have that one line (it was lowered from them);
//! - by data flow, in the final program: an operation a later pass made
//!   (a coalesced load, a packing `vor`), or one not matched, is given a
//!   line when every
//!   operation it reads from or that reads it, that has an origin, has
//!   that one line (repeated until nothing changes); an operation that
//!   also touches the pipeline's, or two lines', stays unattributed.
//!
//! invariant: an operation gets a line only by one of these two rules;
//! everything else is reported as what it is: the grid pipeline libtpu
//! adds (kinds Mosaic never has: DMAs, sync flags, loop control), made by
//! libtpu's later passes (numbers the first program does not have), or
//! not matched. A dump that does not read as expected is a
//! [`FormatError`], never a guess.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use super::parse::{bundle_line, err};
use super::FormatError;

/// Where an operation of the final program comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// A `.pk` file (an index into [`Attribution::files`]) and line
    /// (1-based).
    Line(u16, u32),
    /// A kind of instruction the Mosaic module never has: the grid's
    /// pipeline (DMAs, sync flags, the loop's control) libtpu adds.
    Pipeline,
    /// Not in the first LLO program: made by libtpu's later passes
    /// (coalesced loads, packing, spills, moves).
    LaterPass,
    /// In the first LLO program, but not matched to a Mosaic operation.
    Unmatched,
}

/// One operation of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// libtpu's mnemonic (`vmatmul.bf16.gmra.mxu0`).
    pub mnemonic: String,
    pub origin: Origin,
}

/// The final program's operations by bundle, with their origins.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribution {
    /// The `.pk` file Mosaic's locations name the most (the kernel's).
    pub file: Option<String>,
    /// Every `.pk` file the locations name (a kernel calls functions of
    /// others), as [`Origin::Line`] indexes them.
    pub files: Vec<String>,
    /// Per bundle of the final program, in order: its address and ops.
    pub bundles: Vec<(u64, Vec<Op>)>,
    /// Instructions of the first LLO program matched by kind and order,
    /// and by position.
    pub matched_by_kind: u64,
    pub matched_by_position: u64,
    /// Operations of the final program made by later passes or not
    /// matched, given the one line that every operation they read or that
    /// reads them has.
    pub matched_by_data_flow: u64,
    /// Kinds whose counts differ, `kind: Mosaic n, LLO m`.
    pub unmatched_kinds: Vec<String>,
}

/// Whether an LLO kind is a vector instruction (not a sync flag's).
fn is_vector(kind: &str) -> bool {
    kind.starts_with('v') && !kind.starts_with("vsync")
}

/// The kind of an LLO mnemonic: its first dotted part.
fn kind(mnemonic: &str) -> &str {
    mnemonic.split('.').next().unwrap_or(mnemonic)
}

/// The LLO kind a Mosaic `llo.*` operation lowers to, where the names
/// differ (libtpu 0.0.51).
fn llo_kind(mosaic: &str) -> &str {
    match mosaic {
        "vector_load" => "vld",
        "vector_store" => "vst",
        "vmatres" => "vpop",
        "vlatch" => "vmatpush",
        "vexp" => "vexp2",
        "vrecip" => "vrcp",
        other => other,
    }
}

/// `%v2683_v23` or `%1087`: the instruction's number.
fn instruction_number(name: &str) -> Option<u64> {
    let t = name.strip_prefix('%')?;
    let t = t.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The Mosaic module's `llo.*` operations in order: kind and line (None
/// where the location is unknown or not a `.pk` file's), and the file.
#[allow(clippy::type_complexity)]
fn mosaic_ops(
    text: &str,
    path: &Path,
) -> Result<(Vec<(String, Option<(u16, u32)>)>, Vec<String>), FormatError> {
    // `#loc12 = loc("/k/matmul.pk":33:22)`; other forms (fused, named,
    // callsite) give the first file location inside them.
    let mut locs: HashMap<&str, Option<(String, u32)>> = HashMap::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some((name, def)) = t.split_once(" = loc(") {
            if name.starts_with("#loc") && !name.contains(' ') {
                locs.insert(name, file_line(def));
            }
        }
    }
    let mut ops = Vec::new();
    let mut files: Vec<String> = Vec::new();
    let mut in_func = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("func.func") {
            in_func = true;
            continue;
        }
        if !in_func || t.starts_with('#') {
            continue;
        }
        // `%5 = llo.vadd.f32 ...`, `"llo.vlatch"(%7) ...`, `llo.vector_store ...`
        let op = match t.split_once(" = ") {
            Some((lhs, rhs)) if lhs.starts_with('%') => rhs,
            _ => t,
        };
        let op = op.trim_start_matches('"');
        let Some(rest) = op.strip_prefix("llo.") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
            .collect();
        if name.is_empty() {
            return Err(err(path, i + 1, "an `llo.` operation name"));
        }
        let at = match t.rfind("loc(") {
            Some(p) => {
                let inner = &t[p + 4..];
                if let Some(r) = inner.strip_prefix('#') {
                    let id: String = r
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    match locs.get(format!("#{id}").as_str()) {
                        Some(l) => l.clone(),
                        None => {
                            return Err(err(path, i + 1, format!("a defined location `#{id}`")))
                        }
                    }
                } else {
                    file_line(inner)
                }
            }
            None => None,
        };
        let line_no = match at {
            Some((file, l)) if file.ends_with(".pk") => {
                let i = match files.iter().position(|f| *f == file) {
                    Some(i) => i,
                    None => {
                        files.push(file);
                        files.len() - 1
                    }
                };
                Some((i.min(u16::MAX as usize) as u16, l))
            }
            _ => None,
        };
        let kind = name.split('.').next().unwrap_or(&name).to_string();
        ops.push((llo_kind(&kind).to_string(), line_no));
    }
    if !in_func {
        return Err(err(path, 0, "a `func.func` of the kernel"));
    }
    Ok((ops, files))
}

/// The first `"file":line:col` in a location's text.
fn file_line(def: &str) -> Option<(String, u32)> {
    let start = def.find('"')?;
    let rest = &def[start + 1..];
    let end = rest.find('"')?;
    let file = &rest[..end];
    let after = rest[end + 1..].strip_prefix(':')?;
    let line: String = after.chars().take_while(char::is_ascii_digit).collect();
    Some((file.to_string(), line.parse().ok()?))
}

/// The first LLO program's instructions in order: number and kind.
fn llo_instructions(text: &str, path: &Path) -> Result<Vec<(u64, String)>, FormatError> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if !t.starts_with('%') {
            continue;
        }
        let Some((lhs, rhs)) = t.split_once(" = ") else {
            continue;
        };
        let Some(n) = instruction_number(lhs) else {
            continue;
        };
        let mnemonic = rhs.split_whitespace().next().unwrap_or("");
        out.push((n, kind(mnemonic).to_string()));
    }
    if out.is_empty() {
        return Err(err(path, 0, "instructions (`%N = op ...`)"));
    }
    Ok(out)
}

/// The `*-post-finalize-llo.txt` file of the Mosaic dump in `dir`: exactly
/// one (one kernel per compile).
fn finalize_llo(dir: &Path) -> Result<std::path::PathBuf, FormatError> {
    let mut found = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| err(dir, 0, format!("a readable Mosaic dump ({e})")))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with("-post-finalize-llo.txt") {
            found.push(e.path());
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        n => Err(err(
            dir,
            0,
            format!("one Mosaic module after `finalize-llo` (found {n})"),
        )),
    }
}

/// Maps the final program `bundles` to `.pk` lines through the first LLO
/// program `original` and the Mosaic dump in `mosaic_dir`.
pub fn attribute(
    bundles: &str,
    bundles_path: &Path,
    original: &str,
    original_path: &Path,
    mosaic_dir: &Path,
) -> Result<Attribution, FormatError> {
    let mpath = finalize_llo(mosaic_dir)?;
    let mtext = std::fs::read_to_string(&mpath)
        .map_err(|e| err(&mpath, 0, format!("a readable text file ({e})")))?;
    attribute_texts(
        bundles,
        bundles_path,
        original,
        original_path,
        &mtext,
        &mpath,
    )
}

/// [`attribute`] on the three texts.
pub fn attribute_texts(
    bundles: &str,
    bundles_path: &Path,
    original: &str,
    original_path: &Path,
    mosaic: &str,
    mosaic_path: &Path,
) -> Result<Attribution, FormatError> {
    let (mops, files) = mosaic_ops(mosaic, mosaic_path)?;
    // The kernel's file: the one most operations are located in.
    let mut per_file = vec![0usize; files.len()];
    for (_, l) in &mops {
        if let Some((f, _)) = l {
            per_file[*f as usize] += 1;
        }
    }
    let file = (0..files.len())
        .max_by_key(|i| per_file[*i])
        .map(|i| files[i].clone());
    let llo = llo_instructions(original, original_path)?;
    let mosaic_kinds: HashSet<&str> = mops.iter().map(|(k, _)| k.as_str()).collect();
    // By kind and order.
    let mut by_kind_m: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (k, _)) in mops.iter().enumerate() {
        by_kind_m.entry(k.as_str()).or_default().push(i);
    }
    let mut by_kind_l: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (_, k)) in llo.iter().enumerate() {
        by_kind_l.entry(k.as_str()).or_default().push(i);
    }
    // LLO index -> Mosaic index.
    let mut anchors: Vec<(usize, usize)> = Vec::new();
    let mut unmatched_kinds = Vec::new();
    for (k, ms) in &by_kind_m {
        let ls = by_kind_l.get(k).map_or(&[][..], |v| v.as_slice());
        if ls.is_empty() {
            // Lowered to nothing (a bitcast, a constant) or to other kinds.
            continue;
        }
        if ls.len() == ms.len() {
            anchors.extend(ls.iter().copied().zip(ms.iter().copied()));
        } else {
            unmatched_kinds.push(format!("{k}: Mosaic {}, LLO {}", ms.len(), ls.len()));
        }
    }
    anchors.sort_unstable();
    // Keep the anchors in the same order on both sides: a kind matched out
    // of order is dropped whole.
    loop {
        let bad: HashSet<&str> = anchors
            .windows(2)
            .filter(|w| w[1].1 < w[0].1)
            .flat_map(|w| [llo[w[0].0].1.as_str(), llo[w[1].0].1.as_str()])
            .collect();
        if bad.is_empty() {
            break;
        }
        for k in &bad {
            unmatched_kinds.push(format!("{k}: matched out of order"));
        }
        anchors.retain(|(l, _)| !bad.contains(llo[*l].1.as_str()));
    }
    let mut origin: HashMap<u64, Origin> = HashMap::new();
    let mut matched_by_kind = 0;
    for &(l, m) in &anchors {
        if let Some(line) = mops[m].1 {
            origin.insert(llo[l].0, Origin::Line(line.0, line.1));
            matched_by_kind += 1;
        }
    }
    // By position: vector instructions between two anchors whose Mosaic
    // span has one line.
    let mut matched_by_position = 0;
    for w in anchors.windows(2) {
        let ((l0, m0), (l1, m1)) = (w[0], w[1]);
        if l1 <= l0 + 1 {
            continue;
        }
        let lines: HashSet<Option<(u16, u32)>> = mops[m0..=m1].iter().map(|(_, l)| *l).collect();
        let Some(Some(line)) = (lines.len() == 1)
            .then(|| lines.into_iter().next())
            .flatten()
        else {
            continue;
        };
        for (n, k) in &llo[l0 + 1..l1] {
            if is_vector(k) && !origin.contains_key(n) {
                origin.insert(*n, Origin::Line(line.0, line.1));
                matched_by_position += 1;
            }
        }
    }
    let original_numbers: HashMap<u64, &str> = llo.iter().map(|(n, k)| (*n, k.as_str())).collect();
    // Each operation of the final program: its number, mnemonic, operands
    // and origin.
    struct Parsed {
        number: Option<u64>,
        mnemonic: String,
        operands: Vec<u64>,
        origin: Origin,
    }
    let mut parsed: Vec<(u64, Vec<Parsed>)> = Vec::new();
    for line in bundles.lines() {
        let Some(b) = bundle_line(line) else { continue };
        let body = b.body.trim_start_matches('{');
        let body = match body.find('}') {
            Some(p) => &body[..p],
            None => body,
        };
        let mut ops = Vec::new();
        for seg in body.split(";;") {
            let seg = seg.trim();
            if seg.is_empty() {
                continue;
            }
            let (number, rhs) = match seg.split_once(" = ") {
                Some((lhs, rhs)) if lhs.starts_with('%') => (
                    instruction_number(lhs.split_whitespace().next().unwrap_or(lhs)),
                    rhs,
                ),
                _ => (None, seg),
            };
            let mnemonic = rhs.split_whitespace().next().unwrap_or("");
            let operands = rhs
                .split('%')
                .skip(1)
                .filter_map(|t| instruction_number(&format!("%{t}")))
                .collect();
            let o = match number.and_then(|n| Some((n, *original_numbers.get(&n)?))) {
                Some((n, k)) => match origin.get(&n) {
                    Some(o) => *o,
                    None if !mosaic_kinds.contains(k) && !is_vector(k) => Origin::Pipeline,
                    None => Origin::Unmatched,
                },
                None => Origin::LaterPass,
            };
            ops.push(Parsed {
                number,
                mnemonic: mnemonic.to_string(),
                operands,
                origin: o,
            });
        }
        parsed.push((b.address, ops));
    }
    if parsed.is_empty() {
        return Err(err(bundles_path, 0, "bundle lines (`ADDR : { ... }`)"));
    }
    // By data flow: an operation without a line (of a later pass, or not
    // matched) whose operands' and users' operations with an origin all
    // have one and the same line.
    let mut matched_by_data_flow = 0;
    let mut users: HashMap<u64, Vec<(usize, usize)>> = HashMap::new();
    let mut defs: HashMap<u64, (usize, usize)> = HashMap::new();
    for (bi, (_, ops)) in parsed.iter().enumerate() {
        for (oi, op) in ops.iter().enumerate() {
            if let Some(n) = op.number {
                defs.insert(n, (bi, oi));
            }
            for &u in &op.operands {
                users.entry(u).or_default().push((bi, oi));
            }
        }
    }
    for _round in 0..32 {
        let mut found = Vec::new();
        for (bi, (_, ops)) in parsed.iter().enumerate() {
            for (oi, op) in ops.iter().enumerate() {
                if !matches!(op.origin, Origin::LaterPass | Origin::Unmatched) {
                    continue;
                }
                let mut seen: HashSet<Origin> = HashSet::new();
                for n in &op.operands {
                    if let Some(&(b, o)) = defs.get(n) {
                        seen.insert(parsed[b].1[o].origin);
                    }
                }
                for &(b, o) in op.number.and_then(|n| users.get(&n)).into_iter().flatten() {
                    seen.insert(parsed[b].1[o].origin);
                }
                seen.remove(&Origin::LaterPass);
                seen.remove(&Origin::Unmatched);
                if let (1, Some(o @ Origin::Line(..))) = (seen.len(), seen.iter().next()) {
                    found.push((bi, oi, *o));
                }
            }
        }
        if found.is_empty() {
            break;
        }
        for (bi, oi, o) in found {
            parsed[bi].1[oi].origin = o;
            matched_by_data_flow += 1;
        }
    }
    let out = parsed
        .into_iter()
        .map(|(a, ops)| {
            let ops = ops
                .into_iter()
                .map(|p| Op {
                    mnemonic: p.mnemonic,
                    origin: p.origin,
                })
                .collect();
            (a, ops)
        })
        .collect();
    Ok(Attribution {
        file,
        files,
        bundles: out,
        matched_by_kind,
        matched_by_position,
        matched_by_data_flow,
        unmatched_kinds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_matched_by_kind_order_and_position() {
        let mosaic = "#loc3 = loc(\"k.pk\":7:3)\n#loc4 = loc(\"k.pk\":9:5)\nmodule {\n  func.func @k(%arg0: i32 {llo.type = i32} loc(\"-\":1:1)) {\n    %0 = llo.vector_load %arg0 : i32 loc(#loc3)\n    %1 = llo.vexp %0 : f32 loc(#loc3)\n    llo.vector_store %1 into %arg0 : i32 loc(#loc4)\n  }\n}\n";
        let original = "  %s1 = inlined_call_operand.hbm [x]\n  %s2 = sadd.s32 1, %s1\n  %v5 = vld [vmem:[%s1]]\n  %v6 = vmul.f32 %v5, 1.44\n  %v7 = vexp2.f32 %v6\n  %8 = vst [vmem:[%s1]] %v7\n  %9 = dma %s1\n";
        let bundles = "   0   :  { %v5_v0 = vld [vmem:[%s1_s0]]  ;;  %9 = dma %s1_s0  ;;  %s2_s1 = sadd.s32 1, %s1_s0 }\n   0x1   :  { %v6_v1 = vmul.f32 %v5_v0, 1.44 }\n   0x2   :  { %v7_v2 = vexp2.f32 %v6_v1  ;;  %v20_v3 = vmov 0 }\n   0x3   :  { %8 = vst [vmem:[%s1_s0]] %v7_v2  ;;  %v30_v5 = vor.u32 %v7_v2, %v7_v2  ;;  %v31_v6 = vadd.f32 %v7_v2, %s2_s1 }\n   0x4   :  {}\n";
        let p = Path::new("x");
        let a = attribute_texts(bundles, p, original, p, mosaic, p).expect("reads");
        let origins: Vec<Vec<Origin>> = a
            .bundles
            .iter()
            .map(|(_, ops)| ops.iter().map(|o| o.origin).collect())
            .collect();
        assert_eq!(
            origins,
            vec![
                vec![Origin::Line(0, 7), Origin::Pipeline, Origin::Pipeline],
                vec![Origin::Line(0, 7)],
                vec![Origin::Line(0, 7), Origin::LaterPass],
                // Reads line 7 only; reads line 7 and the pipeline.
                vec![Origin::Line(0, 9), Origin::Line(0, 7), Origin::LaterPass],
                vec![],
            ]
        );
        assert_eq!(
            (
                a.matched_by_kind,
                a.matched_by_position,
                a.matched_by_data_flow
            ),
            (3, 1, 1)
        );
        assert_eq!(a.file.as_deref(), Some("k.pk"));
    }

    #[test]
    fn an_undefined_location_is_a_format_error() {
        let mosaic = "func.func @k() {\n  %0 = llo.vadd.f32 %a, %b : f32 loc(#loc9)\n}\n";
        let p = Path::new("m.txt");
        let e = attribute_texts("0 : { }", p, "%1 = vadd.f32 %a", p, mosaic, p).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.expected.contains("#loc9"), "{e}");
    }
}
