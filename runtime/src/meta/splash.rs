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

use crate::cpu::npy::{NpyArray, NpyType};
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
        let (rows, cols) = Mask::check_npy(path, a.ty, &a.shape)?;
        // An integer is nonzero when any of its bytes is, whatever the
        // byte order.
        let keep = a
            .data
            .chunks_exact(a.ty.size())
            .map(|e| e.iter().any(|&b| b != 0))
            .collect();
        Ok(Mask::Dense { rows, cols, keep })
    }

    /// Checks the dtype and shape of a dense mask's `.npy` file from its
    /// header, before its data is read; returns its rows and columns.
    pub fn check_npy(
        path: &str,
        ty: NpyType,
        shape: &[usize],
    ) -> Result<(usize, usize), SplashError> {
        let bad = |reason: String| SplashError::BadMaskFile {
            path: path.to_string(),
            reason,
        };
        if !matches!(
            ty,
            NpyType::B1 | NpyType::I1 | NpyType::U1 | NpyType::I2 | NpyType::U2 | NpyType::I4
        ) {
            return Err(bad(format!(
                "its dtype is {}, not bool or an integer type",
                ty.describe()
            )));
        }
        let [rows, cols] = shape[..] else {
            return Err(bad(format!("it has shape {shape:?}, not [S_q, S_kv]")));
        };
        Ok((rows, cols))
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
            Mask::Local { left, right } => {
                c.saturating_add(*left) >= r && c <= r.saturating_add(*right)
            }
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
    let data_next = next_of(&k, |b| b != 0, |f| d[f]);
    let mask_next = next_of(&k, |b| b == 1, |f| m[f]);
    (steps, k, data_next, mask_next)
}

/// Bytes the builder holds per block of the grid: the seven `i32` tables
/// it builds (the six of the mask info and the partial blocks' indices),
/// the copies [`MaskInfo::arrays`] makes, and a shrunk set.
const BYTES_PER_BLOCK: u64 = 4 * (7 + 6 + 6);

/// The memory [`mask_info`] needs for `mask` over `sq` x `skv` in
/// `[bq, bkv]` blocks, before anything is allocated; `None` when it does
/// not fit in 64 bits. Partial blocks are counted at one per grid row and
/// column for the named masks (each stores a block only where its
/// content is new), and at every block for a dense mask.
pub fn memory_needed(mask: &Mask, sq: usize, skv: usize, bq: usize, bkv: usize) -> Option<u64> {
    let (nq, nk) = (sq.div_ceil(bq) as u64, skv.div_ceil(bkv) as u64);
    let block = (bq as u64).checked_mul(bkv as u64)?;
    let tables = nq.checked_mul(nk)?.checked_mul(BYTES_PER_BLOCK)?;
    let partial = match mask {
        // The mask itself, and at most every block distinct.
        Mask::Dense { .. } => (sq as u64).checked_mul(skv as u64)?.checked_mul(2)?,
        _ => nq.checked_add(nk)?.checked_add(2)?.checked_mul(block)?,
    };
    tables.checked_add(partial)
}

/// A block's content, for the named masks, follows from a few numbers:
/// its offset from the diagonal, its position in a chunk and how much of
/// it lies inside the mask. Blocks with the same key have the same
/// content, so each key's content is computed once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct BlockKey {
    /// `c0 - r0`: the first column less the first row.
    diagonal: i128,
    /// `c0 % size` for a chunked mask, else 0.
    phase: usize,
    rows: usize,
    cols: usize,
}

/// What a block of the grid holds: nothing, everything, or some entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Empty,
    Full,
    Partial,
}

