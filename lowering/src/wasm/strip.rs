//! Row strips: a run of row-local ops over tall tiles is computed a few
//! rows at a time.
//!
//! The CPU reference gives every tile that is not fused into its reader a
//! buffer of the whole block, and each op is one pass over its buffers. A
//! body that streams a large block through elementwise ops and row
//! reductions (cross-entropy, softmax, norms) thus makes several passes
//! over temporaries of the block's size; once a block is larger than the
//! core's L2 cache (256 x 2048 f32 is 2 MiB), every pass goes to memory.
//! Rows of such a run never meet: row `i` of each op's result reads only
//! row `i` of its operands (and tiles of one row, scalars). So the run is
//! wrapped in a loop over strips of `r` rows, with tiles of `r` rows, and
//! its temporaries stay in cache. Results are the same bits: each element
//! and each row's reduction is computed by the same operations in the same
//! order.
//!
//! A run is a maximal sequence of entry-block ops that are either *strip*
//! ops (elementwise ops, splats, constants, iotas, broadcasts, reductions
//! along the last axis, and loads and stores of whole rows of a ref, on
//! rank-2 tiles of `R` rows) or *invariant* ops (pure ops that read no
//! tile of the run, hoisted before the loop). Tiles of the run are read
//! only inside it; a loaded tile that is also read after the run, or was
//! loaded before it, is loaded again strip by strip when nothing in
//! between stores to its ref.
//!
//! invariant: the rewritten kernel verifies, and each grid step reads and
//! writes every ref element it did before, with the same values.

use pk_lang::ir::{
    BlockId, DType, Func, Kernel, Literal, OpId, OpKind, RefId, RefOrigin, RefView, Slice, Start,
    Type, Value, ValueDef,
};

/// Strips aim at this many bytes per tile (the widest tile of the run), so
/// that the handful of temporaries a run has fit in L2 next to each other.
const STRIP_BYTES: u64 = 64 * 1024;

/// Runs whose widest tile is smaller than this are left whole: they fit in
/// cache already.
const MIN_TILE_BYTES: u64 = 256 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Row-local on tiles of this many rows.
    Strip(u64),
    /// Pure, reads no tile of a run: can be hoisted.
    Inv,
    Stop,
}

/// The kernel with its row-local runs in strips, or `None` when it has
/// none worth it.
pub(crate) fn rows(k: &Kernel) -> Option<Kernel> {
    let f = &k.body;
    let entry = f.entry?;
    let ops = f.blocks[entry].ops.clone();
    let n = ops.len();
    let pos_of = top_positions(f, entry);
    // Top-level positions where each value is read (an op's nested blocks
    // count as the op).
    let mut uses: Vec<Vec<usize>> = vec![Vec::new(); f.values.len()];
    for (id, op) in f.ops.iter() {
        if let Some(p) = pos_of[id.index()] {
            for v in op.kind.operands() {
                uses[v.index()].push(p);
            }
            for b in op.kind.blocks() {
                for &y in &f.blocks[b].yields {
                    uses[y.index()].push(p);
                }
            }
        }
    }
    let mut class: Vec<Class> = ops.iter().map(|&op| classify(k, f, op)).collect();
    // Runs shrink until every op of every run keeps the rules.
    let runs = loop {
        let runs = form_runs(&class);
        let mut changed = false;
        for &(a, b, rows) in &runs {
            for j in a..b {
                if class[j] == Class::Stop {
                    continue;
                }
                if !keeps_rules(k, f, &ops, &class, &uses, (a, b, rows), j) {
                    class[j] = Class::Stop;
                    changed = true;
                }
            }
        }
        if !changed {
            break runs;
        }
    };
    let plans: Vec<(usize, usize, u64, u64)> = runs
        .into_iter()
        .filter_map(|(a, b, rows)| {
            // Worth it when the loop computes something: not for a run of
            // loads that stay whole and stores alone.
            let computes = (a..b).any(|j| {
                matches!(class[j], Class::Strip(_))
                    && !matches!(f.ops[ops[j]].kind, OpKind::Load(_) | OpKind::Store(..))
            });
            let widest = (a..b)
                .filter(|&j| matches!(class[j], Class::Strip(_)) && computes)
                .map(|j| tile_cols(f, ops[j]))
                .max()?;
            let strip = strip_rows(rows, widest)?;
            (rows * widest * 4 >= MIN_TILE_BYTES).then_some((a, b, rows, strip))
        })
        .collect();
    if plans.is_empty() {
        return None;
    }
    let mut out = k.clone();
    let g = &mut out.body;
    g.blocks[entry].ops.clear();
    let mut next = 0;
    for (a, b, rows, strip) in plans {
        for &op in &ops[next..a] {
            g.blocks[entry].ops.push(op);
        }
        rewrite_run(k, g, entry, &ops, &class, &uses, (a, b, rows), strip);
        next = b;
    }
    for &op in &ops[next..n] {
        g.blocks[entry].ops.push(op);
    }
    pk_lang::ir::verify::verify_kernel(&out, true).ok()?;
    Some(out)
}

