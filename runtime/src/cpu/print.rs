//! `print` on the CPU reference: the format with its arguments, prefixed
//! with the kernel and the grid step, written to standard error in one
//! write (lines of parallel grid units never interleave). A tile is laid
//! out as numpy prints arrays: nested brackets, columns aligned, and only
//! the first and last three entries of each axis (with `...`) once it has
//! more than 1000 elements.

use super::error::Error;
use super::instance::{step_str, Host};
use pk_lang::ir::DType;
use std::io::Write;

/// numpy's `threshold` and `edgeitems`.
const THRESHOLD: usize = 1000;
const EDGE: usize = 3;

/// The text of the `print` at `site`; `tile` is the address of its tile.
pub(crate) fn text(host: &Host, mem: &[u8], site: u32, tile: u32) -> Result<String, Error> {
    let m = &host.m;
    let p = m
        .print_site(site)
        .ok_or_else(|| Error::Manifest(format!("print from unknown site {site}")))?;
    let word = |at: usize| -> Result<[u8; 4], Error> {
        mem.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| Error::Manifest(format!("print argument at {at} outside memory")))
    };
    let mut args = Vec::new();
    for i in 0..p.scalars as usize {
        let at = m.layout.args_offset as usize + 4 * i;
        args.push(i32::from_le_bytes(word(at)?).to_string());
    }
    if let Some((d, shape)) = &p.tile {
        let dtype = DType::from_name(d)
            .ok_or_else(|| Error::Manifest(format!("print of a tile of dtype `{d}`")))?;
        let dims: Vec<usize> = shape.iter().map(|&s| s as usize).collect();
        let n = dims
            .iter()
            .try_fold(1usize, |a, &b| a.checked_mul(b))
            .filter(|&n| {
                n.checked_mul(4)
                    .is_some_and(|b| tile as usize + b <= mem.len())
            })
            .ok_or_else(|| Error::Manifest(format!("a printed tile {shape:?} outside memory")))?;
        let mut vals = Vec::with_capacity(n);
        for i in 0..n {
            let b = word(tile as usize + 4 * i)?;
            vals.push(if dtype.is_float() {
                f32::from_le_bytes(b).to_string()
            } else {
                i32::from_le_bytes(b).to_string()
            });
        }
        args.push(array(&vals, &dims));
    }
    Ok(format!(
        "[{} {}] {}\n",
        m.kernel,
        step_str(&host.step),
        fill(&p.fmt, &args)
    ))
}

/// Writes the `print` at `site` to standard error.
pub(crate) fn print(host: &Host, mem: &[u8], site: u32, tile: u32) -> Result<(), Error> {
    let t = text(host, mem, site, tile)?;
    // A closed standard error loses the line, as it would any message.
    let _ = std::io::stderr().lock().write_all(t.as_bytes());
    Ok(())
}

/// `fmt` with each `{}` replaced by the next argument (kept when there is
/// none) and doubled braces made single.
pub(crate) fn fill(fmt: &str, args: &[String]) -> String {
    let mut out = String::new();
    let mut next = args.iter();
    let mut it = fmt.chars().peekable();
    while let Some(c) = it.next() {
        match (c, it.peek()) {
            ('{', Some('}')) => {
                it.next();
                match next.next() {
                    Some(a) => out.push_str(a),
                    None => out.push_str("{}"),
                }
            }
            ('{', Some('{')) | ('}', Some('}')) => {
                it.next();
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// `vals` (row-major) of `shape` as numpy prints an array.
pub(crate) fn array(vals: &[String], shape: &[usize]) -> String {
    let summarise = vals.len() > THRESHOLD;
    let width = vals.iter().map(String::len).max().unwrap_or(0);
    let mut out = String::new();
    nested(vals, shape, 0, 0, summarise, width, &mut out);
    out
}

fn nested(
    vals: &[String],
    shape: &[usize],
    offset: usize,
    depth: usize,
    summarise: bool,
    width: usize,
    out: &mut String,
) {
    let Some((&n, rest)) = shape.split_first() else {
        out.push_str(&format!("{:>width$}", vals.get(offset).map_or("", |s| s)));
        return;
    };
    let stride: usize = rest.iter().product();
    let shown: Vec<Option<usize>> = if summarise && n > 2 * EDGE {
        (0..EDGE)
            .map(Some)
            .chain([None])
            .chain((n - EDGE..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    };
    let sep = if rest.is_empty() {
        " ".to_string()
    } else {
        "\n".repeat(rest.len()) + &" ".repeat(depth + 1)
    };
    out.push('[');
    for (k, i) in shown.iter().enumerate() {
        if k > 0 {
            out.push_str(&sep);
        }
        match i {
            Some(i) => nested(
                vals,
                rest,
                offset + i * stride,
                depth + 1,
                summarise,
                width,
                out,
            ),
            None => out.push_str("..."),
        }
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::{array, fill};

    fn s(v: &[i32]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn formats_fill_in_order_and_keep_braces() {
        let a = ["1".to_string(), "-2".to_string()];
        assert_eq!(fill("i = {}, j = {}", &a), "i = 1, j = -2");
        assert_eq!(fill("{{x}} {}", &a[..1]), "{x} 1");
        assert_eq!(fill("{} {}", &a[..1]), "1 {}");
    }

    /// The layouts numpy 2 prints for `np.arange(6).reshape(2, 3)`,
    /// `np.arange(8).reshape(2, 2, 2)` and a summarised `np.arange(2000)`.
    #[test]
    fn arrays_read_as_numpy_prints_them() {
        let v: Vec<i32> = (0..6).collect();
        assert_eq!(array(&s(&v), &[2, 3]), "[[0 1 2]\n [3 4 5]]");
        let v: Vec<i32> = (0..8).collect();
        assert_eq!(
            array(&s(&v), &[2, 2, 2]),
            "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"
        );
        let v: Vec<i32> = (0..12).map(|x| x - 2).collect();
        assert_eq!(
            array(&s(&v), &[2, 6]),
            "[[-2 -1  0  1  2  3]\n [ 4  5  6  7  8  9]]"
        );
        let v: Vec<i32> = (0..2000).collect();
        assert_eq!(
            array(&s(&v), &[2000]),
            "[   0    1    2 ... 1997 1998 1999]"
        );
    }
}
