//! The mask info of kernels/splash.pk: from a mask description and block
//! sizes to the arrays the splash attention kernels read, after JAX's
//! `splash_attention_mask_info`. Codes `PK5101..PK5199`.
//!
//! The `[sq, skv]` mask (true where a query row sees a key column) is cut
//! into `[bq, bkv]` blocks, padded with false past its edges. For the
//! `[nq, nk]` grid of blocks (`nq = ceil(sq / bq)`, `nk = ceil(skv / bkv)`):
//!
//! - `block_mask[i, j]` is 0 when block `(i, j)` has no true entry, 2 when
//!   every entry is true, and 1 otherwise (a *partial* block);
//! - `mask_blocks` holds each distinct partial block once, in the order the
//!   blocks are first met in row-major grid order, as int8 0/1;
//! - `data_next[i, j]` is the column of the first block at or after
//!   `(i, j)` in row-major order whose `block_mask` is not 0, wrapping to
//!   the first such block; a kernel fetches that key block at step
//!   `(i, j)`, so a skipped step prefetches what the next live step needs;
//! - `mask_next[i, j]` is likewise the `mask_blocks` index of the first
//!   partial block at or after `(i, j)`;
//! - `dkv_block_mask`, `dkv_data_next` and `dkv_mask_next` are `[nk, nq]`:
//!   the same for the backward `dk`/`dv` kernel, which walks the grid by
//!   key block then query block; `dkv_data_next` holds query block indices.
//!
//! [`MaskInfo::shrunk`] compresses the grid as JAX's `shrink_grid` does: row
//! `i` of the forward arrays lists only the live blocks of row `i`, in
//! order, then skipped padding steps, so the arrays are `[nq, kv_steps]`
//! with `kv_steps` the most live blocks of any row (and the dkv arrays
//! `[nk, q_steps]` likewise by columns). A step's key block is then
//! `data_next[i, t]`, not `t`; the "next" rule is the same over steps.
//!
//! Invariants of a [`MaskInfo`]:
//! 1. For every live block, `data_next` names the block's own column (and
//!    `dkv_data_next` its own row); for every partial block, `mask_next`
//!    names its own content. Only skipped steps read another block.
//! 2. `mask_blocks` is never empty: a mask without partial blocks gets one
//!    all-zero block, which no step applies, so the kernel's operand has a
//!    shape.
//! 3. Every query row `r < sq` sees at least one key: a row without keys
//!    would divide by zero in the softmax, so it is refused (PK5103).

use crate::cpu::npy::{self, NpyArray, NpyType};
use crate::cpu::HostArray;
use pk_lang::diag::Explanation;
use pk_lang::ir::DType;
use std::collections::HashMap;

/// A mask description: which keys each query row sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mask {
    /// Row `r` sees columns `c <= r`.
    Causal,
    /// A sliding window: row `r` sees `r - left <= c <= r + right`.
    Local { left: usize, right: usize },
    /// Causal within chunks of `size` rows and columns: row `r` sees
    /// `c <= r` with `c / size == r / size`.
    Chunked(usize),
    /// Every row sees every column.
    Full,
    /// An explicit `[rows, cols]` mask, row-major.
    Dense {
        rows: usize,
        cols: usize,
        keep: Vec<bool>,
    },
}

impl Mask {
    /// Parses `causal`, `full`, `local:L,R` or `chunked:C` (a file mask is
    /// read with [`Mask::from_npy`]).
    pub fn parse(spec: &str) -> Result<Mask, SplashError> {
        let bad = || SplashError::BadSpec {
            spec: spec.to_string(),
        };
        let number = |s: &str| s.trim().parse::<usize>().map_err(|_| bad());
        match spec.trim().split_once(':') {
            None if spec.trim() == "causal" => Ok(Mask::Causal),
            None if spec.trim() == "full" => Ok(Mask::Full),
            Some(("local", rest)) => {
                let (l, r) = rest.split_once(',').ok_or_else(bad)?;
                Ok(Mask::Local {
                    left: number(l)?,
                    right: number(r)?,
                })
            }
            Some(("chunked", c)) => match number(c)? {
                0 => Err(SplashError::BadSizes {
                    reason: "the chunk size of `chunked:C` is 0".to_string(),
                }),
                c => Ok(Mask::Chunked(c)),
            },
            _ => Err(bad()),
        }
    }

