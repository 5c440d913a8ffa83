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
use super::npy_header;
use pk_lang::ir::DType;
use std::io::{Read, Write};
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
    pub fn size(self) -> usize {
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

/// Headers longer than this are refused before they are read. numpy
/// itself refuses headers over 10,000 bytes unless told to trust the file;
/// a header of 64 dimensions of 20 digits each takes under 2,000.
pub const MAX_HEADER_BYTES: usize = 64 << 10;

/// What a `.npy` header says, before any data is read.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub ty: NpyType,
    /// Stored big-endian.
    pub big: bool,
    pub fortran: bool,
    pub shape: Vec<usize>,
    /// The bytes of the data: the elements times their size, which fits
    /// in a `usize`.
    pub nbytes: usize,
    /// The bytes before the data (magic, version, length and header).
    pub data_offset: usize,
}

/// Reads the header at the start of `r`, leaving `r` at the data.
pub fn read_header(r: &mut impl Read) -> Result<Header, String> {
    let mut lead = [0u8; 8];
    read_all(r, &mut lead).map_err(|e| match e {
        Short::End => "no .npy magic string (\\x93NUMPY)".to_string(),
        Short::Io(e) => e.to_string(),
    })?;
    if &lead[..6] != b"\x93NUMPY" {
        return Err("no .npy magic string (\\x93NUMPY)".into());
    }
    let version = lead[6];
    let (hlen, hstart) = match version {
        1 => {
            let mut b = [0u8; 2];
            read_all(r, &mut b).map_err(|_| "truncated header")?;
            (usize::from(u16::from_le_bytes(b)), 10)
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            read_all(r, &mut b).map_err(|_| "truncated header")?;
            (u32::from_le_bytes(b) as usize, 12)
        }
        v => return Err(format!("unsupported format version {v}")),
    };
    if hlen > MAX_HEADER_BYTES {
        return Err(format!(
            "its header is {hlen} bytes, more than the {} KiB a .npy header may have here",
            MAX_HEADER_BYTES >> 10
        ));
    }
    let mut header = vec![0u8; hlen];
    read_all(r, &mut header).map_err(|_| "truncated header")?;
    // Format 3.0 headers are UTF-8; 1.0 and 2.0 are latin-1, which only
    // matters inside strings no readable header has.
    let header = std::str::from_utf8(&header).map_err(|_| "header is not text")?;
    let fields = npy_header::parse(header, version < 3)?;
    let (ty, big) = parse_descr(&fields.descr)?;
    let n = fields
        .shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or("shape too large")?;
    let nbytes = n.checked_mul(ty.size()).ok_or("shape too large")?;
    Ok(Header {
        ty,
        big,
        fortran: fields.fortran_order,
        shape: fields.shape,
        nbytes,
        data_offset: hstart + hlen,
    })
}

enum Short {
    /// The stream ended first.
    End,
    Io(std::io::Error),
}

/// Fills `buf` from `r`; `Short::End` when the stream ends first.
fn read_all(r: &mut impl Read, buf: &mut [u8]) -> Result<(), Short> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => return Err(Short::End),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Short::Io(e)),
        }
    }
    Ok(())
}

/// Parses a `.npy` file image.
pub fn parse(bytes: &[u8]) -> Result<NpyArray, String> {
    let mut r = bytes;
    let h = read_header(&mut r)?;
    let body = &bytes[h.data_offset..];
    if body.len() < h.nbytes {
        return Err(truncated(&h, body.len()));
    }
    let mut data = body[..h.nbytes].to_vec();
    finish(&h, &mut data, None)?;
    Ok(NpyArray {
        ty: h.ty,
        shape: h.shape,
        data,
    })
}

fn truncated(h: &Header, got: usize) -> String {
    let n: usize = h.shape.iter().product();
    format!(
        "data is truncated: {got} bytes for {n} elements of {} bytes",
        h.ty.size()
    )
}

/// Puts data read as the header describes into little-endian C order, in
/// place but for Fortran order, which needs a second buffer: `room`, when
/// given, is the memory that may still be allocated, and a transpose that
/// needs more is refused.
fn finish(h: &Header, data: &mut Vec<u8>, room: Option<u64>) -> Result<(), String> {
    let size = h.ty.size();
    if h.big && size > 1 && !matches!(h.ty, NpyType::V(_)) {
        for c in data.chunks_exact_mut(size) {
            c.reverse();
        }
    }
    if h.fortran {
        if let Some(room) = room.filter(|&r| r < data.len() as u64) {
            return Err(format!(
                "reordering its Fortran-order data needs a second copy of {}, but {} is available; \
                 save the array in C order (numpy.ascontiguousarray) to read it in place",
                super::human_bytes(data.len() as u64),
                super::human_bytes(room)
            ));
        }
        if let Some(c) = fortran_to_c(data, &h.shape, size) {
            *data = c;
        }
    }
    Ok(())
}

