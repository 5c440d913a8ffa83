//! A cost estimate of one kernel call, derived from the IR: floating-point
//! operations, transcendental evaluations, HBM bytes moved and bytes sent
//! to other devices (remote copies over the interconnect). XLA uses it
//! (the `cost_estimate` of a `tpu_custom_call`) to schedule around the
//! kernel; `pkc bench` divides by it to report GFLOP/s and GB/s.
//!
//! Bytes follow the pipeline exactly: a block is fetched when its block index
//! differs from the previous grid step's (so a revisited block is fetched
//! once), outputs are written back when their block index changes, and
//! whole-array VMEM operands move once. Index maps are evaluated per grid step
//! when they use only grid indices and constants; a map that reads
//! scalar-prefetch values counts one fetch per step.

use super::*;

/// Totals for one call of the kernel (all grid steps).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cost {
    pub flops: u64,
    pub transcendentals: u64,
    pub bytes_accessed: u64,
    /// Bytes this device sends to others: the window of every remote copy
    /// it starts, counted once per time the copy starts (loops with
    /// constant bounds multiply; of an `if` the branch that specialisation
    /// fixed, else the dearer one).
    pub remote_bytes: u64,
}

/// Grids larger than this are not simulated step by step; every step then
/// counts as a fetch.
const MAX_SIMULATED_STEPS: u64 = 1 << 20;

pub fn estimate(k: &Kernel) -> Cost {
    let steps = k.grid_steps().unwrap_or(1);
    // One step's work, by the rules the tuner counts with too.
    let body = super::work::step(k);
    let mut bytes = 0u64;
    for o in &k.operands {
        let elem = o.dtype.bytes();
        match &o.block {
            None => {
                if o.space != Space::Any {
                    let n: u64 = o.shape.iter().map(Dim::get).product();
                    bytes += n * elem;
                }
            }
            Some(b) => {
                let block: u64 = b.dims.iter().map(|d| d.extent().get()).product::<u64>() * elem;
                bytes += fetches(k, &b.index_map, steps) * block;
            }
        }
    }
    Cost {
        flops: body.flops().saturating_mul(steps),
        transcendentals: body.transcendentals.saturating_mul(steps),
        bytes_accessed: bytes,
        remote_bytes: body.remote_bytes.saturating_mul(steps),
    }
}

fn elements(f: &Func, v: Value) -> u64 {
    f.ty(v).elements().unwrap_or(1)
}

/// The elements of `o`'s first result when it is a tile, else 0: the
/// vector-unit work an elementwise op does (scalar-unit work is not
/// counted).
pub fn vector_elements(f: &Func, o: &Op) -> u64 {
    o.results
        .first()
        .filter(|r| !f.ty(**r).is_scalar())
        .map(|r| elements(f, *r))
        .unwrap_or(0)
}

/// The value of an i32 constant op, if `v` is one.
pub fn const_int(f: &Func, v: Value) -> Option<i64> {
    match f.values[v].def {
        ValueDef::Result(op, 0) => match f.ops[op].kind {
            OpKind::Const(Literal::Int(x)) => Some(x),
            _ => None,
        },
        _ => None,
    }
}

/// How many times a block is moved: the number of grid steps (row-major
/// order) whose block index differs from the previous step's (all of them
/// past a million steps, which are not simulated).
pub fn fetches(k: &Kernel, map: &Func, steps: u64) -> u64 {
    if steps > MAX_SIMULATED_STEPS {
        return steps;
    }
    let extents: Vec<u64> = k.grid.iter().map(|a| a.extent.get().max(1)).collect();
    let mut idx = vec![0i64; extents.len()];
    let mut prev: Option<Vec<i64>> = None;
    let mut count = 0u64;
    for _ in 0..steps {
        match eval_map(map, &idx) {
            Some(b) => {
                if prev.as_ref() != Some(&b) {
                    count += 1;
                }
                prev = Some(b);
            }
            None => return steps,
        }
        // Advance the row-major grid counter.
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if (idx[d] as u64) < extents[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    count
}

/// Evaluates a scalar index map; `None` when it reads memory or uses ops the
/// estimate does not model.
pub fn eval_map(f: &Func, grid: &[i64]) -> Option<Vec<i64>> {
    let entry = f.entry?;
    let mut vals: HashMap<Value, i64> = HashMap::new();
    for (p, g) in f.blocks[entry].params.iter().zip(grid) {
        vals.insert(*p, *g);
    }
    for &op in &f.blocks[entry].ops {
        let o = &f.ops[op];
        let get = |v: &Value| vals.get(v).copied();
        let r = match &o.kind {
            OpKind::Const(Literal::Int(x)) => *x,
            OpKind::Const(Literal::Bool(b)) => *b as i64,
            OpKind::Binary(b, x, y) => {
                let (x, y) = (get(x)?, get(y)?);
                match b {
                    BinaryOp::Add => x.wrapping_add(y),
                    BinaryOp::Sub => x.wrapping_sub(y),
                    BinaryOp::Mul => x.wrapping_mul(y),
                    BinaryOp::Div => x.checked_div(y)?,
                    BinaryOp::Rem => x.checked_rem(y)?,
                    BinaryOp::Max => x.max(y),
                    BinaryOp::Min => x.min(y),
                    BinaryOp::And => x & y,
                    BinaryOp::Or => x | y,
                    BinaryOp::Xor => x ^ y,
                    _ => return None,
                }
            }
            OpKind::Compare(c, x, y) => {
                let (x, y) = (get(x)?, get(y)?);
                (match c {
                    CmpOp::Eq => x == y,
                    CmpOp::Ne => x != y,
                    CmpOp::Lt => x < y,
                    CmpOp::Le => x <= y,
                    CmpOp::Gt => x > y,
                    CmpOp::Ge => x >= y,
                }) as i64
            }
            OpKind::Select {
                cond,
                on_true,
                on_false,
            } => {
                if get(cond)? != 0 {
                    get(on_true)?
                } else {
                    get(on_false)?
                }
            }
            _ => return None,
        };
        vals.insert(*o.results.first()?, r);
    }
    f.blocks[entry]
        .yields
        .iter()
        .map(|y| vals.get(y).copied())
        .collect()
}

use std::collections::HashMap;