/// The entry-block position of each op's top-level ancestor.
fn top_positions(f: &Func, entry: BlockId) -> Vec<Option<usize>> {
    fn mark(f: &Func, b: BlockId, p: usize, out: &mut Vec<Option<usize>>) {
        for &op in &f.blocks[b].ops {
            out[op.index()] = Some(p);
            for inner in f.ops[op].kind.blocks() {
                mark(f, inner, p, out);
            }
        }
    }
    let mut out = vec![None; f.ops.len()];
    for (p, &op) in f.blocks[entry].ops.iter().enumerate() {
        out[op.index()] = Some(p);
        for b in f.ops[op].kind.blocks() {
            mark(f, b, p, &mut out);
        }
    }
    out
}

/// The rows of a rank-2 tile type (at least 2), else `None`.
fn tall_rows(t: &Type) -> Option<u64> {
    match t.shape() {
        [r, _] if r.get() >= 2 => Some(r.get()),
        _ => None,
    }
}

fn is_tall(f: &Func, v: Value, rows: u64) -> bool {
    tall_rows(f.ty(v)) == Some(rows)
}

/// The columns of the tile an op makes or stores.
fn tile_cols(f: &Func, op: OpId) -> u64 {
    let v = match &f.ops[op].kind {
        OpKind::Store(_, x, _) => Some(*x),
        _ => f.ops[op].results.first().copied(),
    };
    v.and_then(|v| f.ty(v).shape().get(1).map(|d| d.get()))
        .unwrap_or(1)
}

/// The largest divisor of `rows` below it whose strip of the widest tile
/// stays within [`STRIP_BYTES`].
fn strip_rows(rows: u64, widest: u64) -> Option<u64> {
    let most = (STRIP_BYTES / (widest * 4).max(1)).clamp(1, rows / 2);
    (1..=most).rev().find(|d| rows.is_multiple_of(*d))
}

/// Whether a ref's memory is reached through no other ref.
fn unaliased(k: &Kernel, r: RefId) -> bool {
    !matches!(k.refs[r].origin, RefOrigin::View(_))
        && !k.refs.iter().any(|(id, _)| id != r && k.root(id) == r)
}

/// The position in `view.index` of the window's first kept dimension,
/// when it is a range of `rows` positions from a constant start.
fn row_dim(view: &RefView, rows: u64) -> Option<usize> {
    let d = view
        .index
        .iter()
        .position(|s| !matches!(s, Slice::Index(_)))?;
    match view.index[d] {
        Slice::Range {
            start: Start::Const(_),
            size,
        } if size == rows => Some(d),
        _ => None,
    }
}

/// The constant first row of a view's row window.
fn row_start(view: &RefView, rows: u64) -> Option<u64> {
    let d = row_dim(view, rows)?;
    match view.index[d] {
        Slice::Range {
            start: Start::Const(c),
            ..
        } => Some(c),
        _ => None,
    }
}

/// A load or store view that strips can take: whole rows of a ref that
/// no other ref aliases, in 32-bit or narrower lanes of a known layout.
fn strip_view(k: &Kernel, view: &RefView, rows: u64) -> bool {
    unaliased(k, view.target) && row_dim(view, rows).is_some()
}

