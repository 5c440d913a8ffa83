//! Tile IR to WebAssembly: the CPU reference back end.
//!
//! One kernel specialisation becomes one Wasm module whose linear memory
//! plays one TensorCore's SMEM + VMEM. The module exports the kernel body
//! (grid indices in) and one function per blocked operand's index map; the
//! host (the runtime's CPU executor) plays HBM, the DMA engine and the MXU
//! through six imports. [`abi`] is the contract, [`CpuManifest`] the side
//! tables (memory layout, sites with `.pk` locations, dot and DMA
//! descriptors) that travel with the `.wasm`.
//!
//! ```text
//! verify -> strips (row-local runs) -> plan (tile buffers) -> layout (memory) -> emit (body, index maps, helpers)
//!        -> assemble -> validate (wasmparser)
//! ```

pub mod abi;
mod access;
pub mod cephes;
mod emit;
mod fb;
mod layout;
mod math;
mod plan;
mod strip;
#[cfg(test)]
mod tests;

pub use abi::CpuManifest;

use abi::{GridAxis, OperandInfo, Role, Semantics, SourceText};
use emit::{Em, Imports, Sites};
use math::Helpers;
use pk_lang::ir::{self, Kernel, OpKind, Start};
use pk_lang::span::{SourceMap, Span};
use pk_lang::Target;
use std::collections::HashMap;
use wasm_encoder::{
    CodeSection, ConstExpr, EntityType, ExportKind, ExportSection, Function, FunctionSection,
    GlobalSection, GlobalType, ImportSection, IndirectNameMap, MemorySection, MemoryType, Module,
    NameMap, NameSection, TypeSection, ValType,
};

/// How to lower.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The TPU generation whose VMEM and SMEM the memory models.
    pub target: Target,
    /// Track which ref elements were written and trap on reads of others.
    pub check_uninit: bool,
}

/// A lowered kernel: the module and its manifest.
#[derive(Debug, Clone)]
pub struct WasmKernel {
    pub bytes: Vec<u8>,
    pub manifest: CpuManifest,
}

/// Why a kernel could not be lowered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("invalid Tile IR: {message}")]
    Verify { message: String, span: Span },
    #[error("{what} is not supported by the CPU reference")]
    Unsupported { what: String, span: Span },
    #[error("the kernel needs {need} bytes of {what}, more than the {limit} bytes of the target")]
    MemoryExceeded {
        what: String,
        need: u64,
        limit: u64,
        span: Span,
    },
    #[error("internal error in the Wasm back end: {0}")]
    Internal(String),
}

impl Error {
    /// The `.pk` span the error points at, if any.
    pub fn span(&self) -> Option<Span> {
        match self {
            Error::Verify { span, .. }
            | Error::Unsupported { span, .. }
            | Error::MemoryExceeded { span, .. } => Some(*span),
            Error::Internal(_) => None,
        }
    }
}

/// The host imports: name, parameters (all i32), and whether it returns
/// an i32.
const IMPORTS: [(&str, usize, bool); 8] = [
    (abi::IMPORT_TRAP, 4, false),
    (abi::IMPORT_DOT, 4, false),
    (abi::IMPORT_DMA_START, 1, false),
    (abi::IMPORT_DMA_WAIT, 1, false),
    (abi::IMPORT_EUP, 4, false),
    (abi::IMPORT_FILL, 2, false),
    (abi::IMPORT_MESH, 3, true),
    (abi::IMPORT_PRINT, 2, false),
];

