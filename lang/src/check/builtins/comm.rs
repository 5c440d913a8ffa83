//! Builtins of kernels that talk to other devices of their mesh: device ids
//! (`device_id`, `mesh_size`), remote copies (`remote_copy_start`,
//! `remote_wait_send`, `remote_wait_recv`) and plain semaphores
//! (`sem_signal`, `sem_wait`, `sem_read`).
//!
//! Device ids are logical: row-major over the mesh axes, as JAX numbers the
//! devices of a `shard_map` mesh. `device_id(c0, c1, ..)` is the id of the
//! device at those coordinates (one per axis), `device_id()` this device's.

use super::{window_parts, Args};
use crate::ast::{BinOp as AstBin, Expr};
use crate::check::builder::{Builder, Mode};
use crate::check::value::Val;
use crate::diag::{codes, Diag};
use crate::ir::{DType, Dim, OpKind, RefView, RemotePhase, Slice, Space, Type, Value};
use crate::span::Span;

impl Builder<'_, '_> {
    /// Reports a communicating builtin outside a kernel with a mesh, or
    /// outside a body (index maps may read coordinates only).
    fn need_mesh(&mut self, name: &str, span: Span, body_only: bool) -> bool {
        if self.mesh.is_empty() {
            self.error(
                Diag::new(
                    &codes::MESH,
                    format!("`{name}` in a kernel without a mesh"),
                    span,
                )
                .label("this talks about other devices")
                .help(
                    "declare the devices the kernel runs on: `mesh (x in n)` after the signature",
                ),
            );
            return false;
        }
        if body_only && self.mode != Mode::Body || self.mode == Mode::Const {
            self.error(
                Diag::new(
                    &codes::DMA_SPACES,
                    format!("`{name}` is only allowed in kernel bodies"),
                    span,
                )
                .label("not here"),
            );
            return false;
        }
        true
    }

    /// `mesh_size(axis)`: the number of devices along a mesh axis (its
    /// index, or its name's position), a compile-time integer.
    pub(super) fn mesh_size(&mut self, a: &Args, span: Span) -> Val {
        if self.mesh.is_empty() {
            return self.error(
                Diag::new(&codes::MESH, "`mesh_size` in a kernel without a mesh", span)
                    .label("no mesh axes")
                    .help("declare the devices the kernel runs on: `mesh (x in n)` after the signature"),
            );
        }
        let Some(axis) = self.const_int(a.pos[0], "a mesh axis") else {
            return Val::Err;
        };
        match usize::try_from(axis).ok().and_then(|i| self.mesh.get(i)) {
            Some(m) => Val::Int(m.size.clone()),
            None => {
                let n = self.mesh.len();
                self.error(
                    Diag::new(
                        &codes::BAD_AXIS,
                        format!("mesh axis {axis} of a mesh of {n} axes"),
                        a.pos[0].span,
                    )
                    .label(format!("axes are 0..{n}")),
                )
            }
        }
    }