impl Mask {
    /// The kind of the block of rows `r0..r1` and columns `c0..c1` (both
    /// inside the mask, non-empty) in O(1) for the named masks; `padded`
    /// when the block reaches past an edge, where it reads false.
    fn kind(&self, r0: usize, r1: usize, c0: usize, c1: usize, padded: bool) -> Kind {
        let (r0i, r1i, c0i, c1i) = (r0 as i128, r1 as i128 - 1, c0 as i128, c1 as i128 - 1);
        // c - r over the block runs from c0 - r1 to c1 - r0, every value
        // between taken.
        let band = |left: i128, right: i128| {
            let (lo, hi) = (c0i - r1i, c1i - r0i);
            if lo > right || hi < -left {
                Kind::Empty
            } else if lo >= -left && hi <= right {
                Kind::Full
            } else {
                Kind::Partial
            }
        };
        let kind = match self {
            Mask::Full => Kind::Full,
            Mask::Causal => band(i128::MAX / 4, 0),
            Mask::Local { left, right } => band(*left as i128, *right as i128),
            Mask::Chunked(size) => {
                let size = *size;
                let (klo, khi) = (
                    (r0 / size).max(c0 / size),
                    ((r1 - 1) / size).min((c1 - 1) / size),
                );
                if klo > khi {
                    Kind::Empty
                } else {
                    // In chunk klo, the first column against the last row.
                    let first_col = c0.max(klo * size);
                    let last_row = (r1 - 1).min((klo + 1) * size - 1);
                    let one_chunk = r0 / size == (r1 - 1) / size
                        && c0 / size == (c1 - 1) / size
                        && r0 / size == c0 / size;
                    if klo == khi && first_col > last_row {
                        Kind::Empty
                    } else if one_chunk && c1 - 1 <= r0 {
                        Kind::Full
                    } else {
                        Kind::Partial
                    }
                }
            }
            Mask::Dense { .. } => {
                let kept = (r0..r1)
                    .map(|r| (c0..c1).filter(|&c| self.keeps(r, c)).count())
                    .sum::<usize>();
                match kept {
                    0 => Kind::Empty,
                    n if n == (r1 - r0) * (c1 - c0) => Kind::Full,
                    _ => Kind::Partial,
                }
            }
        };
        match kind {
            Kind::Full if padded => Kind::Partial,
            k => k,
        }
    }

    /// The key of a block's content (see [`BlockKey`]); `None` for a
    /// dense mask, whose blocks are told apart by their content.
    fn block_key(&self, r0: usize, c0: usize, rows: usize, cols: usize) -> Option<BlockKey> {
        let (diagonal, phase) = match self {
            Mask::Full => (0, 0),
            Mask::Causal | Mask::Local { .. } => (c0 as i128 - r0 as i128, 0),
            Mask::Chunked(size) => (c0 as i128 - r0 as i128, c0 % size),
            Mask::Dense { .. } => return None,
        };
        Some(BlockKey {
            diagonal,
            phase,
            rows,
            cols,
        })
    }

    /// The first query row below `sq` that sees no key among `skv`.
    fn first_empty_row(&self, sq: usize, skv: usize) -> Option<usize> {
        match self {
            Mask::Full | Mask::Causal => None,
            // Row r sees r - left ..= r + right: none once r - left >= skv.
            Mask::Local { left, .. } => Some(skv.saturating_add(*left)).filter(|&r| r < sq),
            // Row r sees its chunk's start ..= r: none once that start is
            // past the keys, from the first chunk starting at or after skv.
            Mask::Chunked(size) => skv.div_ceil(*size).checked_mul(*size).filter(|&r| r < sq),
            Mask::Dense { cols, keep, .. } => {
                (0..sq).find(|&r| !keep[r * cols..r * cols + skv].iter().any(|&k| k))
            }
        }
    }
}

/// The mask info of `mask` over `sq` queries and `skv` keys in `[bq, bkv]`
/// blocks. Its time and memory follow the mask info it makes: one step per
/// block of the grid, and the content of a partial block computed only
/// when it may be new. Sizes whose mask info does not fit in this host's
/// memory are refused before anything is allocated (`PK5105`).
pub fn mask_info(
    mask: &Mask,
    sq: usize,
    skv: usize,
    bq: usize,
    bkv: usize,
) -> Result<MaskInfo, SplashError> {
    mask_info_within(mask, sq, skv, bq, bkv, crate::cpu::available_host_memory())
}

