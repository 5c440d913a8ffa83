//! The linear-memory layout: which bytes of the module's memory (one
//! TensorCore's SMEM + VMEM) hold each ref, the body's temporaries and,
//! with `check_uninit`, the shadow maps.
//!
//! Regions, in address order: a small argument area for DMA descriptors,
//! SMEM (scalar prefetch, SMEM scratch, semaphores), VMEM (operand blocks
//! and scratch), temporaries, shadows. Every buffer starts on a 16-byte
//! boundary and is followed by 16 bytes of slack, so that a whole-vector
//! access at the end of a window stays inside the buffer's region.
//!
//! The budget follows the chip: blocked operands are double-buffered by the
//! pipeline on the TPU, so they count twice against the VMEM limit, as in
//! the front end's estimate (once with `buffered(1)`); scratch and
//! temporaries count once. The reference itself holds one buffer per
//! block: the host fills it between steps, which is what the TPU's
//! pipeline guarantees the body sees with one buffer or two.

use super::abi::{self, Layout, RefOrigin, RefSlot};
use super::Error;
use pk_lang::ir::{Kernel, RefOrigin as IrOrigin, Space};
use pk_lang::Target;

pub(crate) const ALIGN: u32 = 16;
pub(crate) const SLACK: u32 = 16;
const PAGE: u64 = 65536;

pub(crate) fn align(x: u64) -> u64 {
    x.div_ceil(u64::from(ALIGN)) * u64::from(ALIGN)
}

pub(crate) fn space(s: Space) -> abi::Space {
    match s {
        Space::Vmem => abi::Space::Vmem,
        Space::Smem => abi::Space::Smem,
        Space::Any => abi::Space::Any,
        Space::Semaphore | Space::Sem | Space::Barrier => abi::Space::Semaphore,
    }
}

/// Lays out the refs; temporaries and shadows are placed by [`finish`].
pub(crate) fn refs(
    k: &Kernel,
    target: Target,
    args_bytes: u32,
) -> Result<(Vec<RefSlot>, Layout), Error> {
    let mut slots = Vec::new();
    let mut layout = Layout {
        args_offset: ALIGN,
        args_bytes,
        ..Layout::default()
    };
    let mut cursor = align(u64::from(ALIGN + args_bytes));
    for (id, r) in k.refs.iter() {
        slots.push(RefSlot {
            name: r.name.clone(),
            origin: match r.origin {
                IrOrigin::Operand(i) => RefOrigin::Operand(i),
                IrOrigin::Scratch(i) => RefOrigin::Scratch(i),
                IrOrigin::View(_) => RefOrigin::View(k.root(id).index()),
            },
            space: space(r.ty.space),
            dtype: r.ty.dtype.name().to_string(),
            shape: r.ty.shape.iter().map(|d| d.get()).collect(),
            offset: None,
            bytes: 0,
            shadow: None,
            written: false,
            filled_first: false,
            mxu_only: false,
            mxu_out: false,
        });
    }
    let mut place = |want: &dyn Fn(Space) -> bool, cursor: &mut u64| -> u64 {
        let begin = *cursor;
        for (i, (_, r)) in k.refs.iter().enumerate() {
            if !want(r.ty.space) || matches!(r.origin, IrOrigin::View(_)) {
                continue;
            }
            let bytes = r.ty.bytes().unwrap_or(0);
            slots[i].offset = Some(*cursor as u32);
            slots[i].bytes = bytes as u32;
            *cursor = align(*cursor + bytes + u64::from(SLACK));
        }
        *cursor - begin
    };
    layout.smem_offset = cursor as u32;
    let smem = place(
        &|s| {
            matches!(
                s,
                Space::Smem | Space::Semaphore | Space::Sem | Space::Barrier
            )
        },
        &mut cursor,
    );
    layout.smem_bytes = smem as u32;
    layout.vmem_offset = cursor as u32;
    let vmem = place(&|s| s == Space::Vmem, &mut cursor);
    layout.vmem_bytes = vmem as u32;
    layout.temps_offset = cursor as u32;
    share_with_views(&mut slots);
    check_budget(k, target)?;
    if cursor > u64::from(u32::MAX) / 2 {
        return Err(Error::MemoryExceeded {
            what: "refs".into(),
            need: cursor,
            limit: target.vmem_bytes() + target.smem_bytes(),
            span: k.span,
        });
    }
    Ok((slots, layout))
}

