//! Raw declarations of onyx's C API (`include/onyx/c_api.h`, API version 1), written by hand to
//! match the header exactly. Everything here is `unsafe` to call; the rest of the crate wraps it.
//!
//! Handles are opaque structs that can only be used behind pointers. The header's enumerations
//! are `int32_t` typedefs with named constants, kept here as `i32` and `const`s; booleans are
//! `c_int`.

#![allow(non_camel_case_types)]

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_int, c_void};

macro_rules! opaque {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            #[repr(C)]
            pub struct $name {
                _private: [u8; 0],
                _not_send_sync_unpin: PhantomData<(*mut u8, PhantomPinned)>,
            }
        )*
    };
}

opaque!(
    /// An error: code and message.
    OnyxStatus,
    /// Environment settings (default EPs).
    OnyxEnv,
    /// Options for new sessions.
    OnyxSessionBuilder,
    /// A loaded, prepared model.
    OnyxSession,
    /// A model input or output (borrowed from its session).
    OnyxIoInfo,
    /// An n-dimensional array on the host.
    OnyxTensor,
    /// Per-run options (cancellation).
    OnyxRunOptions,
    /// Where every node of a session runs, and why.
    OnyxPlacement,
    /// How far an EP gets on this machine.
    OnyxEpAvailability,
);

pub const ONYX_C_API_VERSION: u32 = 1;

pub type OnyxErrorCode = i32;
pub const ONYX_OK: OnyxErrorCode = 0;
pub const ONYX_ERROR_INVALID_ARGUMENT: OnyxErrorCode = 1;
pub const ONYX_ERROR_INVALID_MODEL: OnyxErrorCode = 2;
pub const ONYX_ERROR_INVALID_GRAPH: OnyxErrorCode = 3;
pub const ONYX_ERROR_NOT_IMPLEMENTED: OnyxErrorCode = 4;
pub const ONYX_ERROR_RUNTIME: OnyxErrorCode = 5;
pub const ONYX_ERROR_IO: OnyxErrorCode = 6;
pub const ONYX_ERROR_EP_FAILURE: OnyxErrorCode = 7;
pub const ONYX_ERROR_NOT_AVAILABLE: OnyxErrorCode = 8;
pub const ONYX_ERROR_CANCELLED: OnyxErrorCode = 9;
pub const ONYX_ERROR_OUT_OF_MEMORY: OnyxErrorCode = 10;
pub const ONYX_ERROR_INTERNAL: OnyxErrorCode = 11;

pub type OnyxElementType = i32;
pub const ONYX_TYPE_UNDEFINED: OnyxElementType = 0;
pub const ONYX_TYPE_FLOAT: OnyxElementType = 1;
pub const ONYX_TYPE_UINT8: OnyxElementType = 2;
pub const ONYX_TYPE_INT8: OnyxElementType = 3;
pub const ONYX_TYPE_UINT16: OnyxElementType = 4;
pub const ONYX_TYPE_INT16: OnyxElementType = 5;
pub const ONYX_TYPE_INT32: OnyxElementType = 6;
pub const ONYX_TYPE_INT64: OnyxElementType = 7;
pub const ONYX_TYPE_STRING: OnyxElementType = 8;
pub const ONYX_TYPE_BOOL: OnyxElementType = 9;
pub const ONYX_TYPE_FLOAT16: OnyxElementType = 10;
pub const ONYX_TYPE_DOUBLE: OnyxElementType = 11;
pub const ONYX_TYPE_UINT32: OnyxElementType = 12;
pub const ONYX_TYPE_UINT64: OnyxElementType = 13;
pub const ONYX_TYPE_COMPLEX64: OnyxElementType = 14;
pub const ONYX_TYPE_COMPLEX128: OnyxElementType = 15;
pub const ONYX_TYPE_BFLOAT16: OnyxElementType = 16;
pub const ONYX_TYPE_FLOAT8E4M3FN: OnyxElementType = 17;
pub const ONYX_TYPE_FLOAT8E4M3FNUZ: OnyxElementType = 18;
pub const ONYX_TYPE_FLOAT8E5M2: OnyxElementType = 19;
pub const ONYX_TYPE_FLOAT8E5M2FNUZ: OnyxElementType = 20;
pub const ONYX_TYPE_UINT4: OnyxElementType = 21;
pub const ONYX_TYPE_INT4: OnyxElementType = 22;
pub const ONYX_TYPE_FLOAT4E2M1: OnyxElementType = 23;
pub const ONYX_TYPE_FLOAT8E8M0: OnyxElementType = 24;
pub const ONYX_TYPE_UINT2: OnyxElementType = 25;
pub const ONYX_TYPE_INT2: OnyxElementType = 26;