    /// A dense mask from a 2-D `.npy` array of bools or integers (nonzero
    /// means the query sees the key); `path` names it in messages.
    pub fn from_npy(path: &str, a: &NpyArray) -> Result<Mask, SplashError> {
        let bad = |reason: String| SplashError::BadMaskFile {
            path: path.to_string(),
            reason,
        };
        if !matches!(
            a.ty,
            NpyType::B1 | NpyType::I1 | NpyType::U1 | NpyType::I2 | NpyType::U2 | NpyType::I4
        ) {
            return Err(bad(format!(
                "its dtype is {}, not bool or an integer type",
                a.ty.describe()
            )));
        }
        let [rows, cols] = a.shape[..] else {
            return Err(bad(format!("it has shape {:?}, not [S_q, S_kv]", a.shape)));
        };
        let keep = npy::values(a, DType::I32)
            .iter()
            .map(|&v| v != 0.0)
            .collect();
        Ok(Mask::Dense { rows, cols, keep })
    }

    /// The shape a dense mask fixes, if any.
    pub fn shape(&self) -> Option<(usize, usize)> {
        match self {
            Mask::Dense { rows, cols, .. } => Some((*rows, *cols)),
            _ => None,
        }
    }

    /// Whether query row `r` sees key column `c` (both inside the mask).
    pub fn keeps(&self, r: usize, c: usize) -> bool {
        match self {
            Mask::Causal => c <= r,
            Mask::Local { left, right } => c + left >= r && c <= r + right,
            Mask::Chunked(size) => c <= r && c / size == r / size,
            Mask::Full => true,
            Mask::Dense { cols, keep, .. } => keep[r * cols + c],
        }
    }
}

/// The arrays of the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskInfo {
    pub nq: usize,
    pub nk: usize,
    pub bq: usize,
    pub bkv: usize,
    /// `[nq, nk]`.
    pub block_mask: Vec<i32>,
    pub data_next: Vec<i32>,
    pub mask_next: Vec<i32>,
    /// `[nk, nq]`.
    pub dkv_block_mask: Vec<i32>,
    pub dkv_data_next: Vec<i32>,
    pub dkv_mask_next: Vec<i32>,
    /// `[num_blocks, bq, bkv]`, 0 or 1.
    pub mask_blocks: Vec<i8>,
    /// The first dimension of `mask_blocks` (the kernels' `NP`), at least 1.
    pub num_blocks: usize,
    /// Columns of the forward arrays (the kernels' `NKS`): `nk`, or fewer
    /// when shrunk.
    pub kv_steps: usize,
    /// Columns of the dkv arrays (the kernels' `NQS`): `nq`, or fewer when
    /// shrunk.
    pub q_steps: usize,
}

impl MaskInfo {
    /// Every array with its file stem, in a fixed order: the names are the
    /// kernels' operand names, so `--in NAME=DIR/NAME.npy` fits.
    pub fn arrays(&self) -> Vec<(&'static str, HostArray)> {
        let i32s = |v: &[i32], shape: [usize; 2]| {
            let data = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            HostArray::new(DType::I32, shape.to_vec(), data)
        };
        let (fwd, dkv) = ([self.nq, self.kv_steps], [self.nk, self.q_steps]);
        vec![
            ("data_next", i32s(&self.data_next, fwd)),
            ("mask_next", i32s(&self.mask_next, fwd)),
            ("block_mask", i32s(&self.block_mask, fwd)),
            ("dkv_data_next", i32s(&self.dkv_data_next, dkv)),
            ("dkv_mask_next", i32s(&self.dkv_mask_next, dkv)),
            ("dkv_block_mask", i32s(&self.dkv_block_mask, dkv)),
            (
                "mask_blocks",
                HostArray::new(
                    DType::I8,
                    vec![self.num_blocks, self.bq, self.bkv],
                    self.mask_blocks.iter().map(|&b| b as u8).collect(),
                ),
            ),
        ]
    }

    /// Live blocks (block_mask not 0) over all blocks: the fraction of the
    /// dense attention's work the kernels do.
    pub fn density(&self) -> f64 {
        let live = self.block_mask.iter().filter(|&&b| b != 0).count();
        live as f64 / (self.nq * self.nk) as f64
    }

