//! The textual form of Tile IR, printed by `pkc emit ir` and kept as golden
//! files. It is for reading, not parsing back.

use super::*;
use std::fmt::Write;

/// Prints a whole module.
pub fn module(m: &Module) -> String {
    m.kernels.iter().map(kernel).collect::<Vec<_>>().join("\n")
}

/// Prints one kernel specialisation.
pub fn kernel(k: &Kernel) -> String {
    let mut out = String::new();
    let params = k
        .params
        .iter()
        .map(|p| match &p.value {
            ParamValue::Int(v) => format!("{} = {v}", p.name),
            ParamValue::Dtype(d) => format!("{} = {d}", p.name),
            ParamValue::Float(x) => format!("{} = {x:?}", p.name),
            ParamValue::Bool(b) => format!("{} = {b}", p.name),
            ParamValue::None => format!("{} = none", p.name),
            ParamValue::Unbound => p.name.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(out, "kernel {}<{params}>", k.name);
    let grid = k
        .grid
        .iter()
        .map(|a| match &a.dynamic {
            Some(d) => format!(
                "{}: {}[{}] <= {} {}",
                a.name,
                k.operands[d.operand].name,
                d.index
                    .iter()
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                a.extent,
                a.semantics.name()
            ),
            None => format!("{}: {} {}", a.name, a.extent, a.semantics.name()),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(out, "  grid ({grid})");
    if let Some(l) = k.vmem_limit {
        let _ = writeln!(out, "  vmem_limit {l}");
    }
    if !k.mesh.is_empty() {
        let axes: Vec<String> = k
            .mesh
            .iter()
            .map(|a| format!("{}: {}", a.name, a.size))
            .collect();
        let _ = writeln!(out, "  mesh ({})", axes.join(", "));
    }
    if let Some(c) = k.collective_id {
        let _ = writeln!(out, "  collective_id {c}");
    }
    for (i, o) in k.operands.iter().enumerate() {
        let role = match o.role {
            Role::Prefetch => "prefetch",
            Role::Input => "input",
            Role::Output => "output",
        };
        let alias = o
            .aliases
            .map(|a| format!(" aliases operand {a}"))
            .unwrap_or_default();
        let _ = write!(
            out,
            "  {role} {i} {}: {}[{}] as {} {}{alias}",
            o.name,
            o.dtype,
            shape_str(&o.shape),
            ref_name(o.ref_id),
            k.refs[o.ref_id].ty
        );
        match &o.block {
            None => {
                let _ = writeln!(out);
            }
            Some(b) => {
                let dims = b
                    .dims
                    .iter()
                    .map(|d| match d {
                        BlockDim::Squeezed => "_".to_string(),
                        BlockDim::Size(d) => d.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                // Two buffers is the default and prints nothing, so the IR
                // of kernels without `buffered(..)` reads as it always has.
                let buffers = match &b.buffers {
                    Dim::Known(2) => String::new(),
                    n => format!(" buffered({n})"),
                };
                let _ = writeln!(out, " block [{dims}]{buffers}");
                func(&mut out, &b.index_map, k, "index_map", 4);
            }
        }
    }
    for s in &k.scratch {
        let _ = writeln!(
            out,
            "  scratch {}: {} {}",
            s.name,
            ref_name(s.ref_id),
            k.refs[s.ref_id].ty
        );
    }
    func(&mut out, &k.body, k, "body", 2);
    out
}

fn ref_name(r: RefId) -> String {
    format!("&{}", r.index())
}

fn val(v: Value) -> String {
    format!("%{}", v.index())
}

fn vals(vs: &[Value]) -> String {
    vs.iter().map(|v| val(*v)).collect::<Vec<_>>().join(", ")
}

fn func(out: &mut String, f: &Func, k: &Kernel, name: &str, indent: usize) {
    let Some(entry) = f.entry else {
        let _ = writeln!(out, "{:indent$}{name} <missing>", "");
        return;
    };
    let params = typed_params(f, &f.blocks[entry].params);
    let _ = writeln!(out, "{:indent$}{name}({params}) {{", "");
    block_body(out, f, k, entry, indent + 2);
    let _ = writeln!(out, "{:indent$}}}", "");
}

fn typed_params(f: &Func, ps: &[Value]) -> String {
    ps.iter()
        .map(|p| format!("{}: {}", val(*p), f.ty(*p)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn block_body(out: &mut String, f: &Func, k: &Kernel, b: BlockId, indent: usize) {
    for &op in &f.blocks[b].ops {
        op_line(out, f, k, op, indent);
    }
    let ys = &f.blocks[b].yields;
    if !ys.is_empty() {
        let _ = writeln!(out, "{:indent$}yield {}", "", vals(ys));
    }
}

fn start(s: &Start) -> String {
    match s {
        Start::Const(c) => c.to_string(),
        Start::Dyn(v) => val(*v),
    }
}

fn view(v: &RefView) -> String {
    let idx = v
        .index
        .iter()
        .map(|s| match s {
            Slice::Index(st) => start(st),
            Slice::Range { start: st, size } => format!("{}+:{size}", start(st)),
            Slice::Strided {
                start: st,
                size,
                stride,
            } => format!("{}+:{size}:{stride}", start(st)),
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!("{}[{idx}]", ref_name(v.target))
}

fn op_line(out: &mut String, f: &Func, k: &Kernel, op: OpId, indent: usize) {
    let o = &f.ops[op];
    let lhs = if o.results.is_empty() {
        String::new()
    } else {
        let r = o
            .results
            .iter()
            .map(|r| format!("{}: {}", val(*r), f.ty(*r)))
            .collect::<Vec<_>>()
            .join(", ");
        format!("{r} = ")
    };
    let body = match &o.kind {
        OpKind::Const(l) => match l {
            Literal::Int(v) => format!("const {v}"),
            Literal::Float(v) => format!("const {v:?}"),
            Literal::Bool(v) => format!("const {v}"),
        },
        OpKind::Unary(u, a) => format!("{} {}", format!("{u:?}").to_lowercase(), val(*a)),
        OpKind::Binary(b, x, y) => format!(
            "{} {}, {}",
            format!("{b:?}").to_lowercase(),
            val(*x),
            val(*y)
        ),
        OpKind::Compare(c, x, y) => format!(
            "cmp {} {}, {}",
            format!("{c:?}").to_lowercase(),
            val(*x),
            val(*y)
        ),
        OpKind::Select {
            cond,
            on_true,
            on_false,
        } => format!(
            "select {}, {}, {}",
            val(*cond),
            val(*on_true),
            val(*on_false)
        ),
        OpKind::Cast(a) => format!("cast {}", val(*a)),
        OpKind::Bitcast(a) => format!("bitcast {}", val(*a)),
        OpKind::Splat(a) => format!("splat {}", val(*a)),
        OpKind::Broadcast(a) => format!("broadcast {}", val(*a)),
        OpKind::Reshape(a) => format!("reshape {}", val(*a)),
        OpKind::Transpose(a, p) => format!("transpose {} {p:?}", val(*a)),
        OpKind::Concat(vs, axis) => {
            let vs: Vec<String> = vs.iter().map(|v| val(*v)).collect();
            format!("concat [{}] axis {axis}", vs.join(", "))
        }
        OpKind::Slice(a, w) => {
            let w: Vec<String> = w.iter().map(|(s, n)| format!("{s}+:{n}")).collect();
            format!("slice {}[{}]", val(*a), w.join(", "))
        }
        OpKind::Iota { dim } => format!("iota dim {dim}"),
        OpKind::Reduce {
            op,
            value,
            axis,
            keepdims,
        } => format!(
            "reduce {} {} axis {axis}{}",
            format!("{op:?}").to_lowercase(),
            val(*value),
            if *keepdims { " keepdims" } else { "" }
        ),
        OpKind::Dot {
            lhs,
            rhs,
            trans_lhs,
            trans_rhs,
        } => format!(
            "dot {}{}, {}{}",
            val(*lhs),
            if *trans_lhs { "^T" } else { "" },
            val(*rhs),
            if *trans_rhs { "^T" } else { "" }
        ),
        OpKind::Roll { value, shift, axis } => {
            format!("roll {} by {} axis {axis}", val(*value), val(*shift))
        }
        OpKind::AssumeMultiple(x, n) => format!("assume_multiple {} of {n}", val(*x)),
        OpKind::Load(v) => format!("load {}", view(v)),
        OpKind::Store(v, x, None) => format!("store {} -> {}", val(*x), view(v)),
        OpKind::Store(v, x, Some(m)) => {
            format!("store {} -> {} mask {}", val(*x), view(v), val(*m))
        }
        OpKind::DmaStart { src, dst, sem } => {
            format!("dma_start {} -> {} sem {}", view(src), view(dst), view(sem))
        }
        OpKind::DmaWait { src, dst, sem } => {
            format!("dma_wait {} -> {} sem {}", view(src), view(dst), view(sem))
        }
        OpKind::DeviceId => "device_id".to_string(),
        OpKind::RemoteDma {
            phase,
            src,
            dst,
            send_sem,
            recv_sem,
            device,
        } => {
            let p = match phase {
                crate::ir::RemotePhase::Start => "remote_dma_start",
                crate::ir::RemotePhase::WaitSend => "remote_dma_wait_send",
                crate::ir::RemotePhase::WaitRecv => "remote_dma_wait_recv",
            };
            format!(
                "{p} {} -> {} on {} send {} recv {}",
                view(src),
                view(dst),
                val(*device),
                view(send_sem),
                view(recv_sem)
            )
        }
        OpKind::SemSignal { sem, n, device } => match device {
            Some(d) => format!("sem_signal {} by {} on {}", view(sem), val(*n), val(*d)),
            None => format!("sem_signal {} by {}", view(sem), val(*n)),
        },
        OpKind::SemWait { sem, n } => format!("sem_wait {} for {}", view(sem), val(*n)),
        OpKind::SemRead(sem) => format!("sem_read {}", view(sem)),
        OpKind::Print { fmt, args } => {
            let a: Vec<String> = args.iter().map(|v| val(*v)).collect();
            format!("print {fmt:?} {}", a.join(", "))
        }
        OpKind::If {
            cond,
            then_block,
            else_block,
        } => {
            let _ = writeln!(out, "{:indent$}{lhs}if {} {{", "", val(*cond));
            block_body(out, f, k, *then_block, indent + 2);
            let _ = writeln!(out, "{:indent$}}} else {{", "");
            block_body(out, f, k, *else_block, indent + 2);
            let _ = writeln!(out, "{:indent$}}}", "");
            return;
        }
        OpKind::For {
            lo,
            hi,
            step,
            inits,
            body,
        } => {
            let ps = &f.blocks[*body].params;
            let _ = writeln!(
                out,
                "{:indent$}{lhs}for ({}) in {}..{} step {step} init ({}) {{",
                "",
                typed_params(f, ps),
                val(*lo),
                val(*hi),
                vals(inits)
            );
            block_body(out, f, k, *body, indent + 2);
            let _ = writeln!(out, "{:indent$}}}", "");
            return;
        }
        OpKind::While { inits, cond, body } => {
            let _ = writeln!(
                out,
                "{:indent$}{lhs}while init ({}) cond ({}) {{",
                "",
                vals(inits),
                typed_params(f, &f.blocks[*cond].params)
            );
            block_body(out, f, k, *cond, indent + 2);
            let _ = writeln!(
                out,
                "{:indent$}}} do ({}) {{",
                "",
                typed_params(f, &f.blocks[*body].params)
            );
            block_body(out, f, k, *body, indent + 2);
            let _ = writeln!(out, "{:indent$}}}", "");
            return;
        }
    };
    let _ = writeln!(out, "{:indent$}{lhs}{body}", "");
}