/// Reorders column-major element bytes to row-major; `None` when the two
/// orders are the same (at most one dimension longer than 1). Linear in
/// the data: length-1 dimensions are dropped first, and the source offset
/// is carried from one element to the next.
fn fortran_to_c(data: &[u8], shape: &[usize], size: usize) -> Option<Vec<u8>> {
    let dims: Vec<usize> = shape.iter().copied().filter(|&d| d != 1).collect();
    if dims.len() < 2 || dims.contains(&0) {
        return None;
    }
    // Column-major strides, in elements.
    let mut stride = Vec::with_capacity(dims.len());
    let mut s = 1;
    for &d in &dims {
        stride.push(s);
        s *= d;
    }
    let mut out = super::array::zeroed(data.len());
    let mut idx = vec![0usize; dims.len()];
    let mut f = 0usize;
    let last = dims.len() - 1;
    for dst in out.chunks_exact_mut(size) {
        dst.copy_from_slice(&data[f * size..(f + 1) * size]);
        let mut d = last;
        loop {
            idx[d] += 1;
            f += stride[d];
            if idx[d] < dims[d] {
                break;
            }
            f -= dims[d] * stride[d];
            idx[d] = 0;
            if d == 0 {
                break;
            }
            d -= 1;
        }
    }
    Some(out)
}

/// Where a `.npy` file is read from: a file, or standard input for `-`.
pub struct NpyReader {
    /// The path as the user wrote it, for messages.
    pub path: String,
    pub header: Header,
    r: Box<dyn Read>,
}

/// Whether a path names standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Opens `path` (`-` for standard input) and reads its header, and no
/// more: the data is read by [`NpyReader::read`] once the header has been
/// checked. Devices such as `/dev/zero` are refused.
pub fn open(path: &Path) -> Result<NpyReader, Error> {
    let p = if is_stdin(path) {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let (file, len): (Box<dyn Read>, Option<u64>) = if is_stdin(path) {
        (Box::new(std::io::stdin().lock()), None)
    } else {
        let (f, len) = pk_lang::files::open(path).map_err(|e| Error::Unreadable {
            path: p.clone(),
            reason: e.reason(),
        })?;
        (Box::new(f), len)
    };
    let mut r = std::io::BufReader::new(file);
    let header = read_header(&mut r).map_err(|reason| Error::BadNpy {
        path: p.clone(),
        reason,
    })?;
    let remaining = len.map(|l| l.saturating_sub(header.data_offset as u64));
    if let Some(rest) = remaining.filter(|&r| r < header.nbytes as u64) {
        return Err(Error::BadNpy {
            reason: truncated(&header, rest as usize),
            path: p,
        });
    }
    Ok(NpyReader {
        path: p,
        header,
        r: Box::new(r),
    })
}

impl NpyReader {
    /// Reads the data as stored (in little-endian C order), into one
    /// buffer of its size: a Fortran-order file also needs a second one
    /// while it is reordered, and is refused if that does not fit.
    pub fn read(self) -> Result<NpyArray, Error> {
        let h = self.header.clone();
        let data = self.read_into(0)?;
        Ok(NpyArray {
            ty: h.ty,
            shape: h.shape,
            data,
        })
    }

    /// Reads the data into a buffer `extra` bytes longer, after `extra`
    /// zero bytes; with no `extra`, puts it in order as
    /// [`NpyReader::read`] does.
    fn read_into(mut self, extra: usize) -> Result<Vec<u8>, Error> {
        let h = &self.header;
        let bad = |reason: String| Error::BadNpy {
            path: self.path.clone(),
            reason,
        };
        let total = h
            .nbytes
            .checked_add(extra)
            .ok_or_else(|| bad("shape too large".into()))?;
        // Reserved, not zeroed: the data is read straight into the spare
        // capacity, and a size the process cannot have is an error, not
        // an abort.
        let mut buf = Vec::new();
        buf.try_reserve_exact(total)
            .map_err(|_| Error::HostMemory {
                message: format!(
                    "`{}` holds {} of data, more than this process can allocate",
                    self.path,
                    super::human_bytes(total as u64)
                ),
            })?;
        if total >= 4 << 20 {
            // SAFETY: the range is the vector's own allocation.
            unsafe { super::array::advise_huge_pages(buf.as_ptr(), total) };
        }
        buf.resize(extra, 0);
        let got = (&mut self.r)
            .take(h.nbytes as u64)
            .read_to_end(&mut buf)
            .map_err(|e| Error::Unreadable {
                path: self.path.clone(),
                reason: e.to_string(),
            })?;
        if got < h.nbytes {
            return Err(bad(truncated(h, got)));
        }
        if extra == 0 {
            let room = h
                .fortran
                .then(|| super::available_host_memory().map(|a| a.0))
                .flatten();
            finish(h, &mut buf, room).map_err(bad)?;
        }
        Ok(buf)
    }

    /// Reads the data as an operand of dtype `d` (one of the file dtypes
    /// [`accepted`] for it, which the caller has checked), converting it
    /// to the operand's memory form in the buffer it is read into: a bool
    /// array is read into the last quarter of its 32-bit form and widened
    /// in place.
    pub fn read_as(self, d: DType) -> Result<HostArray, Error> {
        let shape = self.header.shape.clone();
        if d != DType::Bool || self.header.fortran {
            let a = self.read()?;
            return to_host(a, d)
                .ok_or_else(|| Error::Internal("read_as: dtype not checked".into()));
        }
        let n = self.header.nbytes;
        let extra = n.checked_mul(3).ok_or_else(|| Error::HostMemory {
            message: format!("`{}` is too large to read as bool", self.path),
        })?;
        let mut buf = self.read_into(extra)?;
        // Element i's four bytes end at 4i + 3 < 3n + i + 1, the next
        // byte still to be read, so each read happens before any write
        // that could reach it.
        for i in 0..n {
            let b = u32::from(buf[extra + i] != 0);
            buf[4 * i..4 * i + 4].copy_from_slice(&b.to_le_bytes());
        }
        Ok(HostArray::new(d, shape, buf))
    }
}

/// Reads a file (`-` for standard input) whole.
pub fn read(path: &Path) -> Result<NpyArray, Error> {
    open(path)?.read()
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

/// The `.npy` image of an array in two parts, the header and the data,
/// so that it can be written without a copy of the data (a bool array's
/// data is narrowed to one byte per element, a quarter of its size).
pub struct Image<'a> {
    pub head: Vec<u8>,
    pub body: std::borrow::Cow<'a, [u8]>,
}

impl Image<'_> {
    /// The whole image as one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.head.len() + self.body.len());
        out.extend_from_slice(&self.head);
        out.extend_from_slice(&self.body);
        out
    }
}