/// [`mask_info`] with the memory that may be allocated (and where that
/// figure comes from) given.
pub fn mask_info_within(
    mask: &Mask,
    sq: usize,
    skv: usize,
    bq: usize,
    bkv: usize,
    room: Option<(u64, &'static str)>,
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
    let too_large = |needed: Option<u64>| SplashError::TooLarge {
        nq,
        nk,
        needed: needed.map_or("more than 16 EiB".into(), crate::cpu::human_bytes),
        available: room.map_or("no more".into(), |(b, from)| {
            format!("{} ({from})", crate::cpu::human_bytes(b))
        }),
    };
    // Block indices are i32 in the kernels' tables.
    let limit = i32::MAX as usize;
    let needed = memory_needed(mask, sq, skv, bq, bkv);
    match (needed, room) {
        (None, _) => return Err(too_large(None)),
        (Some(n), Some((avail, _))) if n > avail => return Err(too_large(Some(n))),
        _ if nq > limit || nk > limit || nq.checked_mul(nk).is_none_or(|b| b > limit) => {
            return Err(too_large(needed))
        }
        _ => {}
    }
    if let Some(row) = mask.first_empty_row(sq, skv) {
        return Err(SplashError::EmptyRow { row });
    }
    let mut block_mask = vec![0i32; nq * nk];
    let mut block_index = vec![0i32; nq * nk];
    let mut by_key: HashMap<BlockKey, i32> = HashMap::new();
    let mut distinct: HashMap<Vec<i8>, i32> = HashMap::new();
    let mut mask_blocks: Vec<i8> = Vec::new();
    let mut block = vec![0i8; bq * bkv];
    for i in 0..nq {
        let (r0, r1) = (i * bq, ((i + 1) * bq).min(sq));
        for j in 0..nk {
            let (c0, c1) = (j * bkv, ((j + 1) * bkv).min(skv));
            let padded = r1 - r0 < bq || c1 - c0 < bkv;
            block_mask[i * nk + j] = match mask.kind(r0, r1, c0, c1, padded) {
                Kind::Empty => 0,
                Kind::Full => 2,
                Kind::Partial => {
                    let key = mask.block_key(r0, c0, r1 - r0, c1 - c0);
                    let known = key.and_then(|k| by_key.get(&k).copied());
                    let index = match known {
                        Some(index) => index,
                        None => {
                            for (e, slot) in block.iter_mut().enumerate() {
                                let (r, c) = (r0 + e / bkv, c0 + e % bkv);
                                *slot = i8::from(r < sq && c < skv && mask.keeps(r, c));
                            }
                            let next = distinct.len() as i32;
                            let index = *distinct.entry(block.clone()).or_insert_with(|| {
                                mask_blocks.extend_from_slice(&block);
                                next
                            });
                            if let Some(k) = key {
                                by_key.insert(k, index);
                            }
                            index
                        }
                    };
                    block_index[i * nk + j] = index;
                    1
                }
            };
        }
    }
    drop((by_key, distinct));
    if mask_blocks.is_empty() {
        mask_blocks = vec![0; bq * bkv];
    }
    let num_blocks = mask_blocks.len() / (bq * bkv);
    let by_column =
        |v: &[i32]| -> Vec<i32> { (0..nk * nq).map(|f| v[(f % nq) * nk + f / nq]).collect() };
    let dkv_block_mask = by_column(&block_mask);
    let dkv_mask_next = {
        let dkv_index = by_column(&block_index);
        next_of(&dkv_block_mask, |b| b == 1, |f| dkv_index[f])
    };
    let mask_next = next_of(&block_mask, |b| b == 1, |f| block_index[f]);
    drop(block_index);
    Ok(MaskInfo {
        nq,
        nk,
        kv_steps: nk,
        q_steps: nq,
        bq,
        bkv,
        data_next: next_of(&block_mask, |b| b != 0, |f| (f % nk) as i32),
        mask_next,
        dkv_data_next: next_of(&dkv_block_mask, |b| b != 0, |f| (f % nq) as i32),
        dkv_mask_next,
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
fn next_of(kinds: &[i32], live: impl Fn(i32) -> bool, value: impl Fn(usize) -> i32) -> Vec<i32> {
    let first = kinds.iter().position(|&k| live(k));
    let mut next = first.map_or(0, &value);
    let mut out = vec![0; kinds.len()];
    for f in (0..kinds.len()).rev() {
        if live(kinds[f]) {
            next = value(f);
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

    #[error("the mask info of {nq} x {nk} blocks needs {needed} of memory, but {available} is available")]
    #[diagnostic(
        code(PK5105),
        help("the mask info has entries for every pair of a query block and a key block; use larger blocks (--bq, --bkv)")
    )]
    TooLarge {
        nq: usize,
        nk: usize,
        needed: String,
        available: String,
    },

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
    Explanation {
        code: "PK5105",
        title: "splash-mask-info-too-large",
        what: "The mask info for these sequence lengths and block sizes does not fit in this \
               host's memory (or has more than 2^31 - 1 blocks, which the kernels index \
               with an i32).",
        why: "The mask info holds several `i32` tables with one entry per pair of a query \
              block and a key block: `ceil(sq / bq) * ceil(skv / bkv)` entries each. The \
              size is checked before anything is built, so a mistyped size is an error \
              at once rather than an allocation failure or minutes of work.",
        example: "$ pkc meta splash --mask causal --sq 4194304 --bq 8 --bkv 8\n\
                  error[PK5105]: the mask info of 524288 x 524288 blocks needs 19.5 TiB of memory, ...\n\
                  $ pkc meta splash --mask causal --sq 4194304 --bq 2048 --bkv 2048",
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

    /// The mask info by its definition, entry by entry: every block's
    /// entries read one at a time, and each partial block's content
    /// looked up among those stored.
    fn by_definition(mask: &Mask, sq: usize, skv: usize, bq: usize, bkv: usize) -> MaskInfo {
        let (nq, nk) = (sq.div_ceil(bq), skv.div_ceil(bkv));
        let mut kinds = vec![0; nq * nk];
        let mut index = vec![0; nq * nk];
        let mut stored: Vec<Vec<i8>> = Vec::new();
        for i in 0..nq {
            for j in 0..nk {
                let block: Vec<i8> = (0..bq * bkv)
                    .map(|e| {
                        let (r, c) = (i * bq + e / bkv, j * bkv + e % bkv);
                        i8::from(r < sq && c < skv && mask.keeps(r, c))
                    })
                    .collect();
                let kept = block.iter().filter(|&&b| b == 1).count();
                kinds[i * nk + j] = if kept == 0 {
                    0
                } else if kept == bq * bkv {
                    2
                } else {
                    let at = stored.iter().position(|b| *b == block).unwrap_or_else(|| {
                        stored.push(block.clone());
                        stored.len() - 1
                    });
                    index[i * nk + j] = at as i32;
                    1
                };
            }
        }
        let mut mask_blocks: Vec<i8> = stored.concat();
        if mask_blocks.is_empty() {
            mask_blocks = vec![0; bq * bkv];
        }
        // "Next" by a plain forward search, wrapping around.
        let next = |kinds: &[i32], live: &dyn Fn(i32) -> bool, value: &dyn Fn(usize) -> i32| {
            let n = kinds.len();
            (0..n)
                .map(|f| {
                    (0..n)
                        .map(|k| (f + k) % n)
                        .find(|&g| live(kinds[g]))
                        .map_or(0, value)
                })
                .collect::<Vec<i32>>()
        };
        let by_col = |v: &[i32]| {
            (0..nk * nq)
                .map(|f| v[(f % nq) * nk + f / nq])
                .collect::<Vec<_>>()
        };
        let (dkinds, dindex) = (by_col(&kinds), by_col(&index));
        MaskInfo {
            nq,
            nk,
            bq,
            bkv,
            data_next: next(&kinds, &|b| b != 0, &|f| (f % nk) as i32),
            mask_next: next(&kinds, &|b| b == 1, &|f| index[f]),
            dkv_data_next: next(&dkinds, &|b| b != 0, &|f| (f % nq) as i32),
            dkv_mask_next: next(&dkinds, &|b| b == 1, &|f| dindex[f]),
            block_mask: kinds,
            dkv_block_mask: dkinds,
            num_blocks: mask_blocks.len() / (bq * bkv),
            mask_blocks,
            kv_steps: nk,
            q_steps: nq,
        }
    }

    /// The builder, which classifies named masks' blocks from their
    /// bounds and computes each content once per key, equals the
    /// definition on every mask and size here, ragged edges included.
    #[test]
    fn the_builder_equals_the_definition() {
        let mut masks = vec![Mask::Causal, Mask::Full];
        for (l, r) in [(0, 0), (1, 0), (3, 2), (0, 5), (7, 1), (100, 100)] {
            masks.push(Mask::Local { left: l, right: r });
        }
        for c in [1, 2, 3, 5, 8] {
            masks.push(Mask::Chunked(c));
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut cases = 0;
        for sq in [1, 5, 8, 13] {
            for skv in [1, 4, 8, 11] {
                let keep = (0..sq * skv)
                    .map(|e| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        // Every row keeps its first key, so no row is empty.
                        e % skv == 0 || seed.is_multiple_of(3)
                    })
                    .collect();
                let mut all = masks.clone();
                all.push(Mask::Dense {
                    rows: sq,
                    cols: skv,
                    keep,
                });
                for m in &all {
                    for (bq, bkv) in [(1, 1), (2, 2), (3, 2), (2, 4), (4, 3), (8, 8), (16, 2)] {
                        let got = mask_info(m, sq, skv, bq, bkv);
                        let want_row = (0..sq).find(|&r| !(0..skv).any(|c| m.keeps(r, c)));
                        match want_row {
                            Some(row) => assert_eq!(got, Err(SplashError::EmptyRow { row })),
                            None => {
                                let want = by_definition(m, sq, skv, bq, bkv);
                                assert_eq!(
                                    got.as_ref(),
                                    Ok(&want),
                                    "{m:?} {sq}x{skv} in {bq}x{bkv}"
                                );
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(cases > 500, "{cases}");
    }

    /// Sizes whose mask info cannot fit are refused before anything is
    /// built, naming the grid and the memory.
    #[test]
    fn sizes_past_memory_are_refused_first() {
        let e = mask_info_within(
            &Mask::Causal,
            4194304,
            4194304,
            8,
            8,
            Some((2 << 30, "test")),
        )
        .unwrap_err();
        assert!(
            matches!(
                &e,
                SplashError::TooLarge {
                    nq: 524288,
                    nk: 524288,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            e.to_string().contains("but 2.0 GiB (test) is available"),
            "{e}"
        );
        // The same grid fits when memory allows it by the estimate, yet a
        // grid of more than 2^31 - 1 blocks is still refused.
        let e = mask_info_within(&Mask::Causal, 1 << 20, 1 << 20, 1, 8, None).unwrap_err();
        assert!(matches!(e, SplashError::TooLarge { .. }), "{e:?}");
    }

    #[test]
    fn every_code_is_explained() {
        for code in ["PK5101", "PK5102", "PK5103", "PK5104", "PK5105"] {
            assert!(EXPLANATIONS.iter().any(|e| e.code == code), "{code}");
        }
    }
}