    /// The same mask info with the grid shrunk to the live blocks of each
    /// row (and, for the dkv arrays, of each column); see the module
    /// documentation. Shrinking a shrunk info changes nothing.
    pub fn shrunk(&self) -> MaskInfo {
        let (kv_steps, block_mask, data_next, mask_next) = compress(
            self.nq,
            self.kv_steps,
            &self.block_mask,
            &self.data_next,
            &self.mask_next,
        );
        let (q_steps, dkv_block_mask, dkv_data_next, dkv_mask_next) = compress(
            self.nk,
            self.q_steps,
            &self.dkv_block_mask,
            &self.dkv_data_next,
            &self.dkv_mask_next,
        );
        MaskInfo {
            block_mask,
            data_next,
            mask_next,
            dkv_block_mask,
            dkv_data_next,
            dkv_mask_next,
            kv_steps,
            q_steps,
            ..self.clone()
        }
    }
}

/// Compresses `[rows, cols]` arrays to `[rows, steps]`: each row's live
/// entries first, in order, then skipped steps, with `steps` the most live
/// entries of any row (at least 1: a grid axis cannot be empty). By
/// invariant 1, a live entry's `data` and a partial one's `masks` are its
/// own, so they move with it; the skipped steps get the "next" values
/// again, over the new order.
fn compress(
    rows: usize,
    cols: usize,
    kinds: &[i32],
    data: &[i32],
    masks: &[i32],
) -> (usize, Vec<i32>, Vec<i32>, Vec<i32>) {
    let live = |r: usize| (0..cols).filter(move |&c| kinds[r * cols + c] != 0);
    let steps = (0..rows).map(|r| live(r).count()).max().unwrap_or(0).max(1);
    let mut k = vec![0; rows * steps];
    let mut d = vec![0; rows * steps];
    let mut m = vec![0; rows * steps];
    for r in 0..rows {
        for (s, c) in live(r).enumerate() {
            let (from, to) = (r * cols + c, r * steps + s);
            (k[to], d[to], m[to]) = (kinds[from], data[from], masks[from]);
        }
    }
    let data_next = next_of(&k, |b| b != 0, &d);
    let mask_next = next_of(&k, |b| b == 1, &m);
    (steps, k, data_next, mask_next)
}

/// The mask info of `mask` over `sq` queries and `skv` keys in `[bq, bkv]`
/// blocks.
pub fn mask_info(
    mask: &Mask,
    sq: usize,
    skv: usize,
    bq: usize,
    bkv: usize,
) -> Result<MaskInfo, SplashError> {
    let sizes = |reason: String| Err(SplashError::BadSizes { reason });
    if sq == 0 || skv == 0 {
        return sizes(format!(
            "the sequence lengths are {sq} (queries) and {skv} (keys); both must be positive"
        ));
    }
    if bq == 0 || bkv == 0 {
        return sizes(format!(
            "the block sizes are {bq} (bq) and {bkv} (bkv); both must be positive"
        ));
    }
    if let Some((rows, cols)) = mask.shape() {
        if (rows, cols) != (sq, skv) {
            return sizes(format!(
                "the dense mask is [{rows}, {cols}] but the sequence lengths are [{sq}, {skv}]"
            ));
        }
    }
    let (nq, nk) = (sq.div_ceil(bq), skv.div_ceil(bkv));
    let mut block_mask = vec![0i32; nq * nk];
    let mut block_index = vec![0i32; nq * nk];
    let mut distinct: HashMap<Vec<i8>, i32> = HashMap::new();
    let mut mask_blocks: Vec<i8> = Vec::new();
    let mut row_sees = vec![false; sq];
    let mut block = vec![0i8; bq * bkv];
    for i in 0..nq {
        for j in 0..nk {
            let mut kept = 0usize;
            for (e, slot) in block.iter_mut().enumerate() {
                let (r, c) = (i * bq + e / bkv, j * bkv + e % bkv);
                let k = r < sq && c < skv && mask.keeps(r, c);
                *slot = i8::from(k);
                if k {
                    kept += 1;
                    row_sees[r] = true;
                }
            }
            block_mask[i * nk + j] = match kept {
                0 => 0,
                n if n == bq * bkv => 2,
                _ => {
                    let next = distinct.len() as i32;
                    let index = *distinct.entry(block.clone()).or_insert_with(|| {
                        mask_blocks.extend_from_slice(&block);
                        next
                    });
                    block_index[i * nk + j] = index;
                    1
                }
            };
        }
    }
    if let Some(row) = row_sees.iter().position(|&s| !s) {
        return Err(SplashError::EmptyRow { row });
    }
    if mask_blocks.is_empty() {
        mask_blocks = vec![0; bq * bkv];
    }
    let num_blocks = mask_blocks.len() / (bq * bkv);
    let column: Vec<i32> = (0..nq * nk).map(|f| (f % nk) as i32).collect();
    let transpose =
        |v: &[i32]| -> Vec<i32> { (0..nk * nq).map(|f| v[(f % nq) * nk + f / nq]).collect() };
    let dkv_block_mask = transpose(&block_mask);
    let dkv_index = transpose(&block_index);
    let row: Vec<i32> = (0..nk * nq).map(|f| (f % nq) as i32).collect();
    Ok(MaskInfo {
        nq,
        nk,
        kv_steps: nk,
        q_steps: nq,
        bq,
        bkv,
        data_next: next_of(&block_mask, |b| b != 0, &column),
        mask_next: next_of(&block_mask, |b| b == 1, &block_index),
        dkv_data_next: next_of(&dkv_block_mask, |b| b != 0, &row),
        dkv_mask_next: next_of(&dkv_block_mask, |b| b == 1, &dkv_index),
        block_mask,
        dkv_block_mask,
        mask_blocks,
        num_blocks,
    })
}