/// Gives every view the memory (and, once placed, the shadow map) of the
/// ref it is a view of.
fn share_with_views(slots: &mut [RefSlot]) {
    for i in 0..slots.len() {
        if let RefOrigin::View(root) = slots[i].origin {
            let (offset, shadow) = (slots[root].offset, slots[root].shadow);
            slots[i].offset = offset;
            slots[i].shadow = shadow;
            slots[i].bytes = slots[root].bytes;
        }
    }
}

/// The chip's budget: SMEM refs within SMEM, and VMEM refs (blocks
/// counted once per buffer) within the kernel's VMEM limit.
fn check_budget(k: &Kernel, target: Target) -> Result<(), Error> {
    let mut smem = 0u64;
    let mut vmem = 0u64;
    for o in &k.operands {
        let bytes = k.refs[o.ref_id].ty.bytes().unwrap_or(0);
        let copies = o.block.as_ref().map_or(1, |b| b.buffer_count());
        match o.space {
            Space::Smem => smem += bytes,
            Space::Vmem => vmem += copies * bytes,
            _ => {}
        }
    }
    for s in &k.scratch {
        let t = &k.refs[s.ref_id].ty;
        match t.space {
            Space::Smem | Space::Semaphore | Space::Sem | Space::Barrier => {
                smem += t.bytes().unwrap_or(0)
            }
            Space::Vmem => vmem += t.bytes().unwrap_or(0),
            Space::Any => {}
        }
    }
    if smem > target.smem_bytes() {
        return Err(Error::MemoryExceeded {
            what: "SMEM (scalar prefetch, SMEM scratch and semaphores)".into(),
            need: smem,
            limit: target.smem_bytes(),
            span: k.span,
        });
    }
    let limit = k.vmem_limit.unwrap_or(target.vmem_bytes());
    if vmem > limit {
        return Err(Error::MemoryExceeded {
            what: "VMEM (blocks times their buffer count, and scratch)".into(),
            need: vmem,
            limit,
            span: k.span,
        });
    }
    Ok(())
}

/// Places the temporaries and the shadows and sizes the memory.
pub(crate) fn finish(
    k: &Kernel,
    target: Target,
    slots: &mut [RefSlot],
    layout: &mut Layout,
    temps_bytes: u32,
    check_uninit: bool,
) -> Result<(), Error> {
    layout.temps_bytes = temps_bytes;
    let mut cursor =
        align(u64::from(layout.temps_offset) + u64::from(temps_bytes) + u64::from(SLACK));
    let chip = target.vmem_bytes() + target.smem_bytes();
    let used = cursor - u64::from(layout.smem_offset);
    if used > chip {
        return Err(Error::MemoryExceeded {
            what: "VMEM + SMEM (refs and the body's intermediate tiles)".into(),
            need: used,
            limit: chip,
            span: k.span,
        });
    }
    layout.shadow_offset = cursor as u32;
    if check_uninit {
        for s in slots.iter_mut() {
            if s.offset.is_none()
                || s.space == abi::Space::Semaphore
                || matches!(s.origin, RefOrigin::View(_))
            {
                continue;
            }
            let elems: u64 = s.shape.iter().product();
            s.shadow = Some(cursor as u32);
            cursor = align(cursor + elems + u64::from(SLACK));
        }
    }
    share_with_views(slots);
    layout.shadow_bytes = (cursor - u64::from(layout.shadow_offset)) as u32;
    layout.memory_bytes = cursor.div_ceil(PAGE) * PAGE;
    let overhead = u64::from(layout.smem_offset) + u64::from(layout.shadow_bytes);
    layout.memory_limit = (chip + overhead).div_ceil(PAGE) * PAGE;
    layout.memory_limit = layout.memory_limit.max(layout.memory_bytes);
    if layout.memory_bytes > 1 << 32 {
        return Err(Error::MemoryExceeded {
            what: "linear memory".into(),
            need: layout.memory_bytes,
            limit: 1 << 32,
            span: k.span,
        });
    }
    Ok(())
}
