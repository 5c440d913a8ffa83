//! The XLA FFI handler that runs a pk kernel's CPU reference inside an XLA
//! CPU computation, on XLA's own buffers.
//!
//! JAX registers [`handler`] as the typed FFI target `pk_cpu_kernel`
//! (`api_version=1`). Each call carries one attribute, `kernel_id`, the
//! index of a specialised kernel in [`REGISTRY`] (filled by the Python
//! side when it lowers a call), and the kernel's inputs and outputs as
//! buffers in call order. A kernel with a mesh also takes the device's
//! coordinates (`s32[2]`: its index on the kernel's mesh, its group) after
//! its inputs and a `site` attribute; the devices' calls of one launch
//! meet in one CPU mesh ([`crate::rendezvous`]), keyed with XLA's run id
//! (`XLA_FFI_RunId_Get`).
//!
//! The C structs below are a subset of `xla/ffi/api/c_api.h` (shipped in
//! jaxlib, `jax.ffi.include_dir()`), field for field. XLA versions them by
//! `struct_size`, the offset of the last field plus its size; the handler
//! checks the sizes it relies on and answers the metadata query (the
//! handler's FFI API version) that XLA makes before it trusts a handler.
//!
//! Invariants:
//! 1. No panic crosses the C boundary: every failure returns an
//!    `XLA_FFI_Error` made with `XLA_FFI_Error_Create`, whose message is the
//!    rendered pk diagnostic (JAX raises it as an exception).
//! 2. Buffers are checked against the kernel's operands (count, dtype,
//!    shape) before any byte is read or written.
//! 3. The kernel reads XLA's argument buffers and writes its result buffers
//!    in place (`CpuKernel::run_in_place`): no copies beyond those the CPU
//!    reference makes itself.

use std::ffi::{c_char, c_void, CString};
use std::mem::offset_of;
use std::sync::{Arc, RwLock};

use crate::adapter::{self, Built, Rendered};

/// The FFI API version this handler was written against (c_api.h's
/// `XLA_FFI_API_MAJOR` / `XLA_FFI_API_MINOR` in jaxlib 0.10.2).
const API_MAJOR: i32 = 0;
const API_MINOR: i32 = 3;

const STAGE_EXECUTE: i32 = 3;
const EXTENSION_METADATA: i32 = 1;
const ARG_BUFFER: i32 = 1;
const ATTR_SCALAR: i32 = 3;
const DT_S64: i32 = 5;
const ERR_INVALID_ARGUMENT: i32 = 3;
const ERR_INTERNAL: i32 = 13;

#[repr(C)]
struct ExtensionBase {
    struct_size: usize,
    kind: i32,
    next: *mut ExtensionBase,
}

#[repr(C)]
struct ApiVersion {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    major_version: i32,
    minor_version: i32,
}

#[repr(C)]
struct Metadata {
    struct_size: usize,
    api_version: ApiVersion,
    traits: u32,
    state_type_id: i64,
}

#[repr(C)]
struct MetadataExtension {
    extension_base: ExtensionBase,
    metadata: *mut Metadata,
}

#[repr(C)]
struct ErrorCreateArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    message: *const c_char,
    errc: i32,
}

type ErrorCreate = unsafe extern "C" fn(*mut ErrorCreateArgs) -> *mut c_void;

#[repr(C)]
struct RunIdArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    ctx: *mut c_void,
    run_id: i64,
}

type RunIdGet = unsafe extern "C" fn(*mut RunIdArgs) -> *mut c_void;

/// The head of `XLA_FFI_Api` up to `XLA_FFI_RunId_Get`: only
/// `XLA_FFI_Error_Create` and `XLA_FFI_RunId_Get` are called, the
/// functions between them are opaque pointers.
#[repr(C)]
struct Api {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    api_version: ApiVersion,
    internal_api: *const c_void,
    error_create: Option<ErrorCreate>,
    /// `XLA_FFI_Error_GetMessage` to `XLA_FFI_Future_SetError`.
    between: [*const c_void; 15],
    run_id_get: Option<RunIdGet>,
}

#[repr(C)]
struct Buffer {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    dtype: i32,
    data: *mut c_void,
    rank: i64,
    dims: *mut i64,
}

#[repr(C)]
struct List {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    size: i64,
    types: *mut i32,
    items: *mut *mut c_void,
}

#[repr(C)]
struct ByteSpan {
    ptr: *const c_char,
    len: usize,
}

#[repr(C)]
struct Scalar {
    dtype: i32,
    value: *mut c_void,
}

