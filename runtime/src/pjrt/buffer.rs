//! Arrays on a TPU: the element type each pk dtype has there, copying a host
//! array to a device and back, and the events that say when a copy is done.

use std::ffi::c_void;

use pjrt_sys::{PJRT_Buffer, PJRT_Buffer_Type, PJRT_Device, PJRT_Error, PJRT_Event};
use pk_lang::ir::DType;

use super::client::Client;
use super::error::PjrtError;
use super::plugin::{api_fn, raw_slice, Plugin, RawError};
use crate::cpu::HostArray;

/// The element type an array of `dtype` has on the TPU.
///
/// Booleans cross the kernel boundary as `i32` 0 or 1: that is the memory
/// form the kernel's memrefs use and what its StableHLO module declares, and
/// also how [`HostArray`] stores them, so their bytes go over unchanged.
pub fn buffer_type(dtype: DType) -> PJRT_Buffer_Type {
    match dtype {
        DType::F32 => pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_F32,
        DType::BF16 => pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_BF16,
        DType::I32 | DType::Bool => pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_S32,
        DType::I16 => pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_S16,
        DType::I8 => pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_S8,
        DType::U8 => pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_U8,
        DType::F8E4M3FN => pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_F8E4M3FN,
        DType::F8E5M2 => pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_F8E5M2,
    }
}

/// XLA's name of an element type pk uses, and its size in bytes; `None` for
/// the others, which no pk kernel reads or writes.
fn describe(t: PJRT_Buffer_Type) -> Option<(&'static str, usize)> {
    Some(match t {
        pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_F32 => ("f32", 4),
        pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_BF16 => ("bf16", 2),
        pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_S32 => ("s32", 4),
        pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_S16 => ("s16", 2),
        pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_S8 => ("s8", 1),
        pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_U8 => ("u8", 1),
        pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_F8E4M3FN => ("f8e4m3fn", 1),
        pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_F8E5M2 => ("f8e5m2", 1),
        _ => return None,
    })
}

/// An element type as a message shows it.
pub fn type_name(t: PJRT_Buffer_Type) -> String {
    describe(t).map_or_else(|| format!("element type {t}"), |(name, _)| name.to_string())
}

/// The bytes of a row-major array of `dims` elements of `dtype`; `None` on
/// overflow.
fn byte_len(dtype: DType, dims: &[usize]) -> Option<usize> {
    let (_, size) = describe(buffer_type(dtype))?;
    dims.iter().try_fold(size, |n, &d| n.checked_mul(d))
}

/// A failure of an operation on the TPU.
pub(super) fn failed(operation: String, e: RawError) -> PjrtError {
    PjrtError::Execute {
        operation,
        status: e.status().to_string(),
        message: e.message,
    }
}

/// A request pk refuses before it reaches the TPU, in the words PJRT uses
/// for one it refuses itself.
pub(super) fn refused(operation: String, message: String) -> PjrtError {
    PjrtError::Execute {
        operation,
        status: "INVALID_ARGUMENT".into(),
        message,
    }
}

type AwaitFn = unsafe extern "C" fn(*mut pjrt_sys::PJRT_Event_Await_Args) -> *mut PJRT_Error;
type DestroyFn = unsafe extern "C" fn(*mut pjrt_sys::PJRT_Event_Destroy_Args) -> *mut PJRT_Error;

/// The functions to wait for and free an event. They are looked up before
/// the operation that returns the event starts: once libtpu works on memory
/// pk owns, pk must be able to wait for it before that memory is freed.
#[derive(Clone, Copy)]
pub(super) struct Events {
    plugin: &'static Plugin,
    await_fn: AwaitFn,
    destroy_fn: DestroyFn,
}

impl Events {
    pub(super) fn new(plugin: &'static Plugin) -> Result<Events, PjrtError> {
        Ok(Events {
            plugin,
            await_fn: api_fn!(plugin, PJRT_Event_Await)?,
            destroy_fn: api_fn!(plugin, PJRT_Event_Destroy)?,
        })
    }

    /// Takes ownership of an event libtpu returned (null: none).
    pub(super) fn own(self, raw: *mut PJRT_Event) -> Event {
        Event { fns: self, raw }
    }
}

/// An event of an operation in flight, freed when dropped.
pub(super) struct Event {
    fns: Events,
    raw: *mut PJRT_Event,
}

impl Event {
    /// Blocks until the operation is done, and returns its error if it
    /// failed. An absent event means there is nothing to wait for.
    pub(super) fn wait(self) -> Option<RawError> {
        if self.raw.is_null() {
            return None;
        }
        let mut args = pjrt_sys::PJRT_Event_Await_Args::new();
        args.event = self.raw;
        // SAFETY: `self.raw` is a live event owned by `self`; the struct is
        // unchanged since 0.54.
        let err = unsafe { (self.fns.await_fn)(&mut args) };
        self.fns.plugin.take_error(err)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        let mut args = pjrt_sys::PJRT_Event_Destroy_Args::new();
        args.event = self.raw;
        // SAFETY: the event is destroyed once, here.
        let err = unsafe { (self.fns.destroy_fn)(&mut args) };
        // Nothing useful can be done with a failure to free.
        let _ = self.fns.plugin.take_error(err);
    }
}