    /// `device_id()` or `device_id(c0, c1, ..)`: a logical device id.
    pub(super) fn device_id(&mut self, a: &Args, span: Span) -> Val {
        if !self.need_mesh("device_id", span, false) {
            return Val::Err;
        }
        if a.pos.is_empty() {
            return self.emit(OpKind::DeviceId, Type::Scalar(DType::I32), span);
        }
        let n = self.mesh.len();
        if a.pos.len() != n {
            return self.error(
                Diag::new(
                    &codes::ARITY,
                    format!(
                        "`device_id` takes one coordinate per mesh axis: {n}, {} given",
                        a.pos.len()
                    ),
                    span,
                )
                .label("coordinates")
                .help(format!(
                    "the mesh is ({}); `device_id()` is this device",
                    self.mesh
                        .iter()
                        .map(|m| format!("{} in {}", m.name, m.size))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            );
        }
        let mut id = Val::Int(Dim::Known(0));
        for (i, e) in a.pos.iter().enumerate() {
            let c = self.expr(e);
            let size = self.mesh[i].size.clone();
            if let (Val::Int(Dim::Known(v)), Some(s)) = (&c, size.known()) {
                if *v < 0 || *v >= s {
                    let name = self.mesh[i].name.clone();
                    return self.error(
                        Diag::new(
                            &codes::DEVICE_RANGE,
                            format!("coordinate {v} is outside mesh axis `{name}`"),
                            e.span,
                        )
                        .label(format!("`{name}` has devices 0..{s}"))
                        .help(format!("wrap ring neighbours: `({name} + 1) % {s}`")),
                    );
                }
            }
            let stride: i64 = self.mesh[i + 1..]
                .iter()
                .map(|m| self.int_value(&m.size).max(1))
                .product();
            let term = self.binary(
                AstBin::Mul,
                c,
                e.span,
                Val::Int(Dim::Known(stride)),
                e.span,
                e.span,
            );
            id = self.binary(AstBin::Add, id, span, term, e.span, span);
        }
        id
    }

    /// A device-id argument: a scalar i32, provably in range when constant.
    fn device_arg(&mut self, e: &Expr) -> Option<Value> {
        let v = self.expr(e);
        if let (Val::Int(Dim::Known(d)), Some(n)) = (&v, self.devices()) {
            if *d < 0 || *d as u64 >= n {
                self.error(
                    Diag::new(&codes::DEVICE_RANGE, format!("device {d} is outside the mesh"), e.span)
                        .label(format!("the mesh has devices 0..{n}"))
                        .help("name a device by its coordinates, wrapped: `device_id((x + 1) % mesh_size(0))`"),
                );
                return None;
            }
        }
        let x = self.value_as(v, DType::I32, e.span)?;
        if !self.ty(x).is_scalar() {
            self.error(
                Diag::new(&codes::TYPE_MISMATCH, "a device id is a scalar i32", e.span)
                    .label("not a scalar"),
            );
            return None;
        }
        Some(x)
    }

    fn devices(&self) -> Option<u64> {
        self.mesh.iter().try_fold(1u64, |acc, m| {
            m.size.known().map(|s| acc.saturating_mul(s.max(0) as u64))
        })
    }

    /// A scalar i32 count argument.
    fn count_arg(&mut self, e: &Expr) -> Option<Value> {
        let v = self.expr(e);
        let x = self.value_as(v, DType::I32, e.span)?;
        if !self.ty(x).is_scalar() {
            self.error(
                Diag::new(
                    &codes::TYPE_MISMATCH,
                    "a semaphore count is a scalar i32",
                    e.span,
                )
                .label("not a scalar"),
            );
            return None;
        }
        Some(x)
    }

    /// One semaphore of one of the kinds `kinds` (PK0362 for another kind).
    fn one_sem(&mut self, e: &Expr, kinds: &[Space], what: &str) -> Option<RefView> {
        let (base, idx) = window_parts(e);
        match self.expr(base) {
            Val::Ref(_) | Val::View(_) => {}
            Val::Err => return None,
            other => {
                let d = self.describe(&other);
                self.error(
                    Diag::new(
                        &codes::SEM_KIND,
                        format!("{what} must be a semaphore; this is {d}"),
                        e.span,
                    )
                    .label("not a semaphore")
                    .help("declare semaphores in `scratch (s: sem, d: dma_sem[2])`"),
                );
                return None;
            }
        }
        let (mut view, ty) = self.ref_view(base, idx, e.span)?;
        let space = self.refs[view.target].ty.space;
        if !kinds.contains(&space) {
            let want: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
            self.error(
                Diag::new(&codes::SEM_KIND, format!("{what} must be a `{}` semaphore", want.join("` or `")), e.span)
                    .label(format!("this is in {}", space.name()))
                    .help(if kinds.contains(&Space::Semaphore) {
                        "copies signal DMA semaphores: `scratch (send: dma_sem, recv: dma_sem)`"
                    } else {
                        "signals and waits by count take plain semaphores: `scratch (s: sem)`, or the `barrier_sem`"
                    }),
            );
            return None;
        }
        if idx.is_empty() && ty.elements() == Some(1) {
            for s in &mut view.index {
                if let Slice::Range { start, .. } = *s {
                    *s = Slice::Index(start);
                }
            }
        } else if !ty.is_scalar() {
            self.error(
                Diag::new(&codes::SEM_KIND, format!("{what} is one semaphore"), e.span)
                    .label(format!("this is {} semaphores", ty.elements().unwrap_or(0)))
                    .help("index the semaphore array: `s[slot]`"),
            );
            return None;
        }
        Some(view)
    }

    /// A data window of a remote copy (PK0361 for a semaphore).
    fn remote_window(&mut self, e: &Expr, what: &str) -> Option<(RefView, Type)> {
        let (base, idx) = window_parts(e);
        match self.expr(base) {
            Val::Ref(_) | Val::View(_) => {}
            Val::Err => return None,
            other => {
                let d = self.describe(&other);
                self.error(
                    Diag::new(
                        &codes::REMOTE_WINDOW,
                        format!("the {what} of a remote copy must be a ref window; this is {d}"),
                        e.span,
                    )
                    .label("not a ref")
                    .help("`remote_copy_start(x.at[..], y.at[..], send, recv, device)`"),
                );
                return None;
            }
        }
        let (view, ty) = self.ref_view(base, idx, e.span)?;
        let space = self.refs[view.target].ty.space;
        if !matches!(space, Space::Vmem | Space::Any) {
            self.error(
                Diag::new(
                    &codes::REMOTE_WINDOW,
                    format!("the {what} of a remote copy is in {}", space.name()),
                    e.span,
                )
                .label("remote copies move VMEM or HBM windows")
                .help("copy from and to `vmem` or `any` refs"),
            );
            return None;
        }
        if view.index.iter().any(|s| s.stride() != 1) {
            self.error(
                Diag::new(
                    &codes::STRIDED_WINDOW,
                    format!("the {what} of a remote copy cannot be strided"),
                    e.span,
                )
                .label("`ds(start, size, stride)` in a DMA window"),
            );
            return None;
        }
        Some((view, ty))
    }

    /// `remote_copy_start` / `remote_wait_send` / `remote_wait_recv`
    /// `(src, dst, send_sem, recv_sem, device)`.
    pub(super) fn remote_copy(&mut self, name: &'static str, a: &Args, span: Span) -> Val {
        if !self.need_mesh(name, span, true) {
            return Val::Err;
        }
        let phase = match name {
            "remote_copy_start" => RemotePhase::Start,
            "remote_wait_send" => RemotePhase::WaitSend,
            _ => RemotePhase::WaitRecv,
        };
        let Some((src, st)) = self.remote_window(a.pos[0], "source") else {
            return Val::Err;
        };
        let Some((dst, dt)) = self.remote_window(a.pos[1], "destination") else {
            return Val::Err;
        };
        if st != dt {
            return self.error(
                Diag::new(&codes::REMOTE_WINDOW, format!("remote copy windows differ: `{st}` here and `{dt}` on the peer"), span)
                    .with(a.pos[0].span, format!("source is {st}"))
                    .with(a.pos[1].span, format!("destination is {dt}"))
                    .help("the destination is the same window on another device: give both sides one shape and dtype"),
            );
        }
        let dma = [Space::Semaphore];
        let Some(send_sem) = self.one_sem(a.pos[2], &dma, "the send semaphore") else {
            return Val::Err;
        };
        let Some(recv_sem) = self.one_sem(a.pos[3], &dma, "the receive semaphore") else {
            return Val::Err;
        };
        let Some(device) = self.device_arg(a.pos[4]) else {
            return Val::Err;
        };
        self.f.push(
            self.cur,
            OpKind::RemoteDma {
                phase,
                src,
                dst,
                send_sem,
                recv_sem,
                device,
            },
            &[],
            span,
        );
        Val::Unit
    }

    /// The semaphore and the count of `sem_signal` or `sem_wait` (`verb`:
    /// "signalled" or "waited on"), which only kernel bodies use.
    fn sem_and_count(&mut self, a: &Args, span: Span, verb: &str) -> Option<(RefView, Value)> {
        if self.mode != Mode::Body {
            self.error(
                Diag::new(
                    &codes::DMA_SPACES,
                    format!("semaphores are only {verb} in kernel bodies"),
                    span,
                )
                .label("not here"),
            );
            return None;
        }
        let what = if verb == "signalled" {
            "the signalled semaphore"
        } else {
            "the awaited semaphore"
        };
        let sem = self.one_sem(a.pos[0], &[Space::Sem, Space::Barrier], what)?;
        let n = self.count_arg(a.pos[1])?;
        Some((sem, n))
    }

    /// `sem_signal(s, n)` or `sem_signal(s, n, device)`.
    pub(super) fn sem_signal(&mut self, a: &Args, span: Span) -> Val {
        let Some((sem, n)) = self.sem_and_count(a, span, "signalled") else {
            return Val::Err;
        };
        let device = match a.pos.get(2) {
            None => None,
            Some(e) => {
                if !self.need_mesh("sem_signal", e.span, true) {
                    return Val::Err;
                }
                match self.device_arg(e) {
                    Some(d) => Some(d),
                    None => return Val::Err,
                }
            }
        };
        self.f
            .push(self.cur, OpKind::SemSignal { sem, n, device }, &[], span);
        Val::Unit
    }

    /// `sem_wait(s, n)`.
    pub(super) fn sem_wait(&mut self, a: &Args, span: Span) -> Val {
        let Some((sem, n)) = self.sem_and_count(a, span, "waited on") else {
            return Val::Err;
        };
        self.f.push(self.cur, OpKind::SemWait { sem, n }, &[], span);
        Val::Unit
    }

    /// `sem_read(s)`: the semaphore's current value.
    pub(super) fn sem_read(&mut self, a: &Args, span: Span) -> Val {
        if self.mode != Mode::Body {
            return self.error(
                Diag::new(
                    &codes::DMA_SPACES,
                    "semaphores are only read in kernel bodies",
                    span,
                )
                .label("not here"),
            );
        }
        let Some(sem) = self.one_sem(
            a.pos[0],
            &[Space::Sem, Space::Barrier, Space::Semaphore],
            "the read semaphore",
        ) else {
            return Val::Err;
        };
        self.emit(OpKind::SemRead(sem), Type::Scalar(DType::I32), span)
    }
}