/// For each position of `kinds`, `value` at the first position at or after
/// it whose kind is `live`, wrapping around to the first live position; 0
/// everywhere when none is live. One backward scan: the answer at `f` is
/// `f`'s own value when `f` is live, else the answer at `f + 1`.
fn next_of(kinds: &[i32], live: impl Fn(i32) -> bool, value: &[i32]) -> Vec<i32> {
    let first = kinds.iter().position(|&k| live(k));
    let mut next = first.map_or(0, |f| value[f]);
    let mut out = vec![0; kinds.len()];
    for f in (0..kinds.len()).rev() {
        if live(kinds[f]) {
            next = value[f];
        }
        out[f] = next;
    }
    out
}

/// What makes a mask description or its sizes unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum SplashError {
    #[error("`{spec}` is not a mask description")]
    #[diagnostic(
        code(PK5101),
        help("use `causal`, `full`, `local:LEFT,RIGHT`, `chunked:SIZE` or a .npy file holding a [S_q, S_kv] bool mask")
    )]
    BadSpec { spec: String },

    #[error("{reason}")]
    #[diagnostic(
        code(PK5102),
        help("give positive sequence lengths (`--sq`, `--skv`) and block sizes (`--bq`, `--bkv`); a dense mask's shape must be [sq, skv]")
    )]
    BadSizes { reason: String },

    #[error("query row {row} sees no key: the mask is false along its whole row")]
    #[diagnostic(
        code(PK5103),
        help("the softmax of a row without keys is 0/0; give every query at least one key (its own position, for example)")
    )]
    EmptyRow { row: usize },

    #[error("{path} is not a dense mask: {reason}")]
    #[diagnostic(
        code(PK5104),
        help("save a 2-D bool array: `numpy.save(path, mask.astype(bool))` with mask of shape [S_q, S_kv]")
    )]
    BadMaskFile { path: String, reason: String },
}

