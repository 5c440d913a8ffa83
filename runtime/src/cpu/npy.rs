//! numpy `.npy` files (format versions 1.0, 2.0, 3.0).
//!
//! Element types map to TPU dtypes: `<f4` f32, `<i4` i32, `<i2` i16, `|i1`
//! i8, `|u1` u8, `|b1` bool. numpy has no bf16: ml_dtypes' `bfloat16` is
//! saved as `<V2` (two opaque bytes), which is what pk writes and reads;
//! `<u2` is also read as the raw bits of a bf16 operand. fp8 is `<V1`
//! (ml_dtypes) or `|u1` raw bits. Big-endian and Fortran-order files are
//! read (converted); files are always written little-endian, C order.

use super::array::HostArray;
use super::error::Error;
use pk_lang::ir::DType;
use std::io::Write;
use std::path::Path;

/// The element type as stored in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NpyType {
    /// float64: read for expected values (`pkc test`), never an operand.
    F8,
    /// int64: read for integer tables such as group sizes (`pkc meta`),
    /// never an operand.
    I8,
    F4,
    I4,
    I2,
    I1,
    U1,
    B1,
    U2,
    /// Opaque bytes (`V2`: bf16, `V1`: fp8 from ml_dtypes).
    V(usize),
    /// A one-byte float: ml_dtypes writes `float8_e5m2` arrays as `<f1`.
    F1,
}

impl NpyType {
    fn size(self) -> usize {
        match self {
            NpyType::F8 | NpyType::I8 => 8,
            NpyType::F4 | NpyType::I4 => 4,
            NpyType::I2 | NpyType::U2 => 2,
            NpyType::I1 | NpyType::U1 | NpyType::B1 | NpyType::F1 => 1,
            NpyType::V(n) => n,
        }
    }

    pub fn describe(self) -> String {
        match self {
            NpyType::F8 => "float64 (<f8)".into(),
            NpyType::I8 => "int64 (<i8)".into(),
            NpyType::F4 => "float32 (<f4)".into(),
            NpyType::I4 => "int32 (<i4)".into(),
            NpyType::I2 => "int16 (<i2)".into(),
            NpyType::I1 => "int8 (|i1)".into(),
            NpyType::U1 => "uint8 (|u1)".into(),
            NpyType::B1 => "bool (|b1)".into(),
            NpyType::U2 => "uint16 (<u2)".into(),
            NpyType::V(n) => format!("{n} opaque bytes (<V{n})"),
            NpyType::F1 => "a 1-byte float (<f1)".into(),
        }
    }
}

/// An array as read from a file, before it is matched to an operand.
#[derive(Debug, Clone)]
pub struct NpyArray {
    pub ty: NpyType,
    pub shape: Vec<usize>,
    /// Little-endian, C order, `ty.size()` bytes per element.
    pub data: Vec<u8>,
}

/// The file dtypes accepted for an operand dtype, the first being the one
/// pk writes.
pub fn accepted(d: DType) -> &'static [NpyType] {
    match d {
        DType::F32 => &[NpyType::F4],
        DType::BF16 => &[NpyType::V(2), NpyType::U2],
        DType::I32 => &[NpyType::I4],
        DType::I16 => &[NpyType::I2],
        DType::I8 => &[NpyType::I1],
        DType::U8 => &[NpyType::U1],
        DType::Bool => &[NpyType::B1],
        DType::F8E4M3FN | DType::F8E5M2 => &[NpyType::V(1), NpyType::F1, NpyType::U1],
    }
}

/// How to make a file of dtype `d` in numpy, for help texts.
pub fn numpy_spelling(d: DType) -> &'static str {
    match d {
        DType::F32 => "np.float32",
        DType::BF16 => "ml_dtypes.bfloat16",
        DType::I32 => "np.int32",
        DType::I16 => "np.int16",
        DType::I8 => "np.int8",
        DType::U8 => "np.uint8",
        DType::Bool => "np.bool_",
        DType::F8E4M3FN => "ml_dtypes.float8_e4m3fn",
        DType::F8E5M2 => "ml_dtypes.float8_e5m2",
    }
}

fn parse_descr(d: &str) -> Result<(NpyType, bool), String> {
    let (order, code) = match d.as_bytes().first() {
        Some(b'<' | b'|' | b'=') => (false, &d[1..]),
        Some(b'>') => (true, &d[1..]),
        _ => (false, d),
    };
    let ty = match code {
        "f8" => NpyType::F8,
        "i8" => NpyType::I8,
        "f4" => NpyType::F4,
        "i4" => NpyType::I4,
        "i2" => NpyType::I2,
        "i1" => NpyType::I1,
        "u1" => NpyType::U1,
        "b1" => NpyType::B1,
        "u2" => NpyType::U2,
        "V2" => NpyType::V(2),
        "V1" => NpyType::V(1),
        "f1" => NpyType::F1,
        other => return Err(format!("unsupported dtype `{other}` (descr '{d}')")),
    };
    Ok((ty, order))
}