#[repr(C)]
struct Attrs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    size: i64,
    types: *mut i32,
    names: *mut *mut ByteSpan,
    attrs: *mut *mut c_void,
}

#[repr(C)]
pub struct CallFrame {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    api: *const Api,
    ctx: *mut c_void,
    stage: i32,
    args: List,
    rets: List,
    attrs: Attrs,
    future: *mut c_void,
}

/// `XLA_FFI_STRUCT_SIZE`: the end of the last field, without padding.
const CALL_FRAME_SIZE: usize = offset_of!(CallFrame, attrs) + std::mem::size_of::<Attrs>();
const METADATA_SIZE: usize = offset_of!(Metadata, traits) + std::mem::size_of::<u32>();
const METADATA_EXTENSION_SIZE: usize =
    offset_of!(MetadataExtension, metadata) + std::mem::size_of::<*mut Metadata>();
const API_VERSION_SIZE: usize = offset_of!(ApiVersion, minor_version) + std::mem::size_of::<i32>();
const ERROR_CREATE_ARGS_SIZE: usize =
    offset_of!(ErrorCreateArgs, errc) + std::mem::size_of::<i32>();
const BUFFER_SIZE: usize = offset_of!(Buffer, dims) + std::mem::size_of::<*mut i64>();
const API_HEAD_SIZE: usize = offset_of!(Api, error_create) + std::mem::size_of::<usize>();
const API_RUN_ID_SIZE: usize = offset_of!(Api, run_id_get) + std::mem::size_of::<usize>();
const RUN_ID_ARGS_SIZE: usize = offset_of!(RunIdArgs, run_id) + std::mem::size_of::<i64>();
const DT_S32: i32 = 4;

/// The specialised kernels the handler can run, by `kernel_id`. Entries
/// are never removed: an id stays valid for as long as a compiled XLA
/// computation may refer to it.
pub static REGISTRY: RwLock<Vec<Arc<Built>>> = RwLock::new(Vec::new());

/// Adds a kernel to the registry and returns its id.
pub fn register(b: Arc<Built>) -> i64 {
    let mut r = REGISTRY.write().unwrap_or_else(|p| p.into_inner());
    r.push(b);
    (r.len() - 1) as i64
}

/// XLA's element type code for a pk dtype, as laid out in memory (bool is
/// stored as 32 bits by pk and has no such XLA type, so it has none).
fn xla_dtype(d: &str) -> Option<i32> {
    Some(match d {
        "f32" => 11,
        "bf16" => 16,
        "i32" => DT_S32,
        "i16" => 3,
        "i8" => 2,
        "u8" => 6,
        "f8e4m3fn" => 20,
        "f8e5m2" => 19,
        _ => return None,
    })
}

/// The FFI handler. XLA calls it with a call frame it owns.
///
/// # Safety
/// `frame` must be a valid `XLA_FFI_CallFrame` as XLA passes it.
pub unsafe extern "C" fn handler(frame: *mut CallFrame) -> *mut c_void {
    // SAFETY: XLA passes a valid frame (the caller's contract); its api
    // pointer is valid for the call.
    let frame = unsafe { &mut *frame };
    let api = frame.api;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: as above; `call` checks every struct size it reads.
        unsafe { call(frame) }
    }));
    match result {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err((code, message))) => unsafe { error(api, code, &message) },
        Err(_) => unsafe { error(api, ERR_INTERNAL, "internal error: the pk handler panicked") },
    }
}

/// Makes an `XLA_FFI_Error` (XLA copies the message).
///
/// # Safety
/// `api` must be XLA's API table passed in the call frame.
unsafe fn error(api: *const Api, code: i32, message: &str) -> *mut c_void {
    // SAFETY: `api` is XLA's table (caller's contract); its size is checked
    // before the function pointer is read.
    let create = unsafe {
        if api.is_null() || (*api).struct_size < API_HEAD_SIZE {
            return std::ptr::null_mut();
        }
        (*api).error_create
    };
    let Some(create) = create else {
        return std::ptr::null_mut();
    };
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    let mut args = ErrorCreateArgs {
        struct_size: ERROR_CREATE_ARGS_SIZE,
        extension_start: std::ptr::null_mut(),
        message: text.as_ptr(),
        errc: code,
    };
    // SAFETY: `args` is a valid struct whose message outlives the call.
    unsafe { create(&mut args) }
}

type CallResult = Result<(), (i32, String)>;

fn invalid(r: Rendered) -> (i32, String) {
    (ERR_INVALID_ARGUMENT, r.message)
}

