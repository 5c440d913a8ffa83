//! The layout of a Mosaic kernel module, as JAX Pallas lays it out:
//!
//! - one kernel `func.func` whose arguments are the grid indices (`i32`),
//!   then the scalar-prefetch refs (SMEM), then one memref per operand (the
//!   block in VMEM or SMEM, or the whole array; ANY operands are HBM memrefs
//!   reached by DMA), then the scratch buffers and semaphores;
//! - its attributes `dimension_semantics`, `iteration_bounds` (MLIR's
//!   dynamic size for a dynamic grid axis, whose bound the custom call
//!   passes as a leading scalar operand),
//!   `scalar_prefetch`, `scratch_operands`, `tpu.core_type` and
//!   `window_params` (one entry per operand other than prefetch);
//! - one `@transform_N` function per windowed operand `N`, from the grid
//!   indices and prefetch refs to the operand's **block** indices.
//!
//! Squeezed block dimensions stay in the memref as size 1 (Pallas passes the
//! full-rank block and indexes squeezed dimensions at 0); `window_bounds`
//! lists them as 1 too. A whole-array operand in VMEM gets a transform that
//! returns zeros and `pipeline_mode = synchronous` (one buffer: nothing to
//! prefetch), as does a block with `buffered(1)`, and an ANY operand gets an empty window entry and no transform.

use super::body::{dims, Lower, PhysRef, R};
use super::error::SourceLocation;
use super::mlir::{detach, region, At, MemSpace, Mlir, Val};
use melior::ir::attribute::{
    DictionaryAttribute, FlatSymbolRefAttribute, StringAttribute, TypeAttribute,
};
use melior::ir::r#type::FunctionType;
use melior::ir::{Attribute, Block, BlockLike, Identifier, Location, Module, Type};
use pk_lang::ir::{self, BlockDim, Role, Space};
use std::collections::HashMap;

/// Builds the kernel function and its transform functions into `module`.
pub(crate) fn build<'c>(
    m: &Mlir<'c>,
    src: &ir::Module,
    k: &ir::Kernel,
    module: &Module<'c>,
) -> R<()> {
    let (file, line, col) = src.location(k.span);
    let at_src: SourceLocation = (file.clone(), line, col);
    let loc = Location::new(m.ctx, &file, line as usize, col as usize);
    let top = module.body();
    let at = At {
        block: &top,
        loc,
        src: &at_src,
    };
    let layout = Layout::of(m, k);
    kernel_func(m, src, k, &layout, at)?;
    if !k.grid.is_empty() {
        for (n, w) in layout.windows.iter().enumerate() {
            if let Window::Blocked { operand, .. } | Window::Whole { operand, .. } = w {
                transform_func(m, src, k, &layout, *operand, n, at)?;
            }
        }
    }
    Ok(())
}

/// How one operand other than scalar prefetch is windowed.
enum Window {
    Blocked {
        operand: usize,
        bounds: Vec<i64>,
        /// The block's buffer count (`buffered(n)`): 1 is Mosaic's
        /// `synchronous` pipeline mode, 2 its default.
        buffers: u64,
    },
    Whole {
        operand: usize,
        bounds: Vec<i64>,
        vmem: bool,
    },
    Unwindowed,
}

/// The kernel function's arguments, and what each ref is.
struct Layout<'c> {
    args: Vec<Type<'c>>,
    /// For each kernel ref: its argument index, memref shape and squeezed
    /// dimensions.
    refs: Vec<(ir::RefId, usize, Vec<u64>, Vec<bool>)>,
    prefetch: Vec<(ir::RefId, Type<'c>, Vec<u64>)>,
    windows: Vec<Window>,
}

