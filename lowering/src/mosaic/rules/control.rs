//! Structured control flow: `If`, `For` and `While` become `scf.if`,
//! `scf.for` (with `i32` bounds and induction variable) and `scf.while`,
//! their blocks ending in `scf.yield` / `scf.condition`.

use crate::mosaic::body::{Lower, R};
use crate::mosaic::mlir::{detach, region, At, Val};
use melior::ir::{Block, BlockLike, Region, Type};
use pk_lang::ir;

fn result_types<'c>(cx: &Lower<'c, '_>, op: &ir::Op) -> Vec<Type<'c>> {
    op.results.iter().map(|&r| cx.mlir_ty(cx.ty(r))).collect()
}

/// Lowers Tile IR block `b` into a new MLIR block ending in `scf.yield`.
fn yielding<'c>(cx: &mut Lower<'c, '_>, at: At<'c, '_>, b: ir::BlockId) -> R<Block<'c>> {
    let blk = cx.new_block(b, at.loc);
    let ys = cx.block(b, &blk)?;
    cx.m.terminator(At { block: &blk, ..at }, "scf.yield", &ys)?;
    Ok(blk)
}

pub(crate) fn if_<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    cond: ir::Value,
    then_b: ir::BlockId,
    else_b: ir::BlockId,
    op: &ir::Op,
) -> R<Vec<Val<'c>>> {
    let c = cx.val(cond)?;
    let then_r = region(yielding(cx, at, then_b)?);
    // An `if` without results and with an empty `else` gets an empty else
    // region, the form Pallas emits for a one-armed `if`.
    let e = &cx.f.blocks[else_b];
    let else_r = if op.results.is_empty() && e.ops.is_empty() {
        Region::new()
    } else {
        region(yielding(cx, at, else_b)?)
    };
    let tys = result_types(cx, op);
    cx.m.control(at, "scf.if", &[c], &tys, vec![then_r, else_r])
}

pub(crate) fn for_<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    (lo, hi, step): (ir::Value, ir::Value, u64),
    inits: &[ir::Value],
    body: ir::BlockId,
    op: &ir::Op,
) -> R<Vec<Val<'c>>> {
    let mut operands = vec![cx.val(lo)?, cx.val(hi)?, cx.m.i32_const(at, step as i64)?];
    for v in inits {
        operands.push(cx.val(*v)?);
    }
    let body_r = region(yielding(cx, at, body)?);
    let tys = result_types(cx, op);
    cx.m.control(at, "scf.for", &operands, &tys, vec![body_r])
}

pub(crate) fn while_<'c>(
    cx: &mut Lower<'c, '_>,
    at: At<'c, '_>,
    inits: &[ir::Value],
    cond: ir::BlockId,
    body: ir::BlockId,
    op: &ir::Op,
) -> R<Vec<Val<'c>>> {
    let operands = inits.iter().map(|v| cx.val(*v)).collect::<R<Vec<_>>>()?;
    let before = cx.new_block(cond, at.loc);
    let ys = cx.block(cond, &before)?;
    let args: Vec<Val<'c>> = (0..before.argument_count())
        .filter_map(|i| before.argument(i).ok().map(detach))
        .collect();
    let Some(&c) = ys.first() else {
        return Err(cx.invalid("a while condition yields no value", at.src.clone()));
    };
    cx.m.condition(
        At {
            block: &before,
            ..at
        },
        c,
        &args,
    )?;
    let after = region(yielding(cx, at, body)?);
    let tys = result_types(cx, op);
    cx.m.control(
        at,
        "scf.while",
        &operands,
        &tys,
        vec![region(before), after],
    )
}