/// The explanations of the `PK51xx` codes, for `pkc explain`.
pub const EXPLANATIONS: &[Explanation] = &[
    Explanation {
        code: "PK5101",
        title: "bad-splash-mask",
        what: "The mask given to `pkc meta splash --mask` (or `pk.meta.splash_mask_info`) is \
               none of `causal`, `full`, `local:LEFT,RIGHT`, `chunked:SIZE`, and does not end \
               in `.npy`.",
        why: "The mask info builder knows these masks by name and reads any other mask as a \
              dense boolean array from a file.",
        example: "$ pkc meta splash --mask window:128 --sq 2048 --skv 2048 --bq 512 --bkv 512\n\
                  error[PK5101]: `window:128` is not a mask description\n\
                  $ pkc meta splash --mask local:128,0 --sq 2048 --skv 2048 --bq 512 --bkv 512",
    },
    Explanation {
        code: "PK5102",
        title: "bad-splash-sizes",
        what: "A sequence length or block size is 0, a chunk size is 0, or a dense mask's \
               shape differs from `--sq` and `--skv`.",
        why: "The mask info describes a grid of `ceil(sq / bq) x ceil(skv / bkv)` blocks of one \
              mask; an empty sequence has no softmax, and a mask of another shape would \
              describe a different attention.",
        example: "$ pkc meta splash --mask causal --sq 2048 --skv 2048 --bq 0 --bkv 512\n\
                  error[PK5102]: the block sizes are 0 (bq) and 512 (bkv); both must be positive",
    },
    Explanation {
        code: "PK5103",
        title: "empty-mask-row",
        what: "Some query row of the mask is false at every key.",
        why: "The softmax of a row divides by the sum of its exponentials; with no key that \
              sum is 0 and the output is undefined. JAX's splash attention refuses such \
              masks for the same reason.",
        example: "$ pkc meta splash --mask local:0,0 --sq 256 --skv 128 --bq 128 --bkv 128\n\
                  error[PK5103]: query row 128 sees no key: the mask is false along its whole row",
    },
    Explanation {
        code: "PK5104",
        title: "bad-dense-mask",
        what: "The .npy file given as a dense mask is not a 2-D array of bools or integers.",
        why: "A dense mask is one [S_q, S_kv] matrix shared by every head: true (nonzero) where \
              a query sees a key.",
        example: "$ python -c 'import numpy as np; np.save(\"m.npy\", np.tril(np.ones((256, 256), bool)))'\n\
                  $ pkc meta splash --mask m.npy --bq 128 --bkv 128",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Causal, 4 x 4 in 2 x 2 blocks: the blocks are [partial, skip;
    /// full, partial], and both partial blocks are the same lower
    /// triangle, stored once.
    #[test]
    fn causal_in_two_by_two_blocks() {
        let m = mask_info(&Mask::Causal, 4, 4, 2, 2).unwrap();
        assert_eq!(m.block_mask, vec![1, 0, 2, 1]);
        assert_eq!(m.num_blocks, 1);
        assert_eq!(m.mask_blocks, vec![1, 0, 1, 1]);
        // Step (0, 1) is skipped and fetches the next live block, (1, 0).
        assert_eq!(m.data_next, vec![0, 0, 0, 1]);
        assert_eq!(m.mask_next, vec![0, 0, 0, 0]);
        // By columns: column 0 is [partial, full], column 1 [skip, partial].
        assert_eq!(m.dkv_block_mask, vec![1, 2, 0, 1]);
        assert_eq!(m.dkv_data_next, vec![0, 1, 1, 1]);
    }

    /// A window of one key to the left, in blocks of 2: two distinct
    /// partial blocks, each stored once.
    #[test]
    fn local_has_two_distinct_partial_blocks() {
        let m = mask_info(&Mask::Local { left: 1, right: 0 }, 4, 4, 2, 2).unwrap();
        // Block (1, 0) holds only (2, 1): partial, [0, 1; 0, 0].
        assert_eq!(m.block_mask, vec![1, 0, 1, 1]);
        assert_eq!(m.num_blocks, 2);
        assert_eq!(m.mask_blocks, vec![1, 0, 1, 1, 0, 1, 0, 0]);
        assert_eq!(m.mask_next, vec![0, 1, 1, 0]);
        assert_eq!(m.data_next, vec![0, 0, 0, 1]);
    }

    /// A dense mask whose last block is skipped: that step wraps around to
    /// the first live block, (0, 1), which the next head starts with.
    #[test]
    fn skipped_last_block_wraps_to_the_first_live_block() {
        let rows = [[0, 0, 1, 0], [0, 0, 1, 1], [1, 1, 0, 0], [1, 1, 0, 0]];
        let keep = rows.iter().flatten().map(|&k| k == 1).collect();
        let mask = Mask::Dense {
            rows: 4,
            cols: 4,
            keep,
        };
        let m = mask_info(&mask, 4, 4, 2, 2).unwrap();
        assert_eq!(m.block_mask, vec![0, 1, 2, 0]);
        assert_eq!(m.data_next, vec![1, 1, 0, 1]);
        assert_eq!(m.mask_next, vec![0; 4]);
        assert_eq!(m.dkv_block_mask, vec![0, 2, 1, 0]);
        assert_eq!(m.dkv_data_next, vec![1, 1, 0, 1]);
    }

    /// Causal in 3 x 3 blocks shrinks to rows of at most 3 live blocks
    /// forward, and by columns to at most 3 live query blocks: row 0 has
    /// one live block, then two skipped steps that fetch row 1's first.
    #[test]
    fn shrinking_keeps_the_live_blocks_of_each_row() {
        let m = mask_info(&Mask::Causal, 6, 6, 2, 2).unwrap();
        assert_eq!(m.block_mask, vec![1, 0, 0, 2, 1, 0, 2, 2, 1]);
        let s = m.shrunk();
        assert_eq!((s.kv_steps, s.q_steps), (3, 3));
        assert_eq!(s.block_mask, vec![1, 0, 0, 2, 1, 0, 2, 2, 1]);
        assert_eq!(s.data_next, vec![0, 0, 0, 0, 1, 0, 0, 1, 2]);
        // Column 2 has one live block, row 2: it comes first.
        assert_eq!(s.dkv_block_mask, vec![1, 2, 2, 1, 2, 0, 1, 0, 0]);
        assert_eq!(s.dkv_data_next, vec![0, 1, 2, 1, 2, 2, 2, 0, 0]);
        assert_eq!(s.shrunk(), s);
        // A window of 2 keys in blocks of 2 has at most 2 live blocks per
        // row out of 4.
        let w = mask_info(&Mask::Local { left: 1, right: 0 }, 8, 8, 2, 2).unwrap();
        let ws = w.shrunk();
        assert_eq!((ws.kv_steps, ws.q_steps), (2, 2));
        assert_eq!(ws.block_mask, vec![1, 0, 1, 1, 1, 1, 1, 1]);
        assert_eq!(ws.data_next, vec![0, 0, 0, 1, 1, 2, 2, 3]);
    }

    /// Ragged edges are padded with false, which makes edge blocks partial.
    #[test]
    fn padding_makes_full_edge_blocks_partial() {
        let m = mask_info(&Mask::Full, 3, 3, 2, 2).unwrap();
        assert_eq!(m.block_mask, vec![2, 1, 1, 1]);
        assert_eq!(m.num_blocks, 3);
    }

    #[test]
    fn full_mask_has_one_unused_zero_block() {
        let m = mask_info(&Mask::Full, 4, 8, 2, 4).unwrap();
        assert_eq!(m.block_mask, vec![2; 4]);
        assert_eq!((m.num_blocks, m.mask_blocks.len()), (1, 8));
        assert!(m.mask_blocks.iter().all(|&b| b == 0));
        assert_eq!(m.data_next, vec![0, 1, 0, 1]);
    }

    #[test]
    fn chunked_is_causal_within_chunks() {
        let m = Mask::Chunked(3);
        assert!(m.keeps(2, 0) && !m.keeps(3, 2) && m.keeps(4, 3) && !m.keeps(4, 5));
    }

    #[test]
    fn descriptions_parse_and_bad_ones_have_codes() {
        assert_eq!(
            Mask::parse("local:128,0"),
            Ok(Mask::Local {
                left: 128,
                right: 0
            })
        );
        assert_eq!(Mask::parse("chunked:64"), Ok(Mask::Chunked(64)));
        for bad in ["window:3", "local:1", "local:a,b", "causal:1", ""] {
            assert!(
                matches!(Mask::parse(bad), Err(SplashError::BadSpec { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            Mask::parse("chunked:0"),
            Err(SplashError::BadSizes { .. })
        ));
        assert_eq!(
            mask_info(&Mask::Local { left: 0, right: 0 }, 3, 2, 2, 2),
            Err(SplashError::EmptyRow { row: 2 })
        );
        assert!(matches!(
            mask_info(&Mask::Causal, 4, 4, 0, 2),
            Err(SplashError::BadSizes { .. })
        ));
    }

    #[test]
    fn every_code_is_explained() {
        for code in ["PK5101", "PK5102", "PK5103", "PK5104"] {
            assert!(EXPLANATIONS.iter().any(|e| e.code == code), "{code}");
        }
    }
}
