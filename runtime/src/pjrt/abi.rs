//! The argument-struct sizes pk declares to libtpu, and the structs whose
//! layout grew after the PJRT C API 0.54 that pjrt-sys binds.
//!
//! PJRT only ever appends fields to an argument struct, and a plugin reads
//! `struct_size` to learn how much of the struct the caller filled in. Most
//! of the structs pk uses are unchanged between 0.54 and the 0.116 of
//! libtpu 0.0.51, so pjrt-sys's definitions serve. Three are not:
//!
//! - `PJRT_Executable_GetCompiledMemoryStats_Args` gained
//!   `peak_memory_in_bytes`; libtpu 0.0.51 refuses the 0.54 size with
//!   "expected 112, got 104". [`CompiledMemoryStatsArgs`] has the newer
//!   fields (and later ones as zeroed room the plugin may write into).
//! - `PJRT_Client_Create_Args` gained `kv_try_get_callback` and its user
//!   argument; [`ClientCreateArgs`] has them.
//! - `PJRT_ExecuteOptions` (passed inside `PJRT_LoadedExecutable_Execute_Args`)
//!   gained an execute context, a call location and per-task incarnation ids;
//!   libtpu 0.0.51 refuses the 0.54 size with "expected 112, got 72".
//!   [`ExecuteOptions`] has them.
//!
//! One more is declared with its true size although its layout did not
//! change: the 0.54 header computes `PJRT_Plugin_Attributes_Args`'s size up
//! to `attributes`, leaving out the `num_attributes` that follows.
//!
//! invariant: every `*_SIZE` below is the size of the struct's fields up to
//! and including the last one pk knows, in the plugin's layout.

use std::mem::{offset_of, size_of};
use std::os::raw::c_void;
use std::ptr;

use pjrt_sys::{
    PJRT_Client, PJRT_Executable, PJRT_Extension_Base, PJRT_NamedValue, PJRT_RecvCallbackInfo,
    PJRT_SendCallbackInfo,
};

/// `PJRT_Executable_GetCompiledMemoryStats_Args` as of PJRT C API 0.116.
///
/// The trailing fields were added after `peak_memory_in_bytes` in later API
/// versions; they are declared so that a plugin which fills them writes into
/// this struct, never past it. pk reads only fields up to
/// `peak_memory_in_bytes`.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct CompiledMemoryStatsArgs {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub executable: *mut PJRT_Executable,
    pub generated_code_size_in_bytes: i64,
    pub argument_size_in_bytes: i64,
    pub output_size_in_bytes: i64,
    pub alias_size_in_bytes: i64,
    pub temp_size_in_bytes: i64,
    pub host_generated_code_size_in_bytes: i64,
    pub host_argument_size_in_bytes: i64,
    pub host_output_size_in_bytes: i64,
    pub host_alias_size_in_bytes: i64,
    pub host_temp_size_in_bytes: i64,
    pub peak_memory_in_bytes: i64,
    pub total_size_in_bytes: i64,
    pub total_allocation_bytes: i64,
    pub indefinite_allocations: i64,
    pub peak_unpadded_heap_bytes: i64,
}

/// The size libtpu 0.0.51 requires: fields up to `peak_memory_in_bytes`.
pub(crate) const COMPILED_MEMORY_STATS_SIZE: usize =
    offset_of!(CompiledMemoryStatsArgs, peak_memory_in_bytes) + size_of::<i64>();

const _: () = assert!(COMPILED_MEMORY_STATS_SIZE == 112);
const _: () = assert!(
    pjrt_sys::PJRT_Executable_GetCompiledMemoryStats_Args_STRUCT_SIZE as usize
        == offset_of!(CompiledMemoryStatsArgs, peak_memory_in_bytes)
);

impl CompiledMemoryStatsArgs {
    pub(crate) fn new(executable: *mut PJRT_Executable) -> Self {
        CompiledMemoryStatsArgs {
            struct_size: COMPILED_MEMORY_STATS_SIZE,
            extension_start: ptr::null_mut(),
            executable,
            generated_code_size_in_bytes: 0,
            argument_size_in_bytes: 0,
            output_size_in_bytes: 0,
            alias_size_in_bytes: 0,
            temp_size_in_bytes: 0,
            host_generated_code_size_in_bytes: 0,
            host_argument_size_in_bytes: 0,
            host_output_size_in_bytes: 0,
            host_alias_size_in_bytes: 0,
            host_temp_size_in_bytes: 0,
            peak_memory_in_bytes: 0,
            total_size_in_bytes: 0,
            total_allocation_bytes: 0,
            indefinite_allocations: 0,
            peak_unpadded_heap_bytes: 0,
        }
    }
}

