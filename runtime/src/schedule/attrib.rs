//! Which `.pk` line each operation of libtpu's final program comes from
//! (`pkc profile`).
//!
//! Asked with `--xla_mosaic_enable_llo_source_annotations=true`, libtpu
//! 0.0.51 writes after an operation of the final bundles the location of
//! the Mosaic operation it was lowered from:
//! `%247 = vst [vmem:[%s3442_s12] sm:$0xff] %v3194_v0 /* loc("k.pk":31:13) */`,
//! and those are the `.pk` locations pk attaches to the Mosaic module. The
//! operations libtpu makes later (coalesced loads, spills, the grid's
//! pipeline: DMAs, sync flags, loop control) carry none. So:
//!
//! - an operation with a location has that line (**stated**);
//! - a vector operation without one is given a line **by data flow** when
//!   every operation it reads or that reads it that has a line has that
//!   same one (repeated until nothing changes: a coalesced load that feeds
//!   only the matmul's pushes is the matmul's); scalar code and DMAs,
//!   which serve every line at once (indices, addresses, the grid's loop),
//!   are not;
//! - the rest stays without a line, reported by what it is (DMA and sync
//!   flags, scalar, vector).
//!
//! invariant: no other rule gives a line. A location naming a file that
//! does not read as `loc("FILE":LINE:COL)` (or a form holding one), or a
//! program where no operation has one, is a [`FormatError`]: the profile then says so
//! rather than guess.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::parse::{bundle_line, err};
use super::FormatError;

/// Where an operation of the final program comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// A `.pk` file (an index into [`Attribution::files`]) and line
    /// (1-based), as libtpu states it.
    Line(u16, u32),
    /// The same, given by data flow.
    Inferred(u16, u32),
    /// No location and none by data flow.
    None,
}

impl Origin {
    /// The file and line, stated or inferred.
    pub fn line(self) -> Option<(u16, u32)> {
        match self {
            Origin::Line(f, l) | Origin::Inferred(f, l) => Some((f, l)),
            Origin::None => None,
        }
    }
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
    /// The `.pk` files the locations name, as [`Origin`] indexes them (a
    /// kernel calls functions of other files: `std/nn.pk`).
    pub files: Vec<String>,
    /// Per bundle of the final program, in order: its address and ops.
    pub bundles: Vec<(u64, Vec<Op>)>,
    /// Operations of the whole program with a stated line, and given one
    /// by data flow.
    pub stated: u64,
    pub inferred: u64,
}

/// `%v2683_v23` or `%1087`: the instruction's number.
fn instruction_number(name: &str) -> Option<u64> {
    let t = name.strip_prefix('%')?;
    let t = t.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The first `"file":line` in a location's text.
fn file_line(def: &str) -> Option<(String, u32)> {
    let start = def.find('"')?;
    let rest = &def[start + 1..];
    let end = rest.find('"')?;
    let file = &rest[..end];
    let after = rest[end + 1..].strip_prefix(':')?;
    let line: String = after.chars().take_while(char::is_ascii_digit).collect();
    Some((file.to_string(), line.parse().ok()?))
}

struct Parsed {
    number: Option<u64>,
    mnemonic: String,
    operands: Vec<u64>,
    origin: Origin,
}

/// Reads the final bundles (`path` names them in errors) with libtpu's
/// source annotations into each operation's origin.
pub fn attribute(bundles: &str, path: &Path) -> Result<Attribution, FormatError> {
    let mut files: Vec<String> = Vec::new();
    let mut parsed: Vec<(u64, Vec<Parsed>)> = Vec::new();
    let mut stated = 0;
    for (i, line) in bundles.lines().enumerate() {
        let Some(b) = bundle_line(line) else { continue };
        let body = b.body.strip_prefix('{').unwrap_or(b.body);
        // The bundle ends at its last `}` (a trailing comment may follow);
        // comments inside hold no `}`.
        let body = match body.rfind('}') {
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
                Some((lhs, rhs)) if lhs.starts_with('%') => (instruction_number(lhs.trim()), rhs),
                _ => (None, seg),
            };
            let mnemonic = rhs.split_whitespace().next().unwrap_or("");
            let (code, loc) = match rhs.find("/* loc(") {
                Some(p) => (&rhs[..p], Some(&rhs[p + 7..])),
                None => (rhs, None),
            };
            let operands = code
                .split('%')
                .skip(1)
                .filter_map(|t| instruction_number(&format!("%{t}")))
                .collect();
            let origin = match loc {
                None => Origin::None,
                // `loc(unknown)` and other forms naming no file: none.
                Some(l) if !l.split(") */").next().unwrap_or(l).contains('"') => Origin::None,
                Some(l) => {
                    let inner = l.split(") */").next().unwrap_or(l);
                    let (file, n) = file_line(inner)
                        .ok_or_else(|| err(path, i + 1, "a location `loc(\"FILE\":LINE:COL)`"))?;
                    let f = match files.iter().position(|x| *x == file) {
                        Some(f) => f,
                        None => {
                            files.push(file);
                            files.len() - 1
                        }
                    };
                    stated += 1;
                    Origin::Line(f.min(u16::MAX as usize) as u16, n)
                }
            };
            ops.push(Parsed {
                number,
                mnemonic: mnemonic.to_string(),
                operands,
                origin,
            });
        }
        parsed.push((b.address, ops));
    }
    if parsed.is_empty() {
        return Err(err(path, 0, "bundle lines (`ADDR : { ... }`)"));
    }
    if stated == 0 {
        return Err(err(
            path,
            0,
            "source locations (`/* loc(...) */`) after the operations, as \
             --xla_mosaic_enable_llo_source_annotations asks",
        ));
    }
    let inferred = by_data_flow(&mut parsed);
    let bundles = parsed
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
        files,
        bundles,
        stated,
        inferred,
    })
}