/// Finds `'key': value` in the header dict; returns the value text.
fn field<'a>(h: &'a str, key: &str) -> Result<&'a str, String> {
    let pat = format!("'{key}'");
    let at = h
        .find(&pat)
        .ok_or_else(|| format!("header has no '{key}'"))?;
    let rest = h[at + pat.len()..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| format!("malformed '{key}' in header"))?
        .trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')').map(|i| i + 1)
    } else if let Some(r) = rest.strip_prefix('\'') {
        r.find('\'').map(|i| i + 2)
    } else {
        rest.find([',', '}'])
    };
    let end = end.ok_or_else(|| format!("malformed '{key}' in header"))?;
    Ok(rest[..end].trim())
}

/// Parses a `.npy` file image.
pub fn parse(bytes: &[u8]) -> Result<NpyArray, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("no .npy magic string (\\x93NUMPY)".into());
    }
    let (hlen, hstart) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(format!("unsupported format version {v}")),
    };
    let header = bytes.get(hstart..hstart + hlen).ok_or("truncated header")?;
    let header = std::str::from_utf8(header).map_err(|_| "header is not text")?;
    let descr = field(header, "descr")?;
    let descr = descr.trim_matches('\'');
    let (ty, big) = parse_descr(descr)?;
    let fortran = match field(header, "fortran_order")? {
        "True" => true,
        "False" => false,
        o => return Err(format!("bad fortran_order `{o}`")),
    };
    let shape_text = field(header, "shape")?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or("malformed shape")?;
    let mut shape = Vec::new();
    for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let n = part
            .trim_end_matches('L')
            .parse::<usize>()
            .map_err(|_| format!("bad dimension `{part}`"))?;
        shape.push(n);
    }
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or("shape too large")?;
    let size = ty.size();
    let nbytes = n.checked_mul(size).ok_or("shape too large")?;
    let body = &bytes[hstart + hlen..];
    if body.len() < nbytes {
        return Err(format!(
            "data is truncated: {} bytes for {n} elements of {size} bytes",
            body.len()
        ));
    }
    let mut data = body[..nbytes].to_vec();
    if big && size > 1 && !matches!(ty, NpyType::V(_)) {
        for c in data.chunks_exact_mut(size) {
            c.reverse();
        }
    }
    if fortran && shape.len() > 1 {
        data = fortran_to_c(&data, &shape, size);
    }
    Ok(NpyArray { ty, shape, data })
}

/// Reorders column-major element bytes to row-major.
fn fortran_to_c(data: &[u8], shape: &[usize], size: usize) -> Vec<u8> {
    let n: usize = shape.iter().product();
    let mut out = vec![0u8; data.len()];
    let mut idx = vec![0usize; shape.len()];
    for c in 0..n {
        // idx is the row-major index of element c; its column-major offset:
        let mut f = 0;
        let mut stride = 1;
        for (d, &i) in idx.iter().enumerate() {
            f += i * stride;
            stride *= shape[d];
        }
        out[c * size..(c + 1) * size].copy_from_slice(&data[f * size..(f + 1) * size]);
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Reads a file.
pub fn read(path: &Path) -> Result<NpyArray, Error> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::Unreadable {
        path: p.clone(),
        reason: e.to_string(),
    })?;
    parse(&bytes).map_err(|reason| Error::BadNpy { path: p, reason })
}

/// The values of a file array as f64; opaque and raw 16-bit types are
/// decoded as `hint` (the dtype of the operand they are compared with).
pub fn values(a: &NpyArray, hint: DType) -> Vec<f64> {
    let n = a.shape.iter().product::<usize>();
    let size = a.ty.size();
    let raw = |i: usize| &a.data[i * size..(i + 1) * size];
    match a.ty {
        NpyType::F8 => (0..n)
            .map(|i| f64::from_le_bytes(raw(i).try_into().unwrap_or([0; 8])))
            .collect(),
        NpyType::I8 => (0..n)
            .map(|i| i64::from_le_bytes(raw(i).try_into().unwrap_or([0; 8])) as f64)
            .collect(),
        NpyType::V(_) | NpyType::U2 if hint == DType::BF16 || hint.bits() == 8 => {
            let h = HostArray::new(hint, a.shape.clone(), a.data.clone());
            h.to_f64()
        }
        _ => {
            let d = match a.ty {
                NpyType::F4 => DType::F32,
                NpyType::I4 => DType::I32,
                NpyType::I2 => DType::I16,
                NpyType::I1 => DType::I8,
                NpyType::B1 => DType::U8,
                NpyType::U2 => {
                    return (0..n)
                        .map(|i| f64::from(u16::from_le_bytes([raw(i)[0], raw(i)[1]])))
                        .collect()
                }
                _ => DType::U8,
            };
            HostArray::new(d, a.shape.clone(), a.data.clone()).to_f64()
        }
    }
}