/// Lowers one specialised kernel.
pub fn lower(k: &Kernel, sources: &SourceMap, opts: &Options) -> Result<WasmKernel, Error> {
    ir::verify::verify_kernel(k, true).map_err(|e| Error::Verify {
        message: e.message,
        span: e.span,
    })?;
    // What each step does to its refs is the kernel's as written: strips
    // (below) read and write the same elements, in loops.
    let access = access::analyse(k);
    let stripped = strip::rows(k);
    let k = stripped.as_ref().unwrap_or(k);
    let plan = plan::plan(k, &|v, all_dot| emit::view_kind(k, v, all_dot));
    let (mut slots, mut layout) = layout::refs(k, opts.target, 4 * dma_arg_slots(&k.body))?;
    let mxu_only = access::mxu_only(k, &plan);
    for (i, s) in slots.iter_mut().enumerate() {
        s.written = access.written[i];
        s.filled_first = access.filled_first[i];
        s.mxu_only = mxu_only[i];
    }
    layout::finish(
        k,
        opts.target,
        &mut slots,
        &mut layout,
        plan.temps_bytes,
        opts.check_uninit,
    )?;

    let imp = Imports {
        trap: 0,
        dot: 1,
        dma_start: 2,
        dma_wait: 3,
        eup: 4,
        fill: 5,
        mesh: 6,
        print: 7,
    };
    let blocked: Vec<usize> = (0..k.operands.len())
        .filter(|&i| k.operands[i].block.is_some())
        .collect();
    let kernel_index = IMPORTS.len() as u32;
    let mut helpers = Helpers::new(kernel_index + 1 + blocked.len() as u32);
    let mut sites = Sites {
        sources,
        sites: Vec::new(),
        dots: Vec::new(),
        dmas: Vec::new(),
        meshes: Vec::new(),
        prints: Vec::new(),
        arg_slots: 0,
    };
    let loop_global = 0;
    let mut funcs: Vec<(String, Vec<ValType>, Vec<ValType>, Function)> = Vec::new();
    let grid = vec![ValType::I32; k.grid.len()];
    // The kernel body, then one index map per blocked operand: each takes
    // the grid indices and returns what its entry block yields (the block
    // indices of an index map; nothing for the verified kernel body).
    let empty = plan::Plan::default();
    let mut bodies = vec![(
        abi::EXPORT_KERNEL.to_string(),
        &k.body,
        &plan,
        opts.check_uninit,
        vec![],
    )];
    for &i in &blocked {
        if let Some(b) = &k.operands[i].block {
            let results = vec![ValType::I32; k.operands[i].shape.len()];
            bodies.push((
                abi::index_map_export(i),
                &b.index_map,
                &empty,
                false,
                results,
            ));
        }
    }
    let mut mxu_out = vec![false; slots.len()];
    for (name, f, plan, check_uninit, results) in bodies {
        let mut em = Em::new(
            k,
            f,
            plan,
            &slots,
            &layout,
            &mut helpers,
            &mut sites,
            imp,
            loop_global,
            check_uninit,
        );
        if let Some(e) = f.entry {
            em.block(e)?;
        }
        for &y in &f.entry_block().yields {
            em.get(y);
        }
        if std::ptr::eq(f, &k.body) {
            mxu_out = host_written(&em);
        }
        funcs.push((name, grid.clone(), results, em.fb.finish()));
    }
    for (s, out) in slots.iter_mut().zip(mxu_out) {
        s.mxu_out = out;
    }
    for (h, f) in helpers.build_all() {
        funcs.push((
            h.name().into(),
            h.params().to_vec(),
            h.results().to_vec(),
            f,
        ));
    }
    let bytes = assemble(&funcs, &blocked, &layout);
    if let Some(p) = std::env::var_os("PK_DEBUG_WASM") {
        let _ = std::fs::write(&p, &bytes);
        let mut w = std::path::PathBuf::from(p);
        w.set_extension("wat");
        let _ = std::fs::write(w, to_wat(&bytes).unwrap_or_default());
    }
    wasmparser::Validator::new()
        .validate_all(&bytes)
        .map_err(|e| Error::Internal(format!("generated module does not validate: {e}")))?;
    let manifest = manifest(k, sources, opts, slots, layout, sites);
    Ok(WasmKernel { bytes, manifest })
}

