//! Host arrays ("HBM"): a dtype, a shape and row-major bytes in the
//! element layout the kernel's memory uses (so block copies are plain
//! byte copies). bool is stored as a 32-bit 0/1, as in VMEM; bf16 as its
//! 16 bits; fp8 as its 8 bits.

use pk_lang::ir::DType;
use pk_lowering::wasm::abi::poison;

#[derive(Debug, Clone, PartialEq)]
pub struct HostArray {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

/// A zeroed byte buffer for a large array, backed by huge pages where it
/// is large enough (see [`advise_huge_pages`]).
pub fn zeroed(n: usize) -> Vec<u8> {
    let v = vec![0u8; n];
    if n >= 4 << 20 {
        // SAFETY: the range is the vector's own allocation.
        unsafe { advise_huge_pages(v.as_ptr(), n) };
    }
    v
}

/// Marks the whole 2 MiB pages inside `len` bytes at `ptr` for
/// transparent huge pages (on Linux; elsewhere nothing), as numpy does
/// for its arrays: the first touch of fresh memory then costs one fault
/// per 2 MiB instead of per 4 KiB, and copies through it miss the TLB far
/// less.
///
/// # Safety
/// `ptr..ptr + len` must lie inside one live mapping the caller owns. The
/// advice changes how the kernel backs the range, never its contents.
pub unsafe fn advise_huge_pages(ptr: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = ptr as usize;
        let lo = start.next_multiple_of(HUGE);
        let hi = (start + len) / HUGE * HUGE;
        if hi > lo {
            // SAFETY: inside the caller's mapping (see above).
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// Asks the kernel to fault in the whole pages inside `len` bytes at
/// address `start` as writable (Linux 5.14's `MADV_POPULATE_WRITE`; a
/// no-op where that is missing). Contents do not change: fresh pages
/// read as zero either way.
pub(crate) fn populate(start: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const MADV_POPULATE_WRITE: libc::c_int = 23;
        const PAGE: usize = 4096;
        let lo = start.next_multiple_of(PAGE);
        let hi = (start + len) / PAGE * PAGE;
        if hi > lo {
            // SAFETY: the advice only faults in pages of a mapping the
            // caller owns (see `Buffers::populate`); an error (an older
            // kernel) leaves them to be faulted in on first write.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, MADV_POPULATE_WRITE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, len);
}

/// Bytes per element in memory.
pub fn elem_bytes(d: DType) -> usize {
    d.bytes() as usize
}

/// Rounds an f32 to the nearest bf16 (ties to even). NaN stays NaN: its
/// quiet bit is set so that dropping the low half cannot make it inf.
pub fn bf16_from_f32(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b | 0x0040_0000) >> 16) as u16;
    }
    (b.wrapping_add(0x7FFF + ((b >> 16) & 1)) >> 16) as u16
}

pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// Fills bytes with the dtype's "never written" pattern (NaN for floats).
pub fn fill_poison(d: DType, bytes: &mut [u8]) {
    let word = match d {
        DType::F32 => poison::F32,
        DType::BF16 => u32::from(poison::BF16) * 0x0001_0001,
        DType::F8E4M3FN | DType::F8E5M2 => u32::from(poison::F8) * 0x0101_0101,
        _ => u32::from(poison::INT_BYTE) * 0x0101_0101,
    };
    // Byte i of a buffer is pattern[i % 4]: every pattern repeats with its
    // element size, which divides 4. The aligned middle is filled as words
    // (a memset-like loop).
    let pattern = word.to_le_bytes();
    // SAFETY: every bit pattern is a valid u32, and align_to_mut only
    // reinterprets the correctly aligned middle part.
    let (head, mid, tail) = unsafe { bytes.align_to_mut::<u32>() };
    for (i, b) in head.iter_mut().enumerate() {
        *b = pattern[i % 4];
    }
    let h = head.len();
    mid.fill(u32::from_le_bytes([
        pattern[h % 4],
        pattern[(h + 1) % 4],
        pattern[(h + 2) % 4],
        pattern[(h + 3) % 4],
    ]));
    let off = h + 4 * mid.len();
    for (i, b) in tail.iter_mut().enumerate() {
        *b = pattern[(off + i) % 4];
    }
}

impl HostArray {
    pub fn new(dtype: DType, shape: Vec<usize>, data: Vec<u8>) -> HostArray {
        HostArray { dtype, shape, data }
    }

    pub fn zeros(dtype: DType, shape: &[usize]) -> HostArray {
        let n: usize = shape.iter().product();
        HostArray::new(dtype, shape.to_vec(), zeroed(n * elem_bytes(dtype)))
    }

    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An f32 array.
    pub fn from_f32(shape: &[usize], v: &[f32]) -> HostArray {
        let mut data = zeroed(v.len() * 4);
        for (d, x) in data.chunks_exact_mut(4).zip(v) {
            d.copy_from_slice(&x.to_le_bytes());
        }
        HostArray::new(DType::F32, shape.to_vec(), data)
    }

    /// A bf16 array, rounding each value to nearest even.
    pub fn bf16_from_f32(shape: &[usize], v: &[f32]) -> HostArray {
        let mut data = zeroed(v.len() * 2);
        for (d, x) in data.chunks_exact_mut(2).zip(v) {
            d.copy_from_slice(&bf16_from_f32(*x).to_le_bytes());
        }
        HostArray::new(DType::BF16, shape.to_vec(), data)
    }