pub type OnyxValueKind = i32;
pub const ONYX_VALUE_TENSOR: OnyxValueKind = 1;
pub const ONYX_VALUE_SEQUENCE: OnyxValueKind = 2;
pub const ONYX_VALUE_OPTIONAL: OnyxValueKind = 3;
pub const ONYX_VALUE_MAP: OnyxValueKind = 4;

pub type OnyxOptimizationLevel = i32;
pub const ONYX_OPTIMIZATION_DISABLED: OnyxOptimizationLevel = 0;
pub const ONYX_OPTIMIZATION_BASIC: OnyxOptimizationLevel = 1;
pub const ONYX_OPTIMIZATION_ALL: OnyxOptimizationLevel = 2;

pub type OnyxEpSource = i32;
pub const ONYX_EP_SOURCE_SESSION: OnyxEpSource = 0;
pub const ONYX_EP_SOURCE_ENVIRONMENT: OnyxEpSource = 1;
pub const ONYX_EP_SOURCE_IMPLICIT: OnyxEpSource = 2;

pub type OnyxEpOutcome = i32;
pub const ONYX_EP_REGISTERED: OnyxEpOutcome = 0;
pub const ONYX_EP_SKIPPED: OnyxEpOutcome = 1;
pub const ONYX_EP_DUPLICATE: OnyxEpOutcome = 2;

pub type OnyxLogLevel = i32;
pub const ONYX_LOG_VERBOSE: OnyxLogLevel = 0;
pub const ONYX_LOG_INFO: OnyxLogLevel = 1;
pub const ONYX_LOG_WARNING: OnyxLogLevel = 2;
pub const ONYX_LOG_ERROR: OnyxLogLevel = 3;
pub const ONYX_LOG_OFF: OnyxLogLevel = 4;