/// An array in a TPU's memory, freed when dropped.
pub struct DeviceBuffer<'c> {
    client: &'c Client,
    pub(super) raw: *mut PJRT_Buffer,
}

impl<'c> DeviceBuffer<'c> {
    /// Takes ownership of a buffer libtpu returned.
    pub(super) fn own(client: &'c Client, raw: *mut PJRT_Buffer) -> DeviceBuffer<'c> {
        DeviceBuffer { client, raw }
    }

    /// Copies `array` (called `name` in messages) into the memory of
    /// `device`, one of the client's, and waits until the copy is done.
    pub(super) fn upload(
        client: &'c Client,
        device: *mut PJRT_Device,
        name: &str,
        array: &HostArray,
    ) -> Result<DeviceBuffer<'c>, PjrtError> {
        let operation = || format!("copy input `{name}` to the device");
        let copy = api_fn!(client.plugin, PJRT_Client_BufferFromHostBuffer)?;
        let events = Events::new(client.plugin)?;
        // libtpu reads exactly the bytes the type and dimensions describe,
        // so an array whose data is shorter is refused here.
        let dims: Option<Vec<i64>> = array.shape.iter().map(|&d| i64::try_from(d).ok()).collect();
        let (Some(dims), Some(len)) = (dims, byte_len(array.dtype, &array.shape)) else {
            return Err(refused(operation(), "its shape is too large".into()));
        };
        if array.data.len() != len {
            return Err(refused(
                operation(),
                format!(
                    "{} bytes hold a {}{:?} array, which needs {len}",
                    array.data.len(),
                    array.dtype,
                    array.shape
                ),
            ));
        }
        let mut args = pjrt_sys::PJRT_Client_BufferFromHostBuffer_Args::new();
        args.client = client.raw;
        args.data = array.data.as_ptr().cast::<c_void>();
        args.type_ = buffer_type(array.dtype);
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        // No strides: the host data is dense and row-major. libtpu copies it
        // during the call, so `array` may change as soon as the call returns.
        args.host_buffer_semantics =
            pjrt_sys::PJRT_HostBufferSemantics_PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
        args.device = device;
        // SAFETY: `data` holds exactly the bytes `type_` and `dims` describe
        // (checked above) and, like `dims`, outlives the call and the wait
        // below; `device` belongs to `client`; the struct is unchanged since
        // 0.54 (libtpu 0.0.51 expects its 120 bytes).
        let err = unsafe { copy(&mut args) };
        if let Some(e) = client.plugin.take_error(err) {
            return Err(failed(operation(), e));
        }
        let done = events.own(args.done_with_host_buffer);
        let buffer = DeviceBuffer::own(client, args.buffer);
        if let Some(e) = done.wait() {
            return Err(failed(operation(), e));
        }
        if buffer.raw.is_null() {
            return Err(refused(
                operation(),
                "libtpu returned no buffer and no error".into(),
            ));
        }
        Ok(buffer)
    }

    /// The element type of the array.
    pub fn element_type(&self) -> Result<PJRT_Buffer_Type, PjrtError> {
        let f = api_fn!(self.client.plugin, PJRT_Buffer_ElementType)?;
        let mut args = pjrt_sys::PJRT_Buffer_ElementType_Args::new();
        args.buffer = self.raw;
        // SAFETY: `self.raw` is a live buffer; the struct is unchanged since
        // 0.54.
        let err = unsafe { f(&mut args) };
        if let Some(e) = self.client.plugin.take_error(err) {
            return Err(failed("read an array's element type".into(), e));
        }
        Ok(args.type_)
    }