fn classify(k: &Kernel, f: &Func, op: OpId) -> Class {
    let o = &f.ops[op];
    let result = o.results.first().map(|&r| f.ty(r));
    match &o.kind {
        OpKind::Store(view, x, _) => match tall_rows(f.ty(*x)) {
            Some(rows) if strip_view(k, view, rows) => Class::Strip(rows),
            _ => Class::Stop,
        },
        OpKind::Load(view) => match result.and_then(tall_rows) {
            Some(rows) if strip_view(k, view, rows) => Class::Strip(rows),
            _ => Class::Stop,
        },
        OpKind::Const(_)
        | OpKind::Splat(_)
        | OpKind::Iota { .. }
        | OpKind::Unary(..)
        | OpKind::Binary(..)
        | OpKind::Compare(..)
        | OpKind::Select { .. }
        | OpKind::Cast(_)
        | OpKind::Bitcast(_)
        | OpKind::Broadcast(_) => match result.and_then(tall_rows) {
            Some(rows) => Class::Strip(rows),
            None => Class::Inv,
        },
        OpKind::Reduce {
            value,
            axis,
            keepdims,
            ..
        } => match tall_rows(f.ty(*value)) {
            Some(rows) if *axis == 1 && *keepdims => Class::Strip(rows),
            Some(_) => Class::Stop,
            None => Class::Inv,
        },
        OpKind::Reshape(_)
        | OpKind::Transpose(..)
        | OpKind::Slice(..)
        | OpKind::Concat(..)
        | OpKind::Roll { .. } => Class::Inv,
        _ => Class::Stop,
    }
}

/// Maximal runs `(start, end, rows)` of strip and invariant ops holding at
/// least one strip op, all of one row count.
fn form_runs(class: &[Class]) -> Vec<(usize, usize, u64)> {
    let mut runs = Vec::new();
    let mut start = 0;
    let mut rows: Option<u64> = None;
    let close = |runs: &mut Vec<_>, a: usize, b: usize, rows: Option<u64>| {
        if let Some(r) = rows {
            runs.push((a, b, r));
        }
    };
    for (j, c) in class.iter().enumerate() {
        match *c {
            Class::Stop => {
                close(&mut runs, start, j, rows);
                start = j + 1;
                rows = None;
            }
            Class::Inv => {}
            Class::Strip(r) => match rows {
                Some(have) if have != r => {
                    close(&mut runs, start, j, rows);
                    start = j;
                    rows = Some(r);
                }
                _ => rows = Some(r),
            },
        }
    }
    close(&mut runs, start, class.len(), rows);
    runs
}

/// The ref a load op reads, when `v` is its result.
fn loaded_ref(f: &Func, v: Value) -> Option<(OpId, &RefView)> {
    let ValueDef::Result(op, _) = f.values[v].def else {
        return None;
    };
    match &f.ops[op].kind {
        OpKind::Load(view) => Some((op, view)),
        _ => None,
    }
}

/// Whether an op (with its blocks) can write the memory of ref `r`.
fn writes(k: &Kernel, f: &Func, op: OpId, r: RefId) -> bool {
    let root = k.root(r);
    let direct = match &f.ops[op].kind {
        OpKind::Store(v, _, _) => k.root(v.target) == root,
        OpKind::DmaStart { dst, .. } | OpKind::DmaWait { dst, .. } => k.root(dst.target) == root,
        _ => false,
    };
    direct
        || f.ops[op]
            .kind
            .blocks()
            .iter()
            .any(|&b| f.blocks[b].ops.iter().any(|&o| writes(k, f, o, r)))
}

/// Whether the load that made `v` (at top-level position `p`) can be read
/// again strip by strip inside run `(a, b)`: nothing from just after it to
/// the end of the run writes its ref.
fn reloadable(
    k: &Kernel,
    f: &Func,
    ops: &[OpId],
    v: Value,
    p: usize,
    (a, b, rows): (usize, usize, u64),
) -> bool {
    let Some((_, view)) = loaded_ref(f, v) else {
        return false;
    };
    strip_view(k, view, rows)
        && is_tall(f, v, rows)
        && ops[(p + 1).min(a)..b]
            .iter()
            .all(|&o| !writes(k, f, o, view.target))
}

