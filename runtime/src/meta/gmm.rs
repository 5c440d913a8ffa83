//! The tile metadata of the grouped matmul kernels (`kernels/gmm.pk`), as
//! megablox's `make_group_metadata`: from the sizes of the groups whose rows
//! are stacked in `lhs`, the order in which the kernels visit row tiles.
//!
//! A visit is a (group, row tile) pair. Groups are visited in order, and
//! each group visits every row tile its rows touch, so a tile shared by
//! several groups is visited once per group. Empty groups are skipped,
//! unless `visit_empty` asks for one visit each (`tgmm` writes a zero block
//! for them then).
//!
//! Invariants of the result, for `tiles_m = cdiv(m, tm)` and `G` groups:
//! 1. `group_offsets` has `G + 1` entries: 0, the running sums of the sizes,
//!    and `m` last.
//! 2. `group_ids` and `m_tile_ids` have `tiles_m + G - 1` entries, the
//!    static bound on visits; the first `num_tiles` are the visits, both
//!    non-decreasing, and the rest repeat the last visit, so that a kernel
//!    step past `num_tiles` names the blocks its predecessor had.
//! 3. Every row `r < m` lies in tile `m_tile_ids[t]` of some visit `t` whose
//!    group owns it.

use crate::cpu::npy::{NpyArray, NpyType};
use pk_lang::diag::Explanation;

/// The scalar-prefetch operands of `gmm` and `tgmm`, in their order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GmmMetadata {
    pub group_offsets: Vec<i32>,
    pub group_ids: Vec<i32>,
    pub m_tile_ids: Vec<i32>,
    /// The number of real visits; the kernels read it as an `i32[1]`.
    pub num_tiles: i32,
}

impl GmmMetadata {
    /// The operands by name, as `pkc meta gmm` writes them (`NAME.npy`)
    /// and the kernels declare them.
    pub fn arrays(&self) -> [(&'static str, Vec<i32>); 4] {
        [
            ("group_offsets", self.group_offsets.clone()),
            ("group_ids", self.group_ids.clone()),
            ("m_tile_ids", self.m_tile_ids.clone()),
            ("num_tiles", vec![self.num_tiles]),
        ]
    }
}

/// Why group sizes cannot be turned into metadata. Codes `PK5201..PK5299`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum MetaError {
    #[error("group sizes must be a 1-D array of int32 or int64, not {found}")]
    #[diagnostic(
        code(PK5201),
        help("save them as integers: np.save('sizes.npy', np.asarray(sizes, np.int32))")
    )]
    SizesDtype { found: String },

    #[error("group {group} has a negative size, {size}")]
    #[diagnostic(
        code(PK5202),
        help("group sizes count rows: every one is 0 or more (0 for an empty group)")
    )]
    NegativeSize { group: usize, size: i64 },

    #[error("the group sizes add up to {sum}, but m is {m}")]
    #[diagnostic(
        code(PK5203),
        help("every row of lhs belongs to one group: pass the sum of the sizes as m, or fix the sizes")
    )]
    SumMismatch { sum: i128, m: i64 },

    #[error("cannot tile {m} rows of {groups} groups by {tm}: {reason}")]
    #[diagnostic(
        code(PK5204),
        help(
            "m and tm must be positive, there must be at least one group, and \
              cdiv(m, tm) + groups - 1 must fit in int32"
        )
    )]
    BadTiling {
        m: i64,
        tm: i64,
        groups: usize,
        reason: String,
    },
}