impl<'c> Layout<'c> {
    fn of(m: &Mlir<'c>, k: &ir::Kernel) -> Layout<'c> {
        let i32t = m.int(32);
        let mut l = Layout {
            args: vec![i32t; k.grid.len()],
            refs: Vec::new(),
            prefetch: Vec::new(),
            windows: Vec::new(),
        };
        let add = |l: &mut Layout<'c>,
                   r: ir::RefId,
                   shape: Vec<u64>,
                   squeezed: Vec<bool>,
                   space: Space| {
            let ty = k.ref_type(r);
            let mt = m.memref(&shape, m.storage(ty.dtype), MemSpace::of(space));
            l.refs.push((r, l.args.len(), shape, squeezed));
            l.args.push(mt);
            mt
        };
        for o in k.operands.iter().filter(|o| o.role == Role::Prefetch) {
            let shape = dims(&o.shape);
            let mt = add(
                &mut l,
                o.ref_id,
                shape.clone(),
                vec![false; shape.len()],
                Space::Smem,
            );
            l.prefetch.push((o.ref_id, mt, shape));
        }
        for (i, o) in k
            .operands
            .iter()
            .enumerate()
            .filter(|(_, o)| o.role != Role::Prefetch)
        {
            // HBM operands are never windowed: the kernel sees the whole array.
            let (shape, squeezed) = match o.block.as_ref().filter(|_| o.space != Space::Any) {
                Some(b) => (
                    b.dims.iter().map(|d| d.extent().get()).collect::<Vec<_>>(),
                    b.dims.iter().map(|d| *d == BlockDim::Squeezed).collect(),
                ),
                None => (dims(&o.shape), vec![false; o.shape.len()]),
            };
            let bounds = shape.iter().map(|&d| d as i64).collect();
            l.windows.push(match (&o.block, o.space) {
                (_, Space::Any | Space::Semaphore) => Window::Unwindowed,
                (Some(b), _) => Window::Blocked {
                    operand: i,
                    bounds,
                    buffers: b.buffer_count(),
                },
                (None, space) => Window::Whole {
                    operand: i,
                    bounds,
                    vmem: space == Space::Vmem,
                },
            });
            add(&mut l, o.ref_id, shape, squeezed, o.space);
        }
        for s in &k.scratch {
            let ty = k.ref_type(s.ref_id);
            // The barrier semaphore is not an argument: `tpu.sem_barrier`
            // gives it (see `kernel_func`).
            if ty.space == Space::Barrier {
                continue;
            }
            let shape = dims(&ty.shape);
            add(
                &mut l,
                s.ref_id,
                shape.clone(),
                vec![false; shape.len()],
                ty.space,
            );
        }
        l
    }
}

/// Appends a `func.func` named `name` with body `body` to the module.
fn func<'c>(
    m: &Mlir<'c>,
    at: At<'c, '_>,
    name: &str,
    (args, results): (&[Type<'c>], &[Type<'c>]),
    body: Block<'c>,
    extra: &[(&str, Attribute<'c>)],
) -> R<()> {
    let fty = FunctionType::new(m.ctx, args, results);
    let mut attrs: Vec<(&str, Attribute<'c>)> = vec![
        ("sym_name", StringAttribute::new(m.ctx, name).into()),
        ("function_type", TypeAttribute::new(fty.into()).into()),
    ];
    attrs.extend_from_slice(extra);
    m.op(at, "func.func", &[], &[], &attrs, vec![region(body)])
        .map(drop)
}

fn arg<'c>(b: &Block<'c>, i: usize) -> Option<Val<'c>> {
    b.argument(i).ok().map(detach)
}

