//! The header dict of a `.npy` file, read as numpy reads it.
//!
//! numpy (`numpy.lib.format._read_array_header`, 2.x) evaluates the
//! header with `ast.literal_eval` and then requires a dict whose keys are
//! exactly `descr`, `fortran_order` and `shape`, `shape` a tuple of ints
//! and `fortran_order` a bool. So this reads the Python literals such a
//! header can hold: strings in single or double quotes (with backslash
//! escapes, and adjacent strings joined), integers (with `_` separators,
//! and a trailing `L` in format 1.0 and 2.0 files written by Python 2),
//! `True`, `False`, `None`, tuples, lists and dicts, where a repeated key
//! takes its last value, as in any Python dict literal.
//!
//! invariant: nesting is bounded ([`MAX_NESTING`]), so no header, however
//! written, can exhaust the stack.

/// numpy's own limit on an array's dimensions (`NPY_MAXDIMS` in 2.x).
pub const MAX_DIMS: usize = 64;

/// Brackets nested deeper than this are refused (Python's own parser
/// stops at 200).
const MAX_NESTING: usize = 100;

/// A Python literal.
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Str(String),
    /// An integer; `None` past what 128 bits hold.
    Int(Option<i128>),
    Bool(bool),
    Nothing,
    Tuple(Vec<Lit>),
    List(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

impl Lit {
    fn describe(&self) -> String {
        match self {
            Lit::Str(s) => format!("{s:?}"),
            Lit::Int(Some(i)) => i.to_string(),
            Lit::Int(None) => "a very large integer".into(),
            Lit::Bool(b) => if *b { "True" } else { "False" }.into(),
            Lit::Nothing => "None".into(),
            Lit::Tuple(_) => "a tuple".into(),
            Lit::List(_) => "a list".into(),
            Lit::Dict(_) => "a dict".into(),
        }
    }
}

/// The three fields of a header.
#[derive(Debug, Clone, PartialEq)]
pub struct Fields {
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<usize>,
}

/// Reads a header dict; `long_ints` allows Python 2's `12L`.
pub fn parse(text: &str, long_ints: bool) -> Result<Fields, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
        long_ints,
    };
    let v = p.value(0)?;
    p.skip_space();
    if p.at < p.s.len() {
        return Err(format!(
            "the header has text after its dict at byte {}",
            p.at
        ));
    }
    let Lit::Dict(items) = v else {
        return Err(format!("the header is {}, not a dict", v.describe()));
    };
    // A repeated key takes its last value, as Python's dict literal does.
    let mut descr = None;
    let mut fortran = None;
    let mut shape = None;
    let mut keys: Vec<String> = Vec::new();
    for (k, v) in items {
        let key = match &k {
            Lit::Str(s) => s.clone(),
            other => other.describe(),
        };
        if !keys.contains(&key) {
            keys.push(key.clone());
        }
        match key.as_str() {
            "descr" => descr = Some(v),
            "fortran_order" => fortran = Some(v),
            "shape" => shape = Some(v),
            _ => {}
        }
    }
    let expected = ["descr", "fortran_order", "shape"];
    if keys.len() != 3 || !expected.iter().all(|e| keys.iter().any(|k| k == e)) {
        keys.sort();
        return Err(format!(
            "the header's keys are [{}], not exactly 'descr', 'fortran_order' and 'shape'",
            keys.iter()
                .map(|k| format!("'{k}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let descr = match descr {
        Some(Lit::Str(s)) => s,
        Some(other) => {
            return Err(format!(
                "descr is {}: structured dtypes are not read",
                other.describe()
            ))
        }
        None => unreachable!("the keys were checked"),
    };
    let fortran_order = match fortran {
        Some(Lit::Bool(b)) => b,
        Some(other) => {
            return Err(format!(
                "fortran_order is not a valid bool: {}",
                other.describe()
            ))
        }
        None => unreachable!("the keys were checked"),
    };
    let dims = match shape {
        Some(Lit::Tuple(d)) => d,
        Some(other) => return Err(format!("shape is {}, not a tuple", other.describe())),
        None => unreachable!("the keys were checked"),
    };
    if dims.len() > MAX_DIMS {
        return Err(format!(
            "the shape has {} dimensions; numpy allows at most {MAX_DIMS}",
            dims.len()
        ));
    }
    let mut shape = Vec::with_capacity(dims.len());
    for d in dims {
        // numpy's header check lets a bool pass (it is an int in Python),
        // but making the array then fails: refused here too.
        let n = match d {
            Lit::Int(Some(n)) => n,
            Lit::Int(None) => return Err("a dimension is too large".into()),
            other => {
                return Err(format!(
                    "shape is not valid: {} is not an integer",
                    other.describe()
                ))
            }
        };
        if n < 0 {
            return Err(format!("the shape has the negative dimension {n}"));
        }
        shape.push(usize::try_from(n).map_err(|_| format!("the dimension {n} is too large"))?);
    }
    Ok(Fields {
        descr,
        fortran_order,
        shape,
    })
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    long_ints: bool,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    /// Skips whitespace, line continuations and comments, as Python's
    /// tokenizer does inside brackets.
    fn skip_space(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => self.at += 1,
                b'\\' if matches!(self.s.get(self.at + 1), Some(b'\n')) => self.at += 2,
                b'#' => {
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.at += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!(
            "the header is not a Python literal: {what} at byte {}",
            self.at
        ))
    }

    fn value(&mut self, depth: usize) -> Result<Lit, String> {
        if depth > MAX_NESTING {
            return self.err("brackets nested too deeply");
        }
        self.skip_space();
        match self.peek() {
            Some(b'{') => self.dict(depth),
            Some(b'(') => {
                let (items, comma) = self.seq(b')', depth)?;
                // `(x)` is x; `(x,)` and `()` are tuples.
                if items.len() == 1 && !comma {
                    Ok(items.into_iter().next().unwrap_or(Lit::Nothing))
                } else {
                    Ok(Lit::Tuple(items))
                }
            }
            Some(b'[') => Ok(Lit::List(self.seq(b']', depth)?.0)),
            Some(b'\'' | b'"') => {
                let mut s = self.string()?;
                // Adjacent string literals are one string.
                loop {
                    self.skip_space();
                    match self.peek() {
                        Some(b'\'' | b'"') => s.push_str(&self.string()?),
                        _ => break Ok(Lit::Str(s)),
                    }
                }
            }
            Some(b'-' | b'+') => {
                let neg = self.peek() == Some(b'-');
                self.at += 1;
                match self.value(depth + 1)? {
                    Lit::Int(Some(n)) if neg => Ok(Lit::Int(n.checked_neg())),
                    Lit::Int(n) => Ok(Lit::Int(n)),
                    Lit::Bool(b) => Ok(Lit::Int(Some(if neg {
                        -i128::from(b)
                    } else {
                        i128::from(b)
                    }))),
                    _ => self.err("a sign before something not a number"),
                }
            }
            Some(c) if c.is_ascii_digit() => self.int(),
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.at;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    self.at += 1;
                }
                match &self.s[start..self.at] {
                    b"True" => Ok(Lit::Bool(true)),
                    b"False" => Ok(Lit::Bool(false)),
                    b"None" => Ok(Lit::Nothing),
                    _ => {
                        self.at = start;
                        self.err("a name that is not True, False or None")
                    }
                }
            }
            Some(_) => self.err("an unexpected character"),
            None => self.err("the end of the text"),
        }
    }

    /// Items up to `close`, and whether a comma followed the last one.
    fn seq(&mut self, close: u8, depth: usize) -> Result<(Vec<Lit>, bool), String> {
        self.at += 1;
        let mut items = Vec::new();
        let mut comma = false;
        loop {
            self.skip_space();
            if self.peek() == Some(close) {
                self.at += 1;
                return Ok((items, comma));
            }
            if !items.is_empty() && !comma {
                return self.err("a missing comma");
            }
            items.push(self.value(depth + 1)?);
            self.skip_space();
            comma = self.peek() == Some(b',');
            if comma {
                self.at += 1;
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Lit, String> {
        self.at += 1;
        let mut items = Vec::new();
        let mut comma = true;
        loop {
            self.skip_space();
            if self.peek() == Some(b'}') {
                self.at += 1;
                return Ok(Lit::Dict(items));
            }
            if !comma {
                return self.err("a missing comma");
            }
            let k = self.value(depth + 1)?;
            if matches!(k, Lit::List(_) | Lit::Dict(_)) {
                return self.err("an unhashable dict key");
            }
            self.skip_space();
            if self.peek() != Some(b':') {
                return self.err("a missing `:`");
            }
            self.at += 1;
            let v = self.value(depth + 1)?;
            items.push((k, v));
            self.skip_space();
            comma = self.peek() == Some(b',');
            if comma {
                self.at += 1;
            }
        }
    }

    fn int(&mut self) -> Result<Lit, String> {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.at += 1;
        }
        let mut text = &self.s[start..self.at];
        if self.long_ints && matches!(text.last(), Some(b'L' | b'l')) {
            text = &text[..text.len() - 1];
        }
        // Python 3 integers: decimal without leading zeros (but `0`, `00`),
        // single `_` between digits. Other bases never occur in headers.
        let ok = !text.is_empty()
            && text.iter().all(|c| c.is_ascii_digit() || *c == b'_')
            && !text.ends_with(b"_")
            && !text.windows(2).any(|w| w == b"__")
            && (text[0] != b'0' || text.iter().all(|&c| c == b'0' || c == b'_'));
        if !ok {
            self.at = start;
            return self.err("a malformed integer");
        }
        let digits: String = text
            .iter()
            .filter(|&&c| c != b'_')
            .map(|&c| c as char)
            .collect();
        Ok(Lit::Int(digits.parse::<i128>().ok()))
    }

    fn string(&mut self) -> Result<String, String> {
        let quote = self.s[self.at];
        let start = self.at;
        self.at += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None | Some(b'\n') => {
                    self.at = start;
                    return self.err("an unterminated string");
                }
                Some(c) if c == quote => {
                    self.at += 1;
                    break;
                }
                Some(b'\\') => {
                    self.at += 1;
                    let Some(c) = self.peek() else {
                        return self.err("an unterminated string");
                    };
                    self.at += 1;
                    match c {
                        b'\n' => {}
                        b'\\' | b'\'' | b'"' => out.push(c),
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'0' => out.push(0),
                        // Unknown escapes keep their backslash in Python.
                        other => out.extend_from_slice(&[b'\\', other]),
                    }
                }
                Some(c) => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
        String::from_utf8(out).or_else(|_| self.err("a string that is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(descr: &str, fortran: bool, shape: &[usize]) -> Fields {
        Fields {
            descr: descr.into(),
            fortran_order: fortran,
            shape: shape.to_vec(),
        }
    }

    #[test]
    fn numpy_headers_and_python_spellings() {
        let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        assert_eq!(parse(h, false), Ok(f("<f4", false, &[2, 3])));
        let h = r#"{"descr": "<i2", "shape": (4,), "fortran_order": True}"#;
        assert_eq!(parse(h, false), Ok(f("<i2", true, &[4])));
        let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }";
        assert_eq!(parse(h, false), Ok(f("<f4", false, &[])));
        // `(5)` is the int 5, not a tuple.
        let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (5)}";
        assert!(parse(h, false).unwrap_err().contains("not a tuple"));
        let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (3L, 1_0)}";
        assert_eq!(parse(h, true), Ok(f("<f4", false, &[3, 10])));
        assert!(parse(h, false).is_err());
    }

    #[test]
    fn a_repeated_key_takes_its_last_value() {
        let h = "{'descr': '<f4', 'shape': (9,), 'fortran_order': False, 'shape': (2,)}";
        assert_eq!(parse(h, false), Ok(f("<f4", false, &[2])));
    }

    #[test]
    fn keys_and_values_are_checked_as_numpy_does() {
        for (h, want) in [
            ("{'descr': '<f4', 'shape': (1,)}", "keys"),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
                "keys",
            ),
            (
                "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}",
                "bool",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
                "negative",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': [1]}",
                "list",
            ),
            (
                "{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}",
                "literal",
            ),
            ("['descr']", "not a dict"),
        ] {
            let e = parse(h, false).unwrap_err();
            assert!(e.contains(want), "{h}: {e}");
        }
        let deep = format!("{}{}", "(".repeat(5000), ")".repeat(5000));
        assert!(parse(&deep, false).unwrap_err().contains("nested"));
        let dims = format!(
            "{{'descr': '<f4', 'fortran_order': True, 'shape': ({})}}",
            "1, ".repeat(65)
        );
        assert!(parse(&dims, false).unwrap_err().contains("at most 64"));
    }
}