/// The metadata of `sizes` (one entry per group) over `m` rows in tiles of
/// `tm` rows.
pub fn gmm_metadata(
    sizes: &[i64],
    m: i64,
    tm: i64,
    visit_empty: bool,
) -> Result<GmmMetadata, MetaError> {
    let bad = |reason: &str| MetaError::BadTiling {
        m,
        tm,
        groups: sizes.len(),
        reason: reason.to_string(),
    };
    if let Some((group, &size)) = sizes.iter().enumerate().find(|(_, &s)| s < 0) {
        return Err(MetaError::NegativeSize { group, size });
    }
    // Summed in i128 so that no list of i64 sizes can overflow the check.
    let sum: i128 = sizes.iter().map(|&s| s as i128).sum();
    if sum != m as i128 {
        return Err(MetaError::SumMismatch { sum, m });
    }
    if sizes.is_empty() {
        return Err(bad("there are no groups"));
    }
    if m <= 0 || tm <= 0 {
        return Err(bad("m and tm must be positive"));
    }
    let tiles_m = (m + tm - 1) / tm;
    let bound = tiles_m + sizes.len() as i64 - 1;
    if m > i32::MAX as i64 || bound > i32::MAX as i64 {
        return Err(bad("the kernels index rows and visits with int32"));
    }

    let groups = sizes.len();
    let mut offsets = Vec::with_capacity(groups + 1);
    offsets.push(0i64);
    for &s in sizes {
        offsets.push(offsets.last().unwrap() + s);
    }
    // Visits per group: the tiles between its first row's tile and its last
    // row's, or none (one under `visit_empty`) for an empty group.
    let group_tiles: Vec<i64> = (0..groups)
        .map(|g| {
            let (start, end) = (offsets[g], offsets[g + 1]);
            if start == end {
                i64::from(visit_empty)
            } else {
                (end + tm - 1) / tm - start / tm
            }
        })
        .collect();
    // Visits per tile: one, plus one for each group that begins inside it
    // after another group's rows (its start is not on a tile boundary), or
    // that is empty and visited there. An empty group at row `m` has no
    // tile of its own and visits the last one.
    let mut tile_visits = vec![1i64; tiles_m as usize];
    for g in 0..groups {
        let start = offsets[g];
        let empty = sizes[g] == 0;
        if (empty && visit_empty) || (!empty && start % tm != 0) {
            tile_visits[((start / tm).min(tiles_m - 1)) as usize] += 1;
        }
    }
    let repeat = |counts: &[i64]| -> Vec<i32> {
        let mut v: Vec<i32> = Vec::with_capacity(bound as usize);
        for (x, &c) in counts.iter().enumerate() {
            v.extend(std::iter::repeat_n(x as i32, c as usize));
        }
        v
    };
    let mut group_ids = repeat(&group_tiles);
    let mut m_tile_ids = repeat(&tile_visits);
    // Both lists count the same visits, once by group and once by tile.
    debug_assert_eq!(group_ids.len(), m_tile_ids.len());
    let num_tiles = group_ids.len();
    for v in [&mut group_ids, &mut m_tile_ids] {
        let last = *v.last().expect("m > 0 gives at least one visit");
        v.resize(bound as usize, last);
    }
    Ok(GmmMetadata {
        group_offsets: offsets.iter().map(|&o| o as i32).collect(),
        group_ids,
        m_tile_ids,
        num_tiles: num_tiles as i32,
    })
}

/// The group sizes a `.npy` array holds: a 1-D array of int32 or int64
/// (numpy's default integer).
pub fn sizes_from_npy(a: &NpyArray) -> Result<Vec<i64>, MetaError> {
    let ints = matches!(a.ty, NpyType::I4 | NpyType::I8);
    if !ints || a.shape.len() != 1 {
        return Err(MetaError::SizesDtype {
            found: format!("{} of shape {:?}", a.ty.describe(), a.shape),
        });
    }
    // `chunks_exact` yields slices of exactly the width converted.
    Ok(if a.ty == NpyType::I4 {
        a.data
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as i64)
            .collect()
    } else {
        a.data
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    })
}

/// The long form of every `PK52xx` code, for `pkc explain`.
pub const EXPLANATIONS: &[Explanation] = &[
    Explanation {
        code: "PK5201",
        title: "gmm-group-sizes-dtype",
        what: "The group sizes given to the grouped-matmul metadata builder are not a 1-D \
               array of int32 or int64.",
        why: "Group sizes count rows, one integer per group; a float or a 2-D array is almost \
              always the wrong file or a missing cast.",
        example: "np.save('sizes.npy', np.array([3.0, 5.0]))        # error: float64\n\
                  np.save('sizes.npy', np.array([3, 5], np.int32))\n\
                  $ pkc meta gmm --group-sizes sizes.npy --m 8 --tm 8",
    },
    Explanation {
        code: "PK5202",
        title: "gmm-negative-group-size",
        what: "A group size is negative.",
        why: "A group owns a contiguous run of rows; a negative count describes no rows and \
              would make the tile walk go backwards.",
        example: "pk.meta.gmm_metadata(np.array([4, -1, 5], np.int32), 8, 8)   # error\n\
                  pk.meta.gmm_metadata(np.array([4, 0, 4], np.int32), 8, 8)",
    },
    Explanation {
        code: "PK5203",
        title: "gmm-group-sizes-sum",
        what: "The group sizes do not add up to `m`, the rows of `lhs`.",
        why: "The kernels write each row of the output under the group that owns it; rows \
              outside every group would be left unwritten, and sizes past `m` would read \
              beyond `lhs`.",
        example: "$ pkc meta gmm --group-sizes sizes.npy --m 100 --tm 32   # sizes add up to 90\n\
                  error[PK5203]: the group sizes add up to 90, but m is 100\n\
                  $ pkc meta gmm --group-sizes sizes.npy --m 90 --tm 32",
    },
    Explanation {
        code: "PK5204",
        title: "gmm-bad-tiling",
        what: "`m` or `tm` is not positive, there are no groups, or the tables would not fit \
               the kernels' int32 indices.",
        why: "The metadata describes a walk over `cdiv(m, tm)` row tiles with at most \
              `cdiv(m, tm) + groups - 1` visits; it needs at least one row, one group and a \
              tile size.",
        example: "$ pkc meta gmm --group-sizes sizes.npy --m 90 --tm 0    # error\n\
                  $ pkc meta gmm --group-sizes sizes.npy --m 90 --tm 32",
    },
];

#[cfg(test)]
mod tests;
