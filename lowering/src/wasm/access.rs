//! What a kernel does to its refs, as far as the runtime can use it to skip
//! work that cannot change a result: an input block that nothing writes
//! need not be copied in again for a later grid step that maps to the same
//! block, and an output block that every step overwrites whole before
//! reading it need not be poisoned first; and an input block that only the
//! MXU reads, whole, need not be copied into VMEM at all (the MXU can read
//! it from the array).

use super::plan::{GroupKind, Plan};
use pk_lang::ir::{BlockId, Func, Kernel, OpKind, RefId, RefOrigin, RefView, Slice, Space, Start};

/// Per ref, in declaration order.
pub(crate) struct Access {
    /// Some op stores to the ref or makes it a DMA destination.
    pub written: Vec<bool>,
    /// No op touches the ref, or the body's first op that does (outside
    /// any `if` or loop) stores to the whole of it: each grid step writes
    /// every element before it can read one.
    pub filled_first: Vec<bool>,
}

pub(crate) fn analyse(k: &Kernel) -> Access {
    let f = &k.body;
    let n = k.refs.iter().count();
    let mut written = vec![false; n];
    // A write through a view writes the memory of its root, and so every
    // view of that root.
    for (_, op) in f.ops.iter() {
        match &op.kind {
            OpKind::Store(v, _, _) => written[k.root(v.target).index()] = true,
            OpKind::DmaStart { dst, .. } | OpKind::DmaWait { dst, .. } => {
                written[k.root(dst.target).index()] = true;
            }
            _ => {}
        }
    }
    for (r, _) in k.refs.iter() {
        written[r.index()] = written[k.root(r).index()];
    }
    let mut filled_first = vec![false; n];
    for (r, _) in k.refs.iter() {
        // Memory seen through views is not tracked here: it is poisoned
        // and copied as if read before written.
        if aliased(k, r) {
            continue;
        }
        // A ref that no op touches is (vacuously) never read unwritten.
        let mut filled = true;
        for &op in &f.entry_block().ops {
            let kind = &f.ops[op].kind;
            // A masked store may leave elements unwritten, so only an
            // unmasked one fills the ref.
            if let OpKind::Store(v, _, None) = kind {
                if v.target == r && whole(k, v) {
                    break;
                }
            }
            if touches(f, kind, r) {
                filled = false;
                break;
            }
        }
        filled_first[r.index()] = filled;
    }
    Access {
        written,
        filled_first,
    }
}

/// Per VMEM ref, whether only the MXU reads it: every op that touches the
/// ref is a load of the whole ref that the plan reads in place (a view) and
/// whose value nothing but `dot` uses. Vacuously true for a VMEM ref no op
/// touches; false for SMEM refs, which index maps may read too.
pub(crate) fn mxu_only(k: &Kernel, plan: &Plan) -> Vec<bool> {
    let f = &k.body;
    let mut only: Vec<bool> = k
        .refs
        .iter()
        .map(|(id, r)| r.ty.space == Space::Vmem && !aliased(k, id))
        .collect();
    for (_, op) in f.ops.iter() {
        let view = match &op.kind {
            OpKind::Load(v) => v,
            OpKind::Store(v, _, _) => {
                only[v.target.index()] = false;
                continue;
            }
            OpKind::DmaStart { src, dst, sem } | OpKind::DmaWait { src, dst, sem } => {
                for v in [src, dst, sem] {
                    only[v.target.index()] = false;
                }
                continue;
            }
            _ => continue,
        };
        let Some(&r) = op.results.first() else {
            only[view.target.index()] = false;
            continue;
        };
        let in_place = plan
            .group(r)
            .is_some_and(|g| matches!(plan.groups[g as usize].kind, GroupKind::View { .. }));
        let dot_users = f
            .ops
            .iter()
            .all(|(_, u)| !u.kind.operands().contains(&r) || matches!(u.kind, OpKind::Dot { .. }));
        let yielded = f.blocks.iter().any(|(_, b)| b.yields.contains(&r));
        if !(in_place && dot_users && !yielded && whole(k, view)) {
            only[view.target.index()] = false;
        }
    }
    only
}

/// Whether `r` is a view or has views: its memory is reached by more than
/// one ref.
fn aliased(k: &Kernel, r: RefId) -> bool {
    k.refs.iter().any(|(id, d)| {
        id == r && matches!(d.origin, RefOrigin::View(_)) || id != r && k.root(id) == r
    })
}

/// Whether a view is the whole ref.
fn whole(k: &Kernel, v: &RefView) -> bool {
    let shape = &k.ref_type(v.target).shape;
    v.index.iter().zip(shape).all(|(s, d)| match s {
        Slice::Range {
            start: Start::Const(0),
            size,
        } => *size == d.get(),
        Slice::Index(Start::Const(0)) => d.get() == 1,
        _ => false,
    })
}

/// Whether an op (with its blocks) reads or writes ref `r`.
fn touches(f: &Func, kind: &OpKind, r: RefId) -> bool {
    let direct = match kind {
        OpKind::Load(v) | OpKind::Store(v, _, _) => v.target == r,
        OpKind::DmaStart { src, dst, sem } | OpKind::DmaWait { src, dst, sem } => {
            [src, dst, sem].iter().any(|v| v.target == r)
        }
        _ => false,
    };
    direct || kind.blocks().iter().any(|&b| block_touches(f, b, r))
}

fn block_touches(f: &Func, b: BlockId, r: RefId) -> bool {
    f.blocks[b]
        .ops
        .iter()
        .any(|&op| touches(f, &f.ops[op].kind, r))
}
