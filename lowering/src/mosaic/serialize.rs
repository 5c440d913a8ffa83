//! Writing a verified module in the stable Mosaic form that libtpu loads, and
//! in MLIR's readable form.
//!
//! The stable form (`stable_mosaic.version = 11`) writes every operation
//! generically as `"stable_mosaic.<dialect>.<op>"(...)` with all of its
//! attributes in the attribute dictionary (no `<{properties}>`), which is what
//! Mosaic's deserializer expects before it upgrades version 11 to its own.
//! MLIR's generic printer would write inherent attributes of registered
//! operations as properties, so this module prints operations itself and
//! leaves types and attributes to MLIR's printer.
//!
//! The body is MLIR text, not bytecode: it is what this printer can produce
//! from a module whose operations keep their upstream names, it is
//! deterministic and readable inside kernel packages, and libtpu accepts it.
//!
//! Both forms map the build-time memory spaces (see `mlir::MemSpace`) to
//! `#tpu.memory_space<...>` and the semaphore stand-in element to
//! `!tpu.dma_semaphore`.

use super::mlir::MemSpace;
use melior::ir::operation::OperationLike;
use melior::ir::{BlockLike, BlockRef, Module, OperationRef, RegionLike, RegionRef, ValueLike};
use std::collections::HashMap;
use std::fmt::Write as _;

/// The stable Mosaic version written.
pub const VERSION: i64 = 11;

/// The serialized stable Mosaic text of `module`; `locations` writes a
/// `loc(...)` after every operation.
pub(crate) fn stable(module: &Module<'_>, locations: bool) -> Result<String, String> {
    let mut p = Printer {
        out: String::new(),
        names: HashMap::new(),
        next_value: 0,
        next_arg: 0,
        locations,
    };
    let _ = writeln!(
        p.out,
        "module attributes {{stable_mosaic.version = {VERSION} : i64}} {{"
    );
    let mut op = module.body().first_operation();
    while let Some(o) = op {
        // Each top-level function numbers its values from zero, as MLIR does.
        p.names.clear();
        p.next_value = 0;
        p.next_arg = 0;
        p.op(o, 2)?;
        op = o.next_in_block();
    }
    p.out.push_str("}\n");
    Ok(p.out)
}

/// The first line of [`pretty`]: what the text is and how its memory
/// spaces read.
pub const PRETTY_HEADER: &str = "\
// Mosaic in MLIR's readable form: upstream operations in their own syntax, tpu
// operations generic, each operation with its .pk location. Memory spaces are the
// build-time integers: 1 = #tpu.memory_space<vmem>, 2 = smem, 3 = any,
// 4 = semaphore_mem (where i32 stands for !tpu.dma_semaphore), so that MLIR tools
// parse it (mlir-opt --allow-unregistered-dialect). libtpu compiles the stable
// form that `pkc emit stablehlo` embeds.
";

/// Added to [`PRETTY_HEADER`] when the module has plain semaphores.
pub const PRETTY_SEM_NOTE: &str = "\
// 5 = semaphore_mem (where i32 stands for !tpu.semaphore: plain and barrier
// semaphores).
";

/// MLIR's own (custom-syntax) printing of `module`, after
/// [`PRETTY_HEADER`]: build-time memory spaces, and each operation followed
/// by its `.pk` location in MLIR's syntax (`loc("add.pk":19:13)`, written
/// in place rather than as `#loc` aliases), so that the text parses back.
pub(crate) fn pretty(module: &Module<'_>) -> Result<String, String> {
    let flags = melior::ir::operation::OperationPrintingFlags::new().enable_debug_info(true, false);
    let text = module
        .as_operation()
        .to_string_with_flags(flags)
        .map_err(|e| e.to_string())?;
    let mut s = String::from(PRETTY_HEADER);
    if text.contains(", 5>") {
        s.push_str(PRETTY_SEM_NOTE);
    }
    s.push_str(&inline_location_aliases(&text));
    if !s.ends_with('\n') {
        s.push('\n');
    }
    Ok(s)
}