/// Gives each operation without a line the one line every operation it
/// reads or that reads it has, where they have one; returns how many.
fn by_data_flow(parsed: &mut [(u64, Vec<Parsed>)]) -> u64 {
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
    let mut inferred = 0;
    loop {
        let mut found = Vec::new();
        for (bi, (_, ops)) in parsed.iter().enumerate() {
            for (oi, op) in ops.iter().enumerate() {
                // Vector operations only: scalar code (indices, addresses,
                // the loop) and DMAs serve every line at once.
                let vector = op.mnemonic.starts_with('v') && !op.mnemonic.starts_with("vsync");
                if op.origin != Origin::None || !vector {
                    continue;
                }
                let mut seen: HashSet<(u16, u32)> = HashSet::new();
                for n in &op.operands {
                    if let Some(&(b, o)) = defs.get(n) {
                        seen.extend(parsed[b].1[o].origin.line());
                    }
                }
                for &(b, o) in op.number.and_then(|n| users.get(&n)).into_iter().flatten() {
                    seen.extend(parsed[b].1[o].origin.line());
                }
                if seen.len() == 1 {
                    if let Some(&(f, l)) = seen.iter().next() {
                        found.push((bi, oi, Origin::Inferred(f, l)));
                    }
                }
            }
        }
        if found.is_empty() {
            break;
        }
        for (bi, oi, o) in found {
            parsed[bi].1[oi].origin = o;
            inferred += 1;
        }
    }
    inferred
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stated_lines_and_lines_by_data_flow() {
        let bundles = "   0   :  { %v5_v0 = vld [vmem:[%s1_s0]] /* loc(\"k.pk\":7:3) */  ;;  %9 = dma %s1_s0  ;;  %s2_s1 = sadd.s32 1, %s1_s0 }\n   0x1   :  { %v6_v1 = vmul.f32 %v5_v0, 1.44 }\n   0x2   :  { %v7_v2 = vexp2.f32 %v6_v1 /* loc(\"std/nn.pk\":31:9) */  ;;  %v20_v3 = vmov 0 }\n   0x3   :  { %8 = vst [vmem:[%s1_s0]] %v7_v2 /* loc(callsite(\"k.pk\":9:5 at \"k.pk\":2:1)) */  ;;  %v31_v6 = vadd.f32 %v7_v2, %v5_v0 } /* End region 4 */\n   0x4   :  {}\n";
        let p = Path::new("x");
        let a = attribute(bundles, p).expect("reads");
        let origins: Vec<Vec<Origin>> = a
            .bundles
            .iter()
            .map(|(_, ops)| ops.iter().map(|o| o.origin).collect())
            .collect();
        assert_eq!(a.files, vec!["k.pk".to_string(), "std/nn.pk".to_string()]);
        assert_eq!(
            origins,
            vec![
                vec![Origin::Line(0, 7), Origin::None, Origin::None],
                // Reads line 7 and is read by nn.pk:31: two lines.
                vec![Origin::None],
                vec![Origin::Line(1, 31), Origin::None],
                // Reads nn.pk:31 and k.pk:7: two lines.
                vec![Origin::Line(0, 9), Origin::None],
                vec![],
            ]
        );
        // A load read only by a stated line's operation is that line's.
        let chain = "   0   :  { %v5_v0 = vld [vmem:[%s1_s0]]  ;;  %s3_s2 = smov 4 }\n   0x1   :  { %v6_v1 = vor.u32 %v5_v0, %v5_v0 }\n   0x2   :  { %7 = vmatpush.bf16 %v6_v1 /* loc(\"k.pk\":33:18) */ }\n";
        let a = attribute(chain, p).expect("reads");
        let o: Vec<Origin> = a
            .bundles
            .iter()
            .flat_map(|(_, o)| o.iter().map(|o| o.origin))
            .collect();
        assert_eq!(
            o,
            vec![
                Origin::Inferred(0, 33),
                Origin::None,
                Origin::Inferred(0, 33),
                Origin::Line(0, 33)
            ]
        );
        assert_eq!((a.stated, a.inferred), (1, 2));
    }

    #[test]
    fn unreadable_or_missing_locations_are_format_errors() {
        let p = Path::new("b.txt");
        let e = attribute("   0   :  { %1 = vadd.f32 %a /* loc(\"k.pk\") */ }\n", p).unwrap_err();
        assert_eq!(e.line, 1);
        // `loc(unknown)` is no location; a program with none at all is not
        // what was asked for.
        let e = attribute("   0   :  { %1 = vadd.f32 %a /* loc(unknown) */ }\n", p).unwrap_err();
        assert!(e.expected.contains("source locations"), "{e}");
        let e = attribute("   0   :  { %1 = vadd.f32 %2, %3 }\n", p).unwrap_err();
        assert!(e.expected.contains("source locations"), "{e}");
    }
}