/// The image of `a` (see [`Image`]).
pub fn image(a: &HostArray) -> Image<'_> {
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
    let mut head = Vec::with_capacity(10 + header.len());
    head.extend_from_slice(b"\x93NUMPY\x01\x00");
    head.extend_from_slice(&(header.len() as u16).to_le_bytes());
    head.extend_from_slice(header.as_bytes());
    let body = if a.dtype == DType::Bool {
        std::borrow::Cow::Owned(
            a.data
                .chunks_exact(4)
                .map(|c| u8::from(c != [0, 0, 0, 0]))
                .collect(),
        )
    } else {
        std::borrow::Cow::Borrowed(a.data.as_slice())
    };
    Image { head, body }
}

/// The `.npy` image of an array, in one buffer.
pub fn to_bytes(a: &HostArray) -> Vec<u8> {
    image(a).to_vec()
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
    let img = image(a);
    tmp.write_all(&img.head)
        .and_then(|()| tmp.write_all(&img.body))
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

    /// A file image with `dict` as its header.
    fn image_of(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut f = b"\x93NUMPY\x01\x00".to_vec();
        f.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        f.extend_from_slice(dict.as_bytes());
        f.extend_from_slice(data);
        f
    }

    /// [1]*31 + [3] + [1]*31 + [4] in Fortran order reads as the [3, 4]
    /// it is: element (r, c) is stored at r + 3 * c.
    #[test]
    fn fortran_order_with_unit_dimensions() {
        let mut dims = vec!["1"; 31];
        dims.push("3");
        dims.extend(vec!["1"; 31]);
        dims.push("4");
        let h = format!(
            "{{'descr': '<i4', 'fortran_order': True, 'shape': ({}), }}",
            dims.join(", ")
        );
        let mut data = Vec::new();
        for c in 0..4i32 {
            for r in 0..3 {
                data.extend_from_slice(&(r * 4 + c).to_le_bytes());
            }
        }
        let a = parse(&image_of(&h, &data)).unwrap();
        assert_eq!(a.shape.len(), 64);
        let got = to_host(a, DType::I32).unwrap().to_f64();
        assert_eq!(got, (0..12).map(f64::from).collect::<Vec<_>>());
    }

    /// A bool file is widened to the operand's 32-bit form in the buffer
    /// it is read into.
    #[test]
    fn bools_are_widened_in_place() {
        let h = "{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }";
        let dir = std::env::temp_dir().join(format!("pk-npy-bool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("b.npy");
        std::fs::write(&p, image_of(h, &[1, 0, 0, 1, 1])).unwrap();
        let a = open(&p).unwrap().read_as(DType::Bool).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(a.shape, vec![5]);
        let words: Vec<u32> = a
            .data
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(words, vec![1, 0, 0, 1, 1]);
    }

    #[test]
    fn headers_past_the_limit_are_refused_unread() {
        let mut f = b"\x93NUMPY\x02\x00".to_vec();
        f.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse(&f)
            .unwrap_err()
            .contains("header is 4294967295 bytes"));
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