#[allow(clippy::too_many_arguments)]
fn keeps_rules(
    k: &Kernel,
    f: &Func,
    ops: &[OpId],
    class: &[Class],
    uses: &[Vec<usize>],
    run: (usize, usize, u64),
    j: usize,
) -> bool {
    let (a, b, rows) = run;
    let op = ops[j];
    let o = &f.ops[op];
    let pos_of = |v: Value| -> Option<usize> {
        match f.values[v].def {
            ValueDef::Result(d, _) => ops.iter().position(|&x| x == d),
            ValueDef::Param(..) => None,
        }
    };
    // A ref that the run stores to is accessed at one row offset only, so
    // that row `i` of every access is the same memory row.
    if let OpKind::Load(view) | OpKind::Store(view, _, _) = &o.kind {
        let stored = ops[a..b].iter().any(|&x| writes(k, f, x, view.target));
        let same = ops[a..b].iter().all(|&x| match &f.ops[x].kind {
            OpKind::Load(w) | OpKind::Store(w, _, _) if w.target == view.target => {
                row_start(w, rows).is_some() && row_start(w, rows) == row_start(view, rows)
            }
            _ => true,
        });
        if stored && !same {
            return false;
        }
    }
    let in_run_strip = |p: Option<usize>| {
        p.is_some_and(|p| (a..b).contains(&p) && matches!(class[p], Class::Strip(_)))
    };
    match class[j] {
        Class::Inv => {
            // Hoisted before the loop: it may read no tile of the run.
            o.kind.operands().iter().all(|&v| !in_run_strip(pos_of(v)))
        }
        Class::Strip(_) => {
            for v in o.kind.operands() {
                if !is_tall(f, v, rows) {
                    continue;
                }
                let p = pos_of(v);
                if in_run_strip(p) {
                    continue;
                }
                // A tile loaded before the run is loaded again per strip.
                match p {
                    Some(p) if p < j && reloadable(k, f, ops, v, p, run) => {}
                    _ => return false,
                }
            }
            let is_load = matches!(o.kind, OpKind::Load(_));
            for &r in &o.results {
                let outside = uses[r.index()]
                    .iter()
                    .any(|&u| !(a..b).contains(&u) || !matches!(class[u], Class::Strip(_)));
                // A loaded tile read after the run stays whole too.
                if outside && !(is_load && reloadable(k, f, ops, r, j, run)) {
                    return false;
                }
            }
            true
        }
        Class::Stop => true,
    }
}

/// Replaces the entry block's ops `a..b` by the hoisted ops and a loop
/// over strips of `strip` rows of the strip ops.
#[allow(clippy::too_many_arguments)]
fn rewrite_run(
    k: &Kernel,
    g: &mut Func,
    entry: BlockId,
    ops: &[OpId],
    class: &[Class],
    uses: &[Vec<usize>],
    (a, b, rows): (usize, usize, u64),
    strip: u64,
) {
    let in_run = |p: usize| (a..b).contains(&p) && matches!(class[p], Class::Strip(_));
    // Hoisted: invariant ops, and loads whose tile is also read outside.
    let mut whole_loads: Vec<Value> = Vec::new();
    for (j, &op) in ops.iter().enumerate().take(b).skip(a) {
        match class[j] {
            Class::Inv => g.blocks[entry].ops.push(op),
            Class::Strip(_) if matches!(g.ops[op].kind, OpKind::Load(_)) => {
                let r = g.ops[op].results[0];
                if uses[r.index()].iter().any(|&u| !in_run(u)) {
                    g.blocks[entry].ops.push(op);
                    whole_loads.push(r);
                }
            }
            _ => {}
        }
    }
    let span = g.span(ops[a]);
    let i32t = Type::Scalar(DType::I32);
    let lo = g.push1(entry, OpKind::Const(Literal::Int(0)), i32t.clone(), span);
    let hi = g.push1(
        entry,
        OpKind::Const(Literal::Int(rows as i64)),
        i32t.clone(),
        span,
    );
    let body = g.new_block(std::slice::from_ref(&i32t));
    let iv = g.blocks[body].params[0];
    // Tiles read whole outside the loop -> their strip in the loop.
    let mut again: std::collections::HashMap<Value, Value> = Default::default();
    let shrink = |g: &mut Func, v: Value| {
        if let Type::Vector(d, s) = g.ty(v).clone() {
            if s.first().map(|x| x.get()) == Some(rows) {
                let mut s = s;
                s[0] = pk_lang::ir::Dim::Known(strip as i64);
                g.values[v].ty = Type::Vector(d, s);
            }
        }
    };
    for (j, &op) in ops.iter().enumerate().take(b).skip(a) {
        if !matches!(class[j], Class::Strip(_)) {
            continue;
        }
        let span = g.span(op);
        // Operands that are whole tiles: their strips, loaded again.
        let mut kind = g.ops[op].kind.clone();
        for v in kind.operands() {
            if !is_tall(&k.body, v, rows) || again.contains_key(&v) {
                continue;
            }
            let def_in_run = match k.body.values[v].def {
                ValueDef::Result(d, _) => ops
                    .iter()
                    .position(|&x| x == d)
                    .is_some_and(|p| in_run(p) && !whole_loads.contains(&v)),
                ValueDef::Param(..) => false,
            };
            if def_in_run {
                continue;
            }
            let Some((_, view)) = loaded_ref(&k.body, v) else {
                continue;
            };
            let view = strip_view_at(g, body, view, rows, strip, iv, span);
            let mut t = k.body.ty(v).clone();
            if let Type::Vector(_, s) = &mut t {
                s[0] = pk_lang::ir::Dim::Known(strip as i64);
            }
            let nv = g.push1(body, OpKind::Load(view), t, span);
            again.insert(v, nv);
        }
        map_operands(&mut kind, &|v| again.get(&v).copied().unwrap_or(v));
        let r0 = g.ops[op].results.first().copied();
        if let Some(r) = r0 {
            if whole_loads.contains(&r) {
                // Hoisted whole; its strips are loaded where they are read.
                continue;
            }
        }
        match &mut kind {
            OpKind::Load(view) | OpKind::Store(view, _, _) => {
                *view = strip_view_at(g, body, view, rows, strip, iv, span);
            }
            OpKind::Iota { dim: 0 } => {
                // Row indices count from the strip's first row.
                let r = r0.expect("iota has a result");
                shrink(g, r);
                let t = g.ty(r).clone();
                let local = g.push1(body, OpKind::Iota { dim: 0 }, t.clone(), span);
                let first = g.push1(body, OpKind::Splat(iv), t, span);
                kind = OpKind::Binary(pk_lang::ir::BinaryOp::Add, local, first);
            }
            _ => {}
        }
        for r in g.ops[op].results.clone() {
            shrink(g, r);
        }
        g.ops[op].kind = kind;
        g.blocks[body].ops.push(op);
    }
    g.push(
        entry,
        OpKind::For {
            lo,
            hi,
            step: strip,
            inits: Vec::new(),
            body,
        },
        &[],
        span,
    );
}