/// Converts a file array to an operand's dtype (no value conversion: only
/// the storage forms listed in [`accepted`]).
pub fn to_host(a: NpyArray, d: DType) -> Option<HostArray> {
    if !accepted(d).contains(&a.ty) {
        return None;
    }
    let data = if d == DType::Bool {
        a.data
            .iter()
            .flat_map(|&b| u32::from(b != 0).to_le_bytes())
            .collect()
    } else {
        a.data
    };
    Some(HostArray::new(d, a.shape, data))
}

/// The `.npy` image of an array.
pub fn to_bytes(a: &HostArray) -> Vec<u8> {
    let descr = match a.dtype {
        DType::F32 => "<f4",
        DType::BF16 => "<V2",
        DType::I32 => "<i4",
        DType::I16 => "<i2",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::Bool => "|b1",
        DType::F8E4M3FN | DType::F8E5M2 => "<V1",
    };
    let shape = match a.shape.len() {
        0 => "()".to_string(),
        1 => format!("({},)", a.shape[0]),
        _ => format!(
            "({})",
            a.shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Pad with spaces so that the data starts on a 64-byte boundary, and
    // end with a newline, as numpy does.
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat(total.div_ceil(64) * 64 - total));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + a.data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    if a.dtype == DType::Bool {
        out.extend(a.data.chunks_exact(4).map(|c| u8::from(c != [0, 0, 0, 0])));
    } else {
        out.extend_from_slice(&a.data);
    }
    out
}

/// Writes an array atomically: a temporary file in the same directory,
/// renamed over the destination once complete.
pub fn write(path: &Path, a: &HostArray) -> Result<(), Error> {
    let fail = |reason: String| Error::WriteFailed {
        path: path.display().to_string(),
        reason,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".pk-out-")
        .suffix(".npy.tmp")
        .tempfile_in(&dir)
        .map_err(|e| fail(e.to_string()))?;
    tmp.write_all(&to_bytes(a))
        .map_err(|e| fail(e.to_string()))?;
    tmp.as_file().sync_all().map_err(|e| fail(e.to_string()))?;
    tmp.persist(path).map_err(|e| fail(e.error.to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_dtype() {
        for d in [
            DType::F32,
            DType::BF16,
            DType::I32,
            DType::I16,
            DType::I8,
            DType::U8,
            DType::Bool,
        ] {
            let a = HostArray::from_ints(d, &[2, 3], &[0, 1, -2, 3, 1, 0]);
            let back = to_host(parse(&to_bytes(&a)).unwrap(), d).unwrap();
            assert_eq!(back, a, "{d}");
        }
        let s = HostArray::from_f32(&[], &[2.5]);
        assert_eq!(
            to_host(parse(&to_bytes(&s)).unwrap(), DType::F32).unwrap(),
            s
        );
    }

    #[test]
    fn header_is_aligned() {
        let a = HostArray::from_f32(&[3], &[1.0, 2.0, 3.0]);
        let b = to_bytes(&a);
        let hlen = usize::from(u16::from_le_bytes([b[8], b[9]]));
        assert_eq!((10 + hlen) % 64, 0);
        assert_eq!(b[10 + hlen - 1], b'\n');
    }

    #[test]
    fn big_endian_and_fortran_order() {
        let mut f = b"\x93NUMPY\x01\x00".to_vec();
        let h = "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }";
        f.extend_from_slice(&(h.len() as u16).to_le_bytes());
        f.extend_from_slice(h.as_bytes());
        // Column-major [[1, 2, 3], [4, 5, 6]]: 1 4 2 5 3 6, big-endian.
        for v in [1i16, 4, 2, 5, 3, 6] {
            f.extend_from_slice(&v.to_be_bytes());
        }
        let a = to_host(parse(&f).unwrap(), DType::I16).unwrap();
        assert_eq!(a.to_f64(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        assert!(parse(b"not a numpy file").is_err());
        let mut f = b"\x93NUMPY\x01\x00".to_vec();
        let h = "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }";
        f.extend_from_slice(&(h.len() as u16).to_le_bytes());
        f.extend_from_slice(h.as_bytes());
        f.extend_from_slice(&[0; 8]);
        assert!(parse(&f).unwrap_err().contains("c8"));
        let mut t = b"\x93NUMPY\x01\x00".to_vec();
        let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
        t.extend_from_slice(&(h.len() as u16).to_le_bytes());
        t.extend_from_slice(h.as_bytes());
        t.extend_from_slice(&[0; 8]);
        assert!(parse(&t).unwrap_err().contains("truncated"));
    }
}