/// # Safety
/// `frame` must be XLA's call frame.
unsafe fn call(frame: &mut CallFrame) -> CallResult {
    if frame.struct_size < CALL_FRAME_SIZE {
        return Err((
            ERR_INTERNAL,
            "XLA's FFI call frame is older than pk's".into(),
        ));
    }
    let ext = frame.extension_start;
    // SAFETY: a non-null extension start is a valid extension (c_api.h).
    if !ext.is_null() && unsafe { (*ext).kind } == EXTENSION_METADATA {
        return unsafe { metadata(ext.cast::<MetadataExtension>()) };
    }
    if frame.stage != STAGE_EXECUTE {
        return Ok(());
    }
    // SAFETY: the attribute table is valid for the call.
    let id = unsafe { attr_i64(&frame.attrs, "kernel_id") }?.ok_or_else(|| {
        (
            ERR_INVALID_ARGUMENT,
            "pk: the custom call has no 64-bit `kernel_id` attribute".to_string(),
        )
    })?;
    let built = {
        let r = REGISTRY.read().unwrap_or_else(|p| p.into_inner());
        r.get(id as usize).cloned()
    }
    .ok_or_else(|| {
        (
            ERR_INVALID_ARGUMENT,
            format!("pk: no kernel with id {id} in this process (a CPU lowering is only valid in the process that made it)"),
        )
    })?;
    let Some(kernel) = built.cpu.as_ref() else {
        return Err(invalid(adapter::no_cpu(&built)));
    };
    // A kernel with a mesh takes the device's coordinates after its
    // inputs (see `pk/jax.py`): its index on the kernel's mesh and its
    // group.
    let coords = (!built.mesh.is_empty()).then(|| pk_runtime::bind::OperandSig {
        name: "mesh coordinates".into(),
        dtype: "i32".into(),
        shape: vec![2],
    });
    let expected: Vec<_> = built.inputs.iter().cloned().chain(coords.clone()).collect();
    // SAFETY: the argument and result lists are valid for the call.
    let mut args = unsafe { buffers(&frame.args, &expected, "argument") }?;
    let at = coords.is_some().then(|| {
        let b = args.pop().expect("the coordinates were checked");
        // SAFETY: an s32[2] buffer (checked above), valid for the call.
        unsafe {
            let p = b.data.cast::<i32>();
            (*p, *p.add(1))
        }
    });
    let rets = unsafe { buffers(&frame.rets, &built.outputs, "result") }?;
    let mut inputs: Vec<&[u8]> = Vec::with_capacity(args.len());
    for (b, o) in args.iter().zip(&built.inputs) {
        // SAFETY: XLA's buffer holds the operand's elements (dtype and
        // shape checked above), row-major as the layouts request, and
        // stays valid for the call.
        inputs.push(unsafe { std::slice::from_raw_parts(b.data.cast::<u8>(), bytes(o)?) });
    }
    let mut outs: Vec<&mut [u8]> = Vec::with_capacity(rets.len());
    for (b, o) in rets.iter().zip(&built.outputs) {
        // SAFETY: as above; result buffers are distinct from each other
        // and from the arguments (an aliased result shares its argument's
        // buffer, but the kernel reads that input from a private copy).
        outs.push(unsafe { std::slice::from_raw_parts_mut(b.data.cast::<u8>(), bytes(o)?) });
    }
    let Some((device, group)) = at else {
        return adapter::run_cpu_in_place(kernel, &inputs, &mut outs).map_err(invalid);
    };
    let devices: u64 = built.mesh.iter().map(|(_, s)| s).product();
    if device < 0 || device as u64 >= devices {
        return Err((
            ERR_INVALID_ARGUMENT,
            format!(
                "pk: kernel `{}` was called as device {device} of a mesh of {devices}",
                built.name
            ),
        ));
    }
    // SAFETY: the attribute table and the API are valid for the call.
    let site = unsafe { attr_i64(&frame.attrs, "site") }?.unwrap_or(0);
    let run = unsafe { run_id(frame) };
    let launch = crate::rendezvous::join(
        kernel,
        id,
        site,
        run,
        i64::from(group),
        device as usize,
        devices as usize,
    );
    launch
        .run(kernel, device as usize, &inputs, &mut outs)
        .map_err(invalid)
}