/// Replaces every `#locN` reference of MLIR's printer by the location it
/// names and drops the alias definitions (`#locN = loc(...)` lines at the
/// end), so that each operation shows its location where it stands.
fn inline_location_aliases(text: &str) -> String {
    let mut defs: HashMap<&str, &str> = HashMap::new();
    let mut body = Vec::new();
    for line in text.lines() {
        match line.split_once(" = loc(") {
            Some((name, _)) if name.starts_with("#loc") && !name.contains(' ') => {
                // `loc(...)` without its `loc(` and `)`.
                let inner = &line[name.len() + " = loc(".len()..line.len() - 1];
                defs.insert(name, inner);
            }
            _ => body.push(line),
        }
    }
    // Aliases may refer to earlier aliases (fused or named locations).
    let resolve = |mut s: String| {
        for _ in 0..8 {
            if !s.contains("#loc") {
                break;
            }
            s = replace_aliases(&s, &defs);
        }
        s
    };
    let mut out = String::with_capacity(text.len());
    for line in body {
        out.push_str(&resolve(line.to_string()));
        out.push('\n');
    }
    out
}

/// One pass of alias replacement: `loc(#locN)` becomes `loc(<def>)`, and a
/// bare `#locN` (inside a fused location) becomes `<def>`.
fn replace_aliases(s: &str, defs: &HashMap<&str, &str>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("#loc") {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let end = 4 + tail[4..]
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(tail.len() - 4);
        let name = &tail[..end];
        match defs.get(name) {
            Some(def) => out.push_str(def),
            None => out.push_str(name),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

struct Printer {
    out: String,
    names: HashMap<usize, String>,
    next_value: usize,
    next_arg: usize,
    locations: bool,
}

fn key<'c>(v: impl ValueLike<'c>) -> usize {
    v.to_raw().ptr as usize
}

impl Printer {
    fn name<'c>(&self, v: impl ValueLike<'c>) -> Result<&str, String> {
        self.names
            .get(&key(v))
            .map(String::as_str)
            .ok_or_else(|| "an operand is used before its definition".to_string())
    }

    fn op(&mut self, op: OperationRef<'_, '_>, indent: usize) -> Result<(), String> {
        let pad = " ".repeat(indent);
        self.out.push_str(&pad);
        let results: Vec<String> = op
            .results()
            .map(|r| {
                let n = format!("%{}", self.next_value);
                self.next_value += 1;
                self.names.insert(key(r), n.clone());
                n
            })
            .collect();
        if !results.is_empty() {
            let _ = write!(self.out, "{} = ", results.join(", "));
        }
        let name = op.name();
        let name = name.as_string_ref();
        let name = name.as_str().map_err(|e| e.to_string())?;
        let operands = op
            .operands()
            .map(|v| self.name(v).map(str::to_string))
            .collect::<Result<Vec<_>, _>>()?;
        let _ = write!(
            self.out,
            "\"stable_mosaic.{name}\"({})",
            operands.join(", ")
        );
        if op.region_count() > 0 {
            self.out.push_str(" (");
            for (i, r) in op.regions().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.region(r, indent)?;
            }
            self.out.push(')');
        }
        let mut attrs = op
            .attributes()
            .map(|(k, v)| {
                let k = k
                    .as_string_ref()
                    .as_str()
                    .map(str::to_string)
                    .map_err(|e| e.to_string())?;
                Ok((k, map_memrefs(&v.to_string())?))
            })
            .collect::<Result<Vec<(String, String)>, String>>()?;
        attrs.sort();
        if !attrs.is_empty() {
            let list: Vec<String> = attrs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            let _ = write!(self.out, " {{{}}}", list.join(", "));
        }
        let ins = op
            .operands()
            .map(|v| map_memrefs(&v.r#type().to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let outs = op
            .results()
            .map(|v| map_memrefs(&v.r#type().to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let outs = if outs.len() == 1 {
            outs[0].clone()
        } else {
            format!("({})", outs.join(", "))
        };
        let _ = write!(self.out, " : ({}) -> {outs}", ins.join(", "));
        if self.locations {
            let _ = write!(self.out, " {}", op.location());
        }
        self.out.push('\n');
        Ok(())
    }

    fn region(&mut self, r: RegionRef<'_, '_>, indent: usize) -> Result<(), String> {
        self.out.push_str("{\n");
        let mut block = r.first_block();
        let mut first = true;
        while let Some(b) = block {
            self.block(b, indent, first)?;
            first = false;
            block = b.next_in_region();
        }
        let _ = write!(self.out, "{}}}", " ".repeat(indent));
        Ok(())
    }

    fn block(&mut self, b: BlockRef<'_, '_>, indent: usize, first: bool) -> Result<(), String> {
        let n = b.argument_count();
        if n > 0 || !first {
            let mut args = Vec::new();
            for i in 0..n {
                let a = b.argument(i).map_err(|e| e.to_string())?;
                let name = format!("%arg{}", self.next_arg);
                self.next_arg += 1;
                self.names.insert(key(a), name.clone());
                args.push(format!("{name}: {}", map_memrefs(&a.r#type().to_string())?));
            }
            let _ = writeln!(self.out, "{}^bb0({}):", " ".repeat(indent), args.join(", "));
        }
        let mut op = b.first_operation();
        while let Some(o) = op {
            self.op(o, indent + 2)?;
            op = o.next_in_block();
        }
        Ok(())
    }
}

/// Rewrites every `memref<...>` in MLIR text whose memory space is one of the
/// build-time integers, to `#tpu.memory_space<...>` (and semaphore elements
/// to `!tpu.dma_semaphore`). Other memrefs are left as they are.
pub(crate) fn map_memrefs(text: &str) -> Result<String, String> {
    const OPEN: &str = "memref<";
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = text;
    while let Some(i) = rest.find(OPEN) {
        out.push_str(&rest[..i]);
        let inner_start = i + OPEN.len();
        let len = closing(&rest[inner_start..])
            .ok_or_else(|| format!("unbalanced memref type in `{text}`"))?;
        out.push_str(OPEN);
        out.push_str(&map_inner(&rest[inner_start..inner_start + len])?);
        out.push('>');
        rest = &rest[inner_start + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The offset of the `>` that closes a type whose `<` precedes `s`; the `>`
/// of `->` (inside affine maps) does not count.
fn closing(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if prev != '-' => {
                if depth == 0 {
                    return Some(i);
                }
                depth -= 1;
            }
            _ => {}
        }
        prev = c;
    }
    None
}

fn map_inner(inner: &str) -> Result<String, String> {
    let mut parts = split_top(inner);
    let space = match parts.last().map(|p| p.trim().parse::<i64>()) {
        Some(Ok(code)) if parts.len() >= 2 => MemSpace::ALL
            .into_iter()
            .find(|s| *s as i64 == code)
            .ok_or_else(|| format!("unknown memory space {code} in `memref<{inner}>`"))?,
        _ => return Ok(inner.to_string()),
    };
    if matches!(space, MemSpace::Semaphore | MemSpace::Sem) {
        let name = if space == MemSpace::Sem {
            "!tpu.semaphore"
        } else {
            "!tpu.dma_semaphore"
        };
        let elem = match parts[0].rsplit_once('x') {
            Some((shape, "i32")) => format!("{shape}x{name}"),
            None if parts[0] == "i32" => name.to_string(),
            _ => return Err(format!("unexpected semaphore memref `memref<{inner}>`")),
        };
        parts[0] = elem;
    }
    let last = parts.len() - 1;
    parts[last] = format!("#tpu.memory_space<{}>", space.tpu_name());
    Ok(parts.join(", "))
}

/// Splits at commas outside brackets.
fn split_top(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '<' | '[' | '(' => depth += 1,
            '>' | ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur.trim().to_string());
    parts
}

#[cfg(test)]
mod tests {
    use super::map_memrefs;

    #[test]
    fn memory_spaces_become_tpu_attributes() {
        let t = "(memref<256x512xbf16, 1>, memref<8xi32, 2>) -> memref<f32, 3>";
        assert_eq!(
            map_memrefs(t).unwrap(),
            "(memref<256x512xbf16, #tpu.memory_space<vmem>>, memref<8xi32, #tpu.memory_space<smem>>) \
             -> memref<f32, #tpu.memory_space<any>>"
        );
    }

    #[test]
    fn semaphores_get_their_element_type() {
        assert_eq!(
            map_memrefs("memref<2xi32, 4>").unwrap(),
            "memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>"
        );
        assert_eq!(
            map_memrefs("memref<i32, 4>").unwrap(),
            "memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>"
        );
    }

    #[test]
    fn layouts_and_plain_memrefs_are_kept() {
        let t = "memref<8x128xf32, strided<[128, 1], offset: ?>, 1> memref<4xf32>";
        assert_eq!(
            map_memrefs(t).unwrap(),
            "memref<8x128xf32, strided<[128, 1], offset: ?>, #tpu.memory_space<vmem>> memref<4xf32>"
        );
        assert!(map_memrefs("memref<4xf32, 9>").is_err());
        assert!(map_memrefs("memref<4xf32").is_err());
    }
}