    /// An integer or bool array from i64 values (wrapped to the dtype).
    pub fn from_ints(dtype: DType, shape: &[usize], v: &[i64]) -> HostArray {
        let mut a = HostArray::zeros(dtype, shape);
        for (i, &x) in v.iter().enumerate() {
            a.set_int(i, x);
        }
        a
    }

    fn set_int(&mut self, i: usize, x: i64) {
        let eb = elem_bytes(self.dtype);
        let c = &mut self.data[i * eb..(i + 1) * eb];
        match self.dtype {
            DType::Bool => c.copy_from_slice(&u32::from(x != 0).to_le_bytes()),
            DType::I32 => c.copy_from_slice(&(x as i32).to_le_bytes()),
            DType::I16 => c.copy_from_slice(&(x as i16).to_le_bytes()),
            _ => c[0] = x as u8,
        }
    }

    /// Element `i` as f64 (floats decoded, integers converted).
    pub fn get_f64(&self, i: usize) -> f64 {
        let eb = elem_bytes(self.dtype);
        let c = &self.data[i * eb..(i + 1) * eb];
        match self.dtype {
            DType::F32 => f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            DType::BF16 => f64::from(bf16_to_f32(u16::from_le_bytes([c[0], c[1]]))),
            DType::I32 => f64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            DType::Bool => f64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]) != 0),
            DType::I16 => f64::from(i16::from_le_bytes([c[0], c[1]])),
            DType::I8 => f64::from(c[0] as i8),
            DType::U8 => f64::from(c[0]),
            DType::F8E4M3FN => f8e4m3fn_to_f64(c[0]),
            DType::F8E5M2 => f64::from(f16_to_f32(u16::from(c[0]) << 8)),
        }
    }

    /// Every element as f64.
    pub fn to_f64(&self) -> Vec<f64> {
        (0..self.len()).map(|i| self.get_f64(i)).collect()
    }

    /// Every element as f32 (exact for every dtype but large i32).
    pub fn to_f32(&self) -> Vec<f32> {
        (0..self.len()).map(|i| self.get_f64(i) as f32).collect()
    }
}

/// IEEE half to f32 (for the e5m2 fp8 format, which is a truncated half).
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal half: value m * 2^-24.
            let v = m as f32 * 2f32.powi(-24);
            return if sign != 0 { -v } else { v };
        }
        (31, 0) => sign | 0x7F80_0000,
        (31, m) => sign | 0x7FC0_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// float8_e4m3fn: bias 7, no infinities, NaN = S.1111.111.
fn f8e4m3fn_to_f64(b: u8) -> f64 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((b >> 3) & 0xf);
    let m = f64::from(b & 7);
    if e == 15 && b & 7 == 7 {
        return f64::NAN;
    }
    if e == 0 {
        sign * m / 8.0 * 2f64.powi(-6)
    } else {
        sign * (1.0 + m / 8.0) * 2f64.powi(e - 7)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-derived round-to-nearest-even cases: bf16 keeps 8 significant
    /// bits, so 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7.
    #[test]
    fn bf16_rounding_ties_to_even() {
        let cases: [(u32, u16); 9] = [
            (0x3F80_0000, 0x3F80), // 1.0 exact
            (0x3F80_8000, 0x3F80), // 1 + 2^-8: tie, 0x3F80 is even: down
            (0x3F81_8000, 0x3F82), // 1 + 3*2^-8: tie, 0x3F81 is odd: up
            (0x3F80_8001, 0x3F81), // just above the tie: up
            (0x3F80_7FFF, 0x3F80), // just below the tie: down
            (0xBF80_8000, 0xBF80), // negative tie: to even
            (0x7F7F_FFFF, 0x7F80), // f32::MAX rounds up to inf
            (0x7F80_0000, 0x7F80), // inf stays inf
            (0x0000_8000, 0x0000), // smallest tie in subnormals: to even zero
        ];
        for (bits, want) in cases {
            let got = bf16_from_f32(f32::from_bits(bits));
            assert_eq!(got, want, "{bits:#010x}");
        }
        // A NaN whose payload sits only in the low half stays NaN.
        let nan = f32::from_bits(0x7F80_0001);
        assert!(bf16_to_f32(bf16_from_f32(nan)).is_nan());
        assert!(bf16_to_f32(bf16_from_f32(f32::NAN)).is_nan());
    }

    #[test]
    fn poison_fills_any_alignment() {
        let mut buf = [0u8; 23];
        for start in 0..4 {
            fill_poison(DType::BF16, &mut buf[start * 2..]);
            for (i, b) in buf[start * 2..].iter().enumerate() {
                assert_eq!(*b, poison::BF16.to_le_bytes()[i % 2]);
            }
        }
        let mut f = vec![0u8; 12];
        fill_poison(DType::F32, &mut f);
        assert!(f32::from_le_bytes([f[4], f[5], f[6], f[7]]).is_nan());
    }

    #[test]
    fn f8_decoding() {
        assert_eq!(f8e4m3fn_to_f64(0x38), 1.0);
        assert_eq!(f8e4m3fn_to_f64(0x7E), 448.0);
        assert!(f8e4m3fn_to_f64(0x7F).is_nan());
        assert_eq!(f16_to_f32(0x3C00), 1.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    }
}
