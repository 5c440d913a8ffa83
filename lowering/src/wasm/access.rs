//! What a kernel does to its refs, as far as the runtime can use it to skip
//! work that cannot change a result: an input block that nothing writes
//! need not be copied in again for a later grid step that maps to the same
//! block, and an output block that every step overwrites whole before
//! reading it need not be poisoned first.

use pk_lang::ir::{BlockId, Func, Kernel, OpKind, RefId, RefView, Slice, Start};

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
    for (_, op) in f.ops.iter() {
        match &op.kind {
            OpKind::Store(v, _) => written[v.target.index()] = true,
            OpKind::DmaStart { dst, .. } | OpKind::DmaWait { dst, .. } => {
                written[dst.target.index()] = true;
            }
            _ => {}
        }
    }
    let mut filled_first = vec![false; n];
    for (r, _) in k.refs.iter() {
        // A ref that no op touches is (vacuously) never read unwritten.
        let mut filled = true;
        for &op in &f.entry_block().ops {
            let kind = &f.ops[op].kind;
            if let OpKind::Store(v, _) = kind {
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
        OpKind::Load(v) | OpKind::Store(v, _) => v.target == r,
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