/// `PJRT_Client_Create_Args` as of PJRT C API 0.116: the 0.54 fields, then
/// the try-get key-value callback.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct ClientCreateArgs {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub create_options: *const PJRT_NamedValue,
    pub num_options: usize,
    pub kv_get_callback: *mut c_void,
    pub kv_get_user_arg: *mut c_void,
    pub kv_put_callback: *mut c_void,
    pub kv_put_user_arg: *mut c_void,
    pub client: *mut PJRT_Client,
    pub kv_try_get_callback: *mut c_void,
    pub kv_try_get_user_arg: *mut c_void,
}

pub(crate) const CLIENT_CREATE_SIZE: usize = size_of::<ClientCreateArgs>();

const _: () = assert!(
    pjrt_sys::PJRT_Client_Create_Args_STRUCT_SIZE as usize
        == offset_of!(ClientCreateArgs, kv_try_get_callback)
);

impl ClientCreateArgs {
    pub(crate) fn new() -> Self {
        ClientCreateArgs {
            struct_size: CLIENT_CREATE_SIZE,
            extension_start: ptr::null_mut(),
            create_options: ptr::null(),
            num_options: 0,
            kv_get_callback: ptr::null_mut(),
            kv_get_user_arg: ptr::null_mut(),
            kv_put_callback: ptr::null_mut(),
            kv_put_user_arg: ptr::null_mut(),
            client: ptr::null_mut(),
            kv_try_get_callback: ptr::null_mut(),
            kv_try_get_user_arg: ptr::null_mut(),
        }
    }
}

/// `PJRT_ExecuteOptions` as of PJRT C API 0.116: the 0.54 fields, then the
/// execute context, call location and task incarnations, none of which pk
/// uses (all null or zero).
///
/// The trailing fields come from later API versions; as in
/// [`CompiledMemoryStatsArgs`] they are declared, zeroed, so that a plugin
/// reading them finds "not set" rather than whatever follows the struct.
/// `struct_size` covers only the fields up to `incarnation_ids`.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct ExecuteOptions {
    pub struct_size: usize,
    pub extension_start: *mut PJRT_Extension_Base,
    pub send_callbacks: *mut *mut PJRT_SendCallbackInfo,
    pub recv_callbacks: *mut *mut PJRT_RecvCallbackInfo,
    pub num_send_ops: usize,
    pub num_recv_ops: usize,
    pub launch_id: std::os::raw::c_int,
    pub non_donatable_input_indices: *const i64,
    pub num_non_donatable_input_indices: usize,
    pub context: *mut c_void,
    pub call_location: *const std::os::raw::c_char,
    pub num_tasks: usize,
    pub task_ids: *mut std::os::raw::c_int,
    pub incarnation_ids: *mut i64,
    pub multi_slice_config: *mut c_void,
    pub use_major_to_minor_data_layout_for_callbacks: bool,
    pub hlo_output_callbacks: *mut c_void,
    pub num_hlo_output_callbacks: usize,
}

/// The size libtpu 0.0.51 requires: fields up to `incarnation_ids`.
pub(crate) const EXECUTE_OPTIONS_SIZE: usize =
    offset_of!(ExecuteOptions, incarnation_ids) + size_of::<*mut i64>();

const _: () = assert!(EXECUTE_OPTIONS_SIZE == 112);
const _: () = assert!(
    pjrt_sys::PJRT_ExecuteOptions_STRUCT_SIZE as usize == offset_of!(ExecuteOptions, context)
);

impl ExecuteOptions {
    pub(crate) fn new() -> Self {
        ExecuteOptions {
            struct_size: EXECUTE_OPTIONS_SIZE,
            extension_start: ptr::null_mut(),
            send_callbacks: ptr::null_mut(),
            recv_callbacks: ptr::null_mut(),
            num_send_ops: 0,
            num_recv_ops: 0,
            launch_id: 0,
            non_donatable_input_indices: ptr::null(),
            num_non_donatable_input_indices: 0,
            context: ptr::null_mut(),
            call_location: ptr::null(),
            num_tasks: 0,
            task_ids: ptr::null_mut(),
            incarnation_ids: ptr::null_mut(),
            multi_slice_config: ptr::null_mut(),
            use_major_to_minor_data_layout_for_callbacks: false,
            hlo_output_callbacks: ptr::null_mut(),
            num_hlo_output_callbacks: 0,
        }
    }
}

/// `PJRT_Plugin_Attributes_Args` up to and including `num_attributes`.
pub(crate) const PLUGIN_ATTRIBUTES_SIZE: usize = size_of::<pjrt_sys::PJRT_Plugin_Attributes_Args>();

const _: () = assert!(PLUGIN_ATTRIBUTES_SIZE == 32);