fn kernel_func<'c>(
    m: &Mlir<'c>,
    src: &ir::Module,
    k: &ir::Kernel,
    l: &Layout<'c>,
    at: At<'c, '_>,
) -> R<()> {
    let args: Vec<(Type<'c>, Location<'c>)> = l.args.iter().map(|t| (*t, at.loc)).collect();
    let blk = Block::new(&args);
    let mut refs = HashMap::new();
    for (r, i, shape, squeezed) in &l.refs {
        let ty = k.ref_type(*r);
        if let Some(mem) = arg(&blk, *i) {
            refs.insert(
                *r,
                PhysRef {
                    mem,
                    shape: shape.clone(),
                    squeezed: squeezed.clone(),
                    space: ty.space,
                    dtype: ty.dtype,
                },
            );
        }
    }
    for s in &k.scratch {
        let ty = k.ref_type(s.ref_id);
        if ty.space == Space::Barrier {
            let shape = dims(&ty.shape);
            let mt = m.memref(&shape, m.int(32), MemSpace::of(ty.space));
            let mem = m.tpu_sem_barrier(At { block: &blk, ..at }, mt)?;
            refs.insert(
                s.ref_id,
                PhysRef {
                    mem,
                    squeezed: vec![false; shape.len()],
                    shape,
                    space: ty.space,
                    dtype: ty.dtype,
                },
            );
        }
    }
    views(m, k, &mut refs, At { block: &blk, ..at })?;
    let mut cx = Lower {
        m,
        src,
        kernel: k,
        f: &k.body,
        values: HashMap::new(),
        refs,
    };
    if let Some(entry) = k.body.entry {
        cx.block(entry, &blk)?;
    }
    m.terminator(At { block: &blk, ..at }, "func.return", &[])?;

    let sem = k
        .grid
        .iter()
        .map(|a| {
            m.parse_attr(
                &format!("#tpu.dimension_semantics<{}>", a.semantics.name()),
                at.src,
            )
        })
        .collect::<R<Vec<_>>>()?;
    let n_prefetch = l.prefetch.len() as i64;
    let mut attrs = vec![
        ("dimension_semantics", m.array(&sem)),
        ("scalar_prefetch", m.i64_attr(n_prefetch)),
        (
            "scratch_operands",
            m.i64_attr(
                k.scratch
                    .iter()
                    .filter(|s| k.ref_type(s.ref_id).space != Space::Barrier)
                    .count() as i64,
            ),
        ),
        ("tpu.core_type", m.parse_attr("#tpu.core_type<tc>", at.src)?),
    ];
    if !k.grid.is_empty() {
        // A dynamic axis is MLIR's dynamic size, as Pallas writes it; the
        // TPU reads its bound from the custom call's leading operands.
        let bounds: Vec<i64> = k
            .grid
            .iter()
            .map(|a| match a.dynamic {
                Some(_) => i64::MIN,
                None => a.extent.get() as i64,
            })
            .collect();
        attrs.push(("iteration_bounds", m.i64_array(&bounds)));
        let windows = l
            .windows
            .iter()
            .enumerate()
            .map(|(n, w)| window_param(m, n, w, at.src))
            .collect::<R<Vec<_>>>()?;
        attrs.push(("window_params", m.array(&windows)));
    }
    func(m, at, &k.name, (&l.args, &[]), blk, &attrs)
}

fn window_param<'c>(m: &Mlir<'c>, n: usize, w: &Window, at: &SourceLocation) -> R<Attribute<'c>> {
    let mut entries: Vec<(Identifier<'c>, Attribute<'c>)> = Vec::new();
    let mut add = |k: &str, v: Attribute<'c>| entries.push((Identifier::new(m.ctx, k), v));
    match w {
        Window::Unwindowed => {}
        Window::Blocked { bounds, .. } | Window::Whole { bounds, .. } => {
            // One buffer, as Pallas lowers `pl.Buffered(1)` and a VMEM
            // block that is the whole array: `#tpu.pipeline_mode<synchronous>`
            // in the operand's window params. Two is Mosaic's default and
            // needs no attribute.
            if let Window::Whole { vmem: true, .. } | Window::Blocked { buffers: 1, .. } = w {
                add(
                    "pipeline_mode",
                    m.parse_attr("#tpu.pipeline_mode<synchronous>", at)?,
                );
            }
            let sym = FlatSymbolRefAttribute::new(m.ctx, &format!("transform_{n}"));
            add("transform_indices", sym.into());
            add("window_bounds", m.i64_array(bounds));
        }
    }
    Ok(DictionaryAttribute::new(m.ctx, &entries).into())
}