    /// The dimensions of the array, outermost first.
    pub fn dims(&self) -> Result<Vec<usize>, PjrtError> {
        let f = api_fn!(self.client.plugin, PJRT_Buffer_Dimensions)?;
        let mut args = pjrt_sys::PJRT_Buffer_Dimensions_Args::new();
        args.buffer = self.raw;
        // SAFETY: as in `element_type`.
        let err = unsafe { f(&mut args) };
        if let Some(e) = self.client.plugin.take_error(err) {
            return Err(failed("read an array's dimensions".into(), e));
        }
        // SAFETY: the dimensions live as long as the buffer.
        let dims = unsafe { raw_slice(args.dims, args.num_dims) };
        dims.iter()
            .map(|&d| usize::try_from(d).ok())
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| {
                refused(
                    "read an array's dimensions".into(),
                    format!("libtpu reports dimensions {dims:?}"),
                )
            })
    }

    /// Copies the array (called `name` in messages) back to the host as a
    /// row-major array of `dtype`, which must be the dtype whose element
    /// type it has.
    pub fn to_host(&self, name: &str, dtype: DType) -> Result<HostArray, PjrtError> {
        let operation = || format!("copy output `{name}` back");
        let copy = api_fn!(self.client.plugin, PJRT_Buffer_ToHostBuffer)?;
        let events = Events::new(self.client.plugin)?;
        let ty = self.element_type()?;
        if ty != buffer_type(dtype) {
            return Err(refused(
                operation(),
                format!(
                    "it holds {} elements, not the {} of a {dtype} array",
                    type_name(ty),
                    type_name(buffer_type(dtype))
                ),
            ));
        }
        let shape = self.dims()?;
        let Some(len) = byte_len(dtype, &shape) else {
            return Err(refused(
                operation(),
                format!("its shape {shape:?} is too large"),
            ));
        };
        let mut data = vec![0u8; len];
        // The device keeps arrays in tiled layouts of its own; asking for
        // the dimensions in descending order without tiles gets the dense
        // row-major bytes a HostArray holds.
        let minor_to_major: Vec<i64> = (0..shape.len() as i64).rev().collect();
        let mut layout = pjrt_sys::PJRT_Buffer_MemoryLayout::new();
        layout.type_ = pjrt_sys::PJRT_Buffer_MemoryLayout_Type_PJRT_Buffer_MemoryLayout_Type_Tiled;
        let mut tiled = pjrt_sys::PJRT_Buffer_MemoryLayout_Tiled::new();
        tiled.minor_to_major = minor_to_major.as_ptr();
        tiled.minor_to_major_size = minor_to_major.len();
        layout.__bindgen_anon_1.tiled = tiled;
        let mut args = pjrt_sys::PJRT_Buffer_ToHostBuffer_Args::new();
        args.src = self.raw;
        args.host_layout = &mut layout;
        args.dst = data.as_mut_ptr().cast::<c_void>();
        args.dst_size = data.len();
        // SAFETY: `dst` has `dst_size` bytes, the size of the array in the
        // requested layout, and stays alive and untouched until the copy's
        // event is waited for below; `layout` and `minor_to_major` outlive
        // the call; the structs are unchanged since 0.54.
        let err = unsafe { copy(&mut args) };
        if let Some(e) = self.client.plugin.take_error(err) {
            return Err(failed(operation(), e));
        }
        if args.event.is_null() {
            // Without its event there is no telling when libtpu is done
            // writing `data`, so the bytes are leaked rather than freed
            // under a copy that may still be running.
            std::mem::forget(data);
            return Err(refused(
                operation(),
                "libtpu returned no completion event for the copy".into(),
            ));
        }
        if let Some(e) = events.own(args.event).wait() {
            return Err(failed(operation(), e));
        }
        Ok(HostArray::new(dtype, shape, data))
    }
}

impl Drop for DeviceBuffer<'_> {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        if let Ok(destroy) = api_fn!(self.client.plugin, PJRT_Buffer_Destroy) {
            let mut args = pjrt_sys::PJRT_Buffer_Destroy_Args::new();
            args.buffer = self.raw;
            // SAFETY: the buffer is destroyed once, here; libtpu keeps the
            // memory until operations still using it are done.
            let err = unsafe { destroy(&mut args) };
            // Nothing useful can be done with a failure to free.
            let _ = self.client.plugin.take_error(err);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pk dtype has the element type its StableHLO module declares
    /// (`tensor<...xi32>` for bool), and the element size of its host
    /// storage, so host bytes go to the device and back unchanged.
    #[test]
    fn every_dtype_maps_to_its_device_element_type() {
        let want = [
            (DType::F32, "f32"),
            (DType::BF16, "bf16"),
            (DType::I32, "s32"),
            (DType::I16, "s16"),
            (DType::I8, "s8"),
            (DType::U8, "u8"),
            (DType::Bool, "s32"),
            (DType::F8E4M3FN, "f8e4m3fn"),
            (DType::F8E5M2, "f8e5m2"),
        ];
        assert_eq!(want.len(), DType::ALL.len());
        for (dtype, name) in want {
            let t = buffer_type(dtype);
            assert_eq!(type_name(t), name, "{dtype}");
            assert_eq!(
                describe(t).map(|(_, n)| n),
                Some(dtype.bytes() as usize),
                "{dtype}"
            );
            let array = HostArray::zeros(dtype, &[3, 5]);
            assert_eq!(
                byte_len(dtype, &array.shape),
                Some(array.data.len()),
                "{dtype}"
            );
        }
        assert_eq!(
            buffer_type(DType::F8E4M3FN),
            pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_F8E4M3FN
        );
        assert_eq!(
            type_name(pjrt_sys::PJRT_Buffer_Type_PJRT_Buffer_Type_PRED),
            "element type 1"
        );
        assert_eq!(byte_len(DType::F32, &[usize::MAX, 2]), None);
    }
}