/// Per ref, whether only the host writes it and nothing reads it in the
/// module (`RefSlot::mxu_out`): an output block whose every load and store
/// the emitter gave to a `dot` (the store of its product, or the load and
/// store of an accumulation) or to `fill`.
fn host_written(em: &Em) -> Vec<bool> {
    let k = em.k;
    let mut only: Vec<bool> = k.refs.iter().map(|(r, _)| em.out_block(r)).collect();
    for (id, op) in em.f.ops.iter() {
        let by_host = em.done[id.index()] || em.host_filled[id.index()];
        let touched: Vec<ir::RefId> = match &op.kind {
            OpKind::Load(v) | OpKind::Store(v, _, _) => vec![v.target],
            OpKind::DmaStart { src, dst, sem } | OpKind::DmaWait { src, dst, sem } => {
                vec![src.target, dst.target, sem.target]
            }
            _ => continue,
        };
        for r in touched {
            if !by_host || matches!(op.kind, OpKind::DmaStart { .. } | OpKind::DmaWait { .. }) {
                only[k.root(r).index()] = false;
            }
        }
    }
    only
}

/// The most DMA start arguments any one DMA op passes.
fn dma_arg_slots(f: &ir::Func) -> u32 {
    let count = |v: &ir::RefView| {
        v.index
            .iter()
            .filter(|s| matches!(s.start(), Start::Dyn(_)))
            .count() as u32
    };
    f.ops
        .iter()
        .map(|(_, op)| match &op.kind {
            OpKind::DmaStart { src, dst, sem } | OpKind::DmaWait { src, dst, sem } => {
                count(src) + count(dst) + count(sem)
            }
            OpKind::RemoteDma {
                src,
                dst,
                send_sem,
                recv_sem,
                ..
            } => count(src) + count(dst) + count(send_sem) + count(recv_sem),
            OpKind::SemSignal { sem, .. } | OpKind::SemWait { sem, .. } | OpKind::SemRead(sem) => {
                count(sem)
            }
            OpKind::Print { args, .. } => args.len() as u32,
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

fn assemble(
    funcs: &[(String, Vec<ValType>, Vec<ValType>, Function)],
    blocked: &[usize],
    layout: &abi::Layout,
) -> Vec<u8> {
    let mut types = TypeSection::new();
    let mut type_ids: HashMap<(Vec<ValType>, Vec<ValType>), u32> = HashMap::new();
    let mut ty = |p: Vec<ValType>, r: Vec<ValType>, types: &mut TypeSection| -> u32 {
        let n = type_ids.len() as u32;
        *type_ids.entry((p.clone(), r.clone())).or_insert_with(|| {
            types.ty().function(p, r);
            n
        })
    };
    let mut imports = ImportSection::new();
    let mut names = NameMap::new();
    for (i, (name, nparams, result)) in IMPORTS.iter().enumerate() {
        let r = if *result { vec![ValType::I32] } else { vec![] };
        let t = ty(vec![ValType::I32; *nparams], r, &mut types);
        imports.import(abi::IMPORT_MODULE, name, EntityType::Function(t));
        names.append(i as u32, name);
    }
    let mut fsec = FunctionSection::new();
    let mut code = CodeSection::new();
    for (i, (name, p, r, f)) in funcs.iter().enumerate() {
        let t = ty(p.clone(), r.clone(), &mut types);
        fsec.function(t);
        code.function(f);
        names.append((IMPORTS.len() + i) as u32, name);
    }
    let mut mems = MemorySection::new();
    mems.memory(MemoryType {
        minimum: layout.memory_bytes / 65536,
        maximum: Some(layout.memory_limit / 65536),
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    let mut globals = GlobalSection::new();
    globals.global(
        GlobalType {
            val_type: ValType::I32,
            mutable: true,
            shared: false,
        },
        &ConstExpr::i32_const(-1),
    );
    let mut exports = ExportSection::new();
    exports.export(abi::EXPORT_MEMORY, ExportKind::Memory, 0);
    let first = IMPORTS.len() as u32;
    exports.export(abi::EXPORT_KERNEL, ExportKind::Func, first);
    for (j, &i) in blocked.iter().enumerate() {
        exports.export(
            &abi::index_map_export(i),
            ExportKind::Func,
            first + 1 + j as u32,
        );
    }
    exports.export(abi::EXPORT_LOOP_SITE, ExportKind::Global, 0);
    let mut name_sec = NameSection::new();
    name_sec.functions(&names);
    name_sec.locals(&IndirectNameMap::new());
    let mut m = Module::new();
    m.section(&types)
        .section(&imports)
        .section(&fsec)
        .section(&mems)
        .section(&globals)
        .section(&exports)
        .section(&code)
        .section(&name_sec);
    m.finish()
}

fn loc_of(sites: &Sites, span: Span) -> abi::Loc {
    sites.loc(span)
}

fn manifest(
    k: &Kernel,
    sources: &SourceMap,
    opts: &Options,
    refs: Vec<abi::RefSlot>,
    layout: abi::Layout,
    sites: Sites,
) -> CpuManifest {
    let operands = k
        .operands
        .iter()
        .map(|o| OperandInfo {
            name: o.name.clone(),
            role: match o.role {
                ir::Role::Prefetch => Role::Prefetch,
                ir::Role::Input => Role::Input,
                ir::Role::Output => Role::Output,
            },
            dtype: o.dtype.name().into(),
            shape: o.shape.iter().map(|d| d.get()).collect(),
            space: layout::space(o.space),
            block: o
                .block
                .as_ref()
                .map(|b| b.dims.iter().map(|d| d.extent().get()).collect()),
            squeezed: o.block.as_ref().map_or_else(Vec::new, |b| {
                b.dims
                    .iter()
                    .map(|d| *d == ir::BlockDim::Squeezed)
                    .collect()
            }),
            ref_index: o.ref_id.index(),
            aliases: o.aliases,
            loc: loc_of(&sites, o.span),
        })
        .collect();
    CpuManifest {
        abi_version: abi::ABI_VERSION,
        kernel: k.name.clone(),
        target: opts.target.name().into(),
        params: k
            .params
            .iter()
            .map(|p| (p.name.clone(), p.value.to_string()))
            .collect(),
        grid: k
            .grid
            .iter()
            .map(|a| GridAxis {
                name: a.name.clone(),
                extent: a.extent.get(),
                semantics: match a.semantics {
                    ir::Semantics::Parallel => Semantics::Parallel,
                    ir::Semantics::Arbitrary => Semantics::Arbitrary,
                },
                dynamic: a.dynamic.as_ref().map(|d| abi::DynamicAxis {
                    operand: d.operand,
                    element: d.flat_index(
                        &k.operands[d.operand]
                            .shape
                            .iter()
                            .map(|x| x.get())
                            .collect::<Vec<_>>(),
                    ),
                }),
            })
            .collect(),
        operands,
        refs,
        layout,
        loc: loc_of(&sites, k.span),
        sites: sites.sites,
        dots: sites.dots,
        dmas: sites.dmas,
        mesh: k
            .mesh
            .iter()
            .map(|a| abi::MeshAxisInfo {
                name: a.name.clone(),
                size: a.size.get(),
            })
            .collect(),
        meshes: sites.meshes,
        prints: sites.prints,
        collective_id: k.collective_id,
        check_uninit: opts.check_uninit,
        sources: sources
            .files()
            .map(|(_, f)| SourceText {
                name: f.name.clone(),
                text: f.text.to_string(),
            })
            .collect(),
    }
}

/// The text form of a module (`pkc emit wat`).
pub fn to_wat(bytes: &[u8]) -> Result<String, Error> {
    wasmprinter::print_bytes(bytes)
        .map_err(|e| Error::Internal(format!("cannot print the module: {e}")))
}
