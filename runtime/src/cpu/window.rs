//! Copies of rectangular windows between row-major buffers: block windows
//! between HBM (host arrays) and VMEM, and DMA windows.

/// A window of a row-major array of `shape`: one start and one size per
/// dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Win<'a> {
    pub shape: &'a [u64],
    pub start: &'a [u64],
    pub size: &'a [u64],
}

fn strides(shape: &[u64]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1] as usize;
    }
    s
}

/// Calls `f(src_elem, dst_elem, run)` for each run of consecutive elements
/// of two windows with the same element count walked in row-major order.
/// Only dimensions of size > 1 matter, so windows of different ranks (a
/// squeezed dimension on one side) pair up.
pub(crate) fn runs(src: &Win, dst: &Win, mut f: impl FnMut(usize, usize, usize)) {
    let sst = strides(src.shape);
    let dst_st = strides(dst.shape);
    let base = |w: &Win, st: &[usize]| -> usize {
        w.start.iter().zip(st).map(|(&s, &k)| s as usize * k).sum()
    };
    let (s0, d0) = (base(src, &sst), base(dst, &dst_st));
    let dims = |w: &Win, st: &[usize]| -> Vec<(usize, usize)> {
        w.size
            .iter()
            .zip(st)
            .filter(|(&n, _)| n > 1)
            .map(|(&n, &k)| (n as usize, k))
            .collect()
    };
    let (sd, dd) = (dims(src, &sst), dims(dst, &dst_st));
    let total: usize = sd.iter().map(|d| d.0).product();
    if total == 0 {
        return;
    }
    // Both sides iterate the same sequence of elements; pair them by
    // walking the source's dims and the destination's dims in lockstep.
    let inner = match (sd.last(), dd.last()) {
        (Some(&(n, 1)), Some(&(m, 1))) => gcd(n, m),
        _ => 1,
    };
    let mut si = vec![0usize; sd.len()];
    let mut di = vec![0usize; dd.len()];
    let mut done = 0;
    while done < total {
        let so: usize = si.iter().zip(&sd).map(|(&i, d)| i * d.1).sum();
        let doff: usize = di.iter().zip(&dd).map(|(&i, d)| i * d.1).sum();
        f(s0 + so, d0 + doff, inner);
        done += inner;
        advance(&mut si, &sd, inner);
        advance(&mut di, &dd, inner);
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Advances a row-major index by `by` elements (a run that never crosses the
/// end of the innermost dimension).
fn advance(idx: &mut [usize], dims: &[(usize, usize)], by: usize) {
    let Some(last) = idx.len().checked_sub(1) else {
        return;
    };
    idx[last] += by;
    let mut d = last;
    while idx[d] >= dims[d].0 {
        idx[d] = 0;
        if d == 0 {
            return;
        }
        d -= 1;
        idx[d] += 1;
    }
}

/// Copies a window of `src` into a window of `dst` (element size `eb`).
pub(crate) fn copy(src: &[u8], sw: &Win, dst: &mut [u8], dw: &Win, eb: usize) {
    runs(sw, dw, |s, d, n| {
        dst[d * eb..(d + n) * eb].copy_from_slice(&src[s * eb..(s + n) * eb]);
    });
}

/// Sets every byte of a window (element size `eb`) to `value`.
pub(crate) fn fill(dst: &mut [u8], w: &Win, eb: usize, value: u8) {
    runs(w, w, |_, d, n| dst[d * eb..(d + n) * eb].fill(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_a_partial_block() {
        // A 3x5 array, block [2, 4] at block (1, 1): rows 2..3, cols 4..5
        // (partial in both dims) into the top-left of a 2x4 buffer.
        let src: Vec<u8> = (0..15).collect();
        let mut dst = vec![0xFFu8; 8];
        copy(
            &src,
            &Win {
                shape: &[3, 5],
                start: &[2, 4],
                size: &[1, 1],
            },
            &mut dst,
            &Win {
                shape: &[2, 4],
                start: &[0, 0],
                size: &[1, 1],
            },
            1,
        );
        assert_eq!(dst, [14, 255, 255, 255, 255, 255, 255, 255]);
        let mut dst = vec![0u8; 8];
        copy(
            &src,
            &Win {
                shape: &[3, 5],
                start: &[1, 1],
                size: &[2, 4],
            },
            &mut dst,
            &Win {
                shape: &[2, 4],
                start: &[0, 0],
                size: &[2, 4],
            },
            1,
        );
        assert_eq!(dst, [6, 7, 8, 9, 11, 12, 13, 14]);
    }

    #[test]
    fn pairs_squeezed_windows() {
        // Row 1 of a [3, 4] array into a rank-1 buffer of 4.
        let src: Vec<u8> = (0..12).collect();
        let mut dst = vec![0u8; 4];
        copy(
            &src,
            &Win {
                shape: &[3, 4],
                start: &[1, 0],
                size: &[1, 4],
            },
            &mut dst,
            &Win {
                shape: &[4],
                start: &[0],
                size: &[4],
            },
            1,
        );
        assert_eq!(dst, [4, 5, 6, 7]);
        // A column into a row (strided source).
        let mut dst = vec![0u8; 3];
        copy(
            &src,
            &Win {
                shape: &[3, 4],
                start: &[0, 2],
                size: &[3, 1],
            },
            &mut dst,
            &Win {
                shape: &[3],
                start: &[0],
                size: &[3],
            },
            1,
        );
        assert_eq!(dst, [2, 6, 10]);
    }
}