/// The memrefs of the kernel's views (`k.reshape(..)`, `k.bitcast(T)`),
/// made at the top of the body from the memrefs they view, in declaration
/// order (so a view of a view finds its base): a memref with squeezed
/// block dimensions is squeezed to the kernel's shape first, then
/// `tpu.memref_reshape` (same dtype) or `tpu.memref_bitcast` gives the view.
fn views<'c>(
    m: &Mlir<'c>,
    k: &ir::Kernel,
    refs: &mut HashMap<ir::RefId, PhysRef<'c>>,
    at: At<'c, '_>,
) -> R<()> {
    for (id, r) in k.refs.iter() {
        let ir::RefOrigin::View(b) = r.origin else {
            continue;
        };
        let Some(base) = refs.get(&b) else {
            continue;
        };
        let space = MemSpace::of(base.space);
        let mut mem = base.mem;
        if base.squeezed.iter().any(|&s| s) {
            let kept = dims(&k.ref_type(b).shape);
            mem = m.tpu_memref_squeeze(at, mem, m.memref(&kept, m.storage(base.dtype), space))?;
        }
        let shape = dims(&r.ty.shape);
        let ty = m.memref(&shape, m.storage(r.ty.dtype), space);
        let mem = if r.ty.dtype == base.dtype {
            m.tpu_memref_reshape(at, mem, ty)?
        } else {
            m.tpu_memref_bitcast(at, mem, ty)?
        };
        refs.insert(
            id,
            PhysRef {
                mem,
                squeezed: vec![false; shape.len()],
                shape,
                space: r.ty.space,
                dtype: r.ty.dtype,
            },
        );
    }
    Ok(())
}

/// `@transform_N`: the grid indices and prefetch refs to operand `operand`'s
/// block indices; a whole-array operand's block index is always 0.
fn transform_func<'c>(
    m: &Mlir<'c>,
    src: &ir::Module,
    k: &ir::Kernel,
    l: &Layout<'c>,
    operand: usize,
    n: usize,
    at: At<'c, '_>,
) -> R<()> {
    let i32t = m.int(32);
    let mut args: Vec<Type<'c>> = vec![i32t; k.grid.len()];
    args.extend(l.prefetch.iter().map(|(_, t, _)| *t));
    let blk = Block::new(&args.iter().map(|t| (*t, at.loc)).collect::<Vec<_>>());
    let o = &k.operands[operand];
    let inner = At { block: &blk, ..at };
    let yields = match &o.block {
        Some(b) => {
            let mut refs = HashMap::new();
            for (j, (r, _, shape)) in l.prefetch.iter().enumerate() {
                if let Some(mem) = arg(&blk, k.grid.len() + j) {
                    let ty = k.ref_type(*r);
                    refs.insert(
                        *r,
                        PhysRef {
                            mem,
                            shape: shape.clone(),
                            squeezed: vec![false; shape.len()],
                            space: Space::Smem,
                            dtype: ty.dtype,
                        },
                    );
                }
            }
            let mut cx = Lower {
                m,
                src,
                kernel: k,
                f: &b.index_map,
                values: HashMap::new(),
                refs,
            };
            match b.index_map.entry {
                Some(entry) => cx.block(entry, &blk)?,
                None => Vec::new(),
            }
        }
        None => {
            let zero = m.i32_const(inner, 0)?;
            vec![zero; o.shape.len()]
        }
    };
    m.terminator(inner, "func.return", &yields)?;
    let results = vec![i32t; yields.len()];
    func(
        m,
        at,
        &format!("transform_{n}"),
        (&args, &results),
        blk,
        &[],
    )
}