/// `view` with its row window `[c, c + rows)` narrowed to the strip
/// `[c + iv, c + iv + strip)`.
fn strip_view_at(
    g: &mut Func,
    body: BlockId,
    view: &RefView,
    rows: u64,
    strip: u64,
    iv: Value,
    span: pk_lang::span::Span,
) -> RefView {
    let mut view = view.clone();
    let d = row_dim(&view, rows).expect("a strip view has a row window");
    let Slice::Range {
        start: Start::Const(c),
        ..
    } = view.index[d]
    else {
        unreachable!("row_dim checked the window")
    };
    let i32t = Type::Scalar(DType::I32);
    let start = if c == 0 {
        iv
    } else {
        let c = g.push1(
            body,
            OpKind::Const(Literal::Int(c as i64)),
            i32t.clone(),
            span,
        );
        g.push1(
            body,
            OpKind::Binary(pk_lang::ir::BinaryOp::Add, iv, c),
            i32t,
            span,
        )
    };
    view.index[d] = Slice::Range {
        start: Start::Dyn(start),
        size: strip,
    };
    view
}

/// Rewrites the tile operands of a strip op.
fn map_operands(kind: &mut OpKind, m: &dyn Fn(Value) -> Value) {
    match kind {
        OpKind::Unary(_, a)
        | OpKind::Cast(a)
        | OpKind::Bitcast(a)
        | OpKind::Splat(a)
        | OpKind::Broadcast(a) => *a = m(*a),
        OpKind::Binary(_, x, y) | OpKind::Compare(_, x, y) => {
            *x = m(*x);
            *y = m(*y);
        }
        OpKind::Select {
            cond,
            on_true,
            on_false,
        } => {
            *cond = m(*cond);
            *on_true = m(*on_true);
            *on_false = m(*on_false);
        }
        OpKind::Reduce { value, .. } => *value = m(*value),
        OpKind::Store(_, x, mask) => {
            *x = m(*x);
            if let Some(mk) = mask {
                *mk = m(*mk);
            }
        }
        _ => {}
    }
}