/// XLA's id of the logical execution this call belongs to (0 when XLA's
/// API is too old to say).
///
/// # Safety
/// `frame` must be XLA's call frame.
unsafe fn run_id(frame: &CallFrame) -> i64 {
    let api = frame.api;
    // SAFETY: XLA's table; its size is checked before the pointer is read.
    let get = unsafe {
        if api.is_null() || (*api).struct_size < API_RUN_ID_SIZE {
            return 0;
        }
        (*api).run_id_get
    };
    let Some(get) = get else { return 0 };
    let mut args = RunIdArgs {
        struct_size: RUN_ID_ARGS_SIZE,
        extension_start: std::ptr::null_mut(),
        ctx: frame.ctx,
        run_id: 0,
    };
    // SAFETY: a valid argument struct and the frame's execution context.
    let err = unsafe { get(&mut args) };
    if err.is_null() {
        args.run_id
    } else {
        0
    }
}

/// The size in bytes of an operand's array in pk's memory layout.
fn bytes(o: &pk_runtime::bind::OperandSig) -> Result<usize, (i32, String)> {
    let d = adapter::dtype(&o.dtype).ok_or_else(|| (ERR_INTERNAL, format!("dtype {}", o.dtype)))?;
    Ok(o.shape.iter().product::<u64>() as usize * adapter::elem_bytes(d))
}

/// Answers XLA's metadata query: the FFI API version of this handler and
/// no traits.
///
/// # Safety
/// `ext` must be XLA's metadata extension.
unsafe fn metadata(ext: *mut MetadataExtension) -> CallResult {
    // SAFETY: the caller's contract; sizes are checked before each read.
    unsafe {
        if (*ext).extension_base.struct_size < METADATA_EXTENSION_SIZE {
            return Err((ERR_INVALID_ARGUMENT, "metadata extension too small".into()));
        }
        let m = (*ext).metadata;
        if m.is_null() || (*m).struct_size < METADATA_SIZE {
            return Err((ERR_INVALID_ARGUMENT, "metadata struct too small".into()));
        }
        (*m).api_version = ApiVersion {
            struct_size: API_VERSION_SIZE,
            extension_start: std::ptr::null_mut(),
            major_version: API_MAJOR,
            minor_version: API_MINOR,
        };
        (*m).traits = 0;
    }
    Ok(())
}

/// The 64-bit integer scalar attribute `want`, if the call has it.
///
/// # Safety
/// `attrs` must be the frame's attribute table.
unsafe fn attr_i64(attrs: &Attrs, want: &str) -> Result<Option<i64>, (i32, String)> {
    for i in 0..attrs.size.max(0) as usize {
        // SAFETY: the table has `size` entries of each array.
        unsafe {
            let name = &**attrs.names.add(i);
            let name = std::slice::from_raw_parts(name.ptr.cast::<u8>(), name.len);
            if name != want.as_bytes() {
                continue;
            }
            if *attrs.types.add(i) != ATTR_SCALAR {
                break;
            }
            let s = &*(*attrs.attrs.add(i)).cast::<Scalar>();
            if s.dtype != DT_S64 {
                break;
            }
            return Ok(Some(*s.value.cast::<i64>()));
        }
    }
    Ok(None)
}

/// The buffers of an argument or result list, checked against operands.
///
/// # Safety
/// `list` must be the frame's argument or result list.
unsafe fn buffers<'a>(
    list: &'a List,
    operands: &[pk_runtime::bind::OperandSig],
    what: &str,
) -> Result<Vec<&'a Buffer>, (i32, String)> {
    if list.size != operands.len() as i64 {
        return Err((
            ERR_INVALID_ARGUMENT,
            format!(
                "pk: {} {what}s passed, the kernel has {}",
                list.size,
                operands.len()
            ),
        ));
    }
    let mut out = Vec::new();
    for (i, o) in operands.iter().enumerate() {
        // SAFETY: `size` entries (checked above).
        let (ty, b) = unsafe { (*list.types.add(i), &*(*list.items.add(i)).cast::<Buffer>()) };
        if ty != ARG_BUFFER || b.struct_size < BUFFER_SIZE {
            return Err((
                ERR_INVALID_ARGUMENT,
                format!("pk: {what} {i} is not a buffer"),
            ));
        }
        // SAFETY: `rank` dims.
        let dims = unsafe { std::slice::from_raw_parts(b.dims, b.rank.max(0) as usize) };
        let same_shape =
            dims.len() == o.shape.len() && dims.iter().zip(&o.shape).all(|(&a, &e)| a as u64 == e);
        if Some(b.dtype) != xla_dtype(&o.dtype) || !same_shape {
            return Err((
                ERR_INVALID_ARGUMENT,
                format!(
                    "pk: {what} {i} (`{}`) is not {}[{}]",
                    o.name,
                    o.dtype,
                    o.shape
                        .iter()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        out.push(b);
    }
    Ok(out)
}