// The library is linked by build.rs (cargo:rustc-link-lib=dylib=onyx).
extern "C" {
    // Versions, statuses, logging
    pub fn onyx_api_version() -> u32;
    pub fn onyx_version_string() -> *const c_char;
    pub fn onyx_status_code(status: *const OnyxStatus) -> OnyxErrorCode;
    pub fn onyx_status_message(status: *const OnyxStatus) -> *const c_char;
    pub fn onyx_status_release(status: *mut OnyxStatus);
    pub fn onyx_error_code_name(code: OnyxErrorCode) -> *const c_char;
    pub fn onyx_set_log_level(level: OnyxLogLevel) -> *mut OnyxStatus;

    // Execution providers
    pub fn onyx_ep_availability(name: *const c_char, out: *mut *mut OnyxEpAvailability) -> *mut OnyxStatus;
    pub fn onyx_ep_availability_get(
        availability: *const OnyxEpAvailability,
        built: *mut c_int,
        loadable: *mut c_int,
        usable: *mut c_int,
        reason: *mut *const c_char,
        version: *mut *const c_char,
        module: *mut *const c_char,
    ) -> *mut OnyxStatus;
    pub fn onyx_ep_availability_release(availability: *mut OnyxEpAvailability);

    // Environment
    pub fn onyx_env_create(out: *mut *mut OnyxEnv) -> *mut OnyxStatus;
    pub fn onyx_env_add_execution_provider(
        env: *mut OnyxEnv,
        name: *const c_char,
        option_keys: *const *const c_char,
        option_values: *const *const c_char,
        num_options: usize,
        error_on_failure: c_int,
    ) -> *mut OnyxStatus;
    pub fn onyx_env_commit(env: *const OnyxEnv) -> *mut OnyxStatus;
    pub fn onyx_env_release(env: *mut OnyxEnv);

    // Session builder
    pub fn onyx_session_builder_create(out: *mut *mut OnyxSessionBuilder) -> *mut OnyxStatus;
    pub fn onyx_session_builder_release(builder: *mut OnyxSessionBuilder);
    pub fn onyx_session_builder_add_execution_provider(
        builder: *mut OnyxSessionBuilder,
        name: *const c_char,
        option_keys: *const *const c_char,
        option_values: *const *const c_char,
        num_options: usize,
        error_on_failure: c_int,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_builder_disable_environment_execution_providers(
        builder: *mut OnyxSessionBuilder,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_builder_set_cpu_fallback(builder: *mut OnyxSessionBuilder, allowed: c_int) -> *mut OnyxStatus;
    pub fn onyx_session_builder_set_intra_threads(builder: *mut OnyxSessionBuilder, threads: i32) -> *mut OnyxStatus;
    pub fn onyx_session_builder_set_intra_op_spinning(
        builder: *mut OnyxSessionBuilder,
        allowed: c_int,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_builder_set_optimization_level(
        builder: *mut OnyxSessionBuilder,
        level: OnyxOptimizationLevel,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_builder_set_memory_limit(builder: *mut OnyxSessionBuilder, bytes: u64) -> *mut OnyxStatus;
    pub fn onyx_session_builder_set_dimension_override(
        builder: *mut OnyxSessionBuilder,
        name: *const c_char,
        value: i64,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_builder_set_input_dimension(
        builder: *mut OnyxSessionBuilder,
        input: *const c_char,
        axis: usize,
        value: i64,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_builder_set_external_data_dir(
        builder: *mut OnyxSessionBuilder,
        dir: *const c_char,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_builder_set_optimized_model_file(
        builder: *mut OnyxSessionBuilder,
        path: *const c_char,
    ) -> *mut OnyxStatus;

    // Sessions
    pub fn onyx_session_create_from_file(
        builder: *const OnyxSessionBuilder,
        path: *const c_char,
        out: *mut *mut OnyxSession,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_create_from_memory(
        builder: *const OnyxSessionBuilder,
        data: *const c_void,
        size: usize,
        out: *mut *mut OnyxSession,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_release(session: *mut OnyxSession);
    pub fn onyx_session_input_count(session: *const OnyxSession, out: *mut usize) -> *mut OnyxStatus;
    pub fn onyx_session_output_count(session: *const OnyxSession, out: *mut usize) -> *mut OnyxStatus;
    pub fn onyx_session_input_info(
        session: *const OnyxSession,
        index: usize,
        out: *mut *const OnyxIoInfo,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_output_info(
        session: *const OnyxSession,
        index: usize,
        out: *mut *const OnyxIoInfo,
    ) -> *mut OnyxStatus;
    pub fn onyx_io_info_name(info: *const OnyxIoInfo, out: *mut *const c_char) -> *mut OnyxStatus;
    pub fn onyx_io_info_kind(info: *const OnyxIoInfo, out: *mut OnyxValueKind) -> *mut OnyxStatus;
    pub fn onyx_io_info_element_type(info: *const OnyxIoInfo, out: *mut OnyxElementType) -> *mut OnyxStatus;
    pub fn onyx_io_info_shape(info: *const OnyxIoInfo, dims: *mut *const i64, rank: *mut i64) -> *mut OnyxStatus;
    pub fn onyx_io_info_dim_name(info: *const OnyxIoInfo, axis: usize, out: *mut *const c_char) -> *mut OnyxStatus;
    pub fn onyx_io_info_has_default(info: *const OnyxIoInfo, out: *mut c_int) -> *mut OnyxStatus;
    pub fn onyx_io_info_type_string(info: *const OnyxIoInfo, out: *mut *const c_char) -> *mut OnyxStatus;

    // Tensors
    pub fn onyx_tensor_create(
        element_type: OnyxElementType,
        shape: *const i64,
        rank: usize,
        out: *mut *mut OnyxTensor,
    ) -> *mut OnyxStatus;
    pub fn onyx_tensor_create_over_buffer(
        element_type: OnyxElementType,
        shape: *const i64,
        rank: usize,
        data: *mut c_void,
        data_size: usize,
        out: *mut *mut OnyxTensor,
    ) -> *mut OnyxStatus;
    pub fn onyx_tensor_release(tensor: *mut OnyxTensor);
    pub fn onyx_tensor_element_type(tensor: *const OnyxTensor, out: *mut OnyxElementType) -> *mut OnyxStatus;
    pub fn onyx_tensor_shape(tensor: *const OnyxTensor, dims: *mut *const i64, rank: *mut usize) -> *mut OnyxStatus;
    pub fn onyx_tensor_element_count(tensor: *const OnyxTensor, out: *mut i64) -> *mut OnyxStatus;
    pub fn onyx_tensor_size_in_bytes(tensor: *const OnyxTensor, out: *mut usize) -> *mut OnyxStatus;
    pub fn onyx_tensor_data(tensor: *mut OnyxTensor, out: *mut *mut c_void) -> *mut OnyxStatus;
    pub fn onyx_tensor_string(
        tensor: *const OnyxTensor,
        index: usize,
        data: *mut *const c_char,
        length: *mut usize,
    ) -> *mut OnyxStatus;
    pub fn onyx_tensor_set_string(
        tensor: *mut OnyxTensor,
        index: usize,
        data: *const c_char,
        length: usize,
    ) -> *mut OnyxStatus;
    pub fn onyx_element_type_name(element_type: OnyxElementType) -> *const c_char;
    pub fn onyx_element_type_size(element_type: OnyxElementType) -> usize;

    // Running
    pub fn onyx_run_options_create(out: *mut *mut OnyxRunOptions) -> *mut OnyxStatus;
    pub fn onyx_run_options_release(options: *mut OnyxRunOptions);
    pub fn onyx_run_options_terminate(options: *const OnyxRunOptions) -> *mut OnyxStatus;
    pub fn onyx_run_options_reset(options: *const OnyxRunOptions) -> *mut OnyxStatus;
    pub fn onyx_session_run(
        session: *const OnyxSession,
        options: *const OnyxRunOptions,
        input_names: *const *const c_char,
        inputs: *const *const OnyxTensor,
        num_inputs: usize,
        output_names: *const *const c_char,
        num_outputs: usize,
        outputs: *mut *mut OnyxTensor,
    ) -> *mut OnyxStatus;

    // Reports
    pub fn onyx_session_placement(session: *const OnyxSession, out: *mut *mut OnyxPlacement) -> *mut OnyxStatus;
    pub fn onyx_placement_release(placement: *mut OnyxPlacement);
    pub fn onyx_placement_summary(placement: *const OnyxPlacement, out: *mut *const c_char) -> *mut OnyxStatus;
    pub fn onyx_placement_node_count(placement: *const OnyxPlacement, out: *mut usize) -> *mut OnyxStatus;
    pub fn onyx_placement_node(
        placement: *const OnyxPlacement,
        index: usize,
        name: *mut *const c_char,
        op_type: *mut *const c_char,
        domain: *mut *const c_char,
        ep: *mut *const c_char,
        device: *mut *const c_char,
        region: *mut i32,
    ) -> *mut OnyxStatus;
    pub fn onyx_placement_node_decline_count(
        placement: *const OnyxPlacement,
        node: usize,
        out: *mut usize,
    ) -> *mut OnyxStatus;
    pub fn onyx_placement_node_decline(
        placement: *const OnyxPlacement,
        node: usize,
        index: usize,
        ep: *mut *const c_char,
        code: *mut *const c_char,
        message: *mut *const c_char,
    ) -> *mut OnyxStatus;
    pub fn onyx_placement_copy_count(placement: *const OnyxPlacement, out: *mut usize) -> *mut OnyxStatus;
    pub fn onyx_placement_copy(
        placement: *const OnyxPlacement,
        index: usize,
        value: *mut *const c_char,
        from: *mut *const c_char,
        to: *mut *const c_char,
        bytes: *mut i64,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_registration_count(session: *const OnyxSession, out: *mut usize) -> *mut OnyxStatus;
    pub fn onyx_session_registration(
        session: *const OnyxSession,
        index: usize,
        name: *mut *const c_char,
        source: *mut OnyxEpSource,
        outcome: *mut OnyxEpOutcome,
        reason: *mut *const c_char,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_registration_details(
        session: *const OnyxSession,
        index: usize,
        priority: *mut i32,
        version: *mut *const c_char,
        device: *mut *const c_char,
        module: *mut *const c_char,
        error_on_failure: *mut c_int,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_registration_option_count(
        session: *const OnyxSession,
        index: usize,
        out: *mut usize,
    ) -> *mut OnyxStatus;
    pub fn onyx_session_registration_option(
        session: *const OnyxSession,
        index: usize,
        option: usize,
        key: *mut *const c_char,
        value: *mut *const c_char,
    ) -> *mut OnyxStatus;
}
