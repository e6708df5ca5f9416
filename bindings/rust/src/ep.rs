//! Execution providers (EPs): one struct per EP of onyx's table, each a builder of options that
//! `build()`s an [`ExecutionProviderDispatch`] for
//! [`SessionBuilder::with_execution_providers`](crate::session::SessionBuilder::with_execution_providers)
//! or [`EnvironmentBuilder::with_execution_providers`](crate::EnvironmentBuilder::with_execution_providers).
//!
//! Every node of a model runs on the first registered EP that takes it; the CPU EP takes the rest.
//! An EP that cannot register here (not built into this onyx, its library or device missing) is
//! skipped, unless its dispatch asked for [`error_on_failure`](ExecutionProviderDispatch::error_on_failure).
//! The typed methods set the options `onyx providers` lists; [`with_option`](CUDA::with_option)
//! sets any option by key. An unknown key or a malformed value makes session creation fail
//! whether or not the EP can register.

use std::os::raw::{c_char, c_int};
use std::ptr;

use crate::error::{check, cstring, string_from, Error, ErrorCode, Result};
use crate::session::SessionBuilder;
use crate::sys;

/// A configured EP ready to register: its name, its options, and whether failing to register it
/// is an error instead of a silent skip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionProviderDispatch {
    name: String,
    options: Vec<(String, String)>,
    error_on_failure: bool,
}

impl ExecutionProviderDispatch {
    /// A dispatch for the EP called `name` (as `onyx providers` lists it), with no options. A name
    /// onyx does not know is skipped at registration (or an error with `error_on_failure`), unless
    /// the option `module_path` names a third-party EP module.
    pub fn new(name: impl Into<String>) -> ExecutionProviderDispatch {
        ExecutionProviderDispatch { name: name.into(), options: Vec::new(), error_on_failure: false }
    }

    /// Sets option `key` to `value` (a key set twice keeps the last value).
    pub fn with_option(mut self, key: impl Into<String>, value: impl Into<String>) -> ExecutionProviderDispatch {
        set_option(&mut self.options, key.into(), value.into());
        self
    }

    /// Makes a failure to register this EP an error instead of a skip:
    /// `with_execution_providers` fails at once when onyx reports the EP unusable here, and
    /// session creation fails if registering it fails later.
    pub fn error_on_failure(mut self) -> ExecutionProviderDispatch {
        self.error_on_failure = true;
        self
    }

    /// The EP's name ("cpu", "cuda", ...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The options set on it, in the order they were first set.
    pub fn options(&self) -> &[(String, String)] {
        &self.options
    }

    /// Whether it was asked for with [`error_on_failure`](Self::error_on_failure).
    pub fn is_error_on_failure(&self) -> bool {
        self.error_on_failure
    }
}

fn set_option(options: &mut Vec<(String, String)>, key: String, value: String) {
    match options.iter_mut().find(|(k, _)| *k == key) {
        Some(entry) => entry.1 = value,
        None => options.push((key, value)),
    }
}

fn flag(on: bool) -> &'static str {
    if on {
        "true"
    } else {
        "false"
    }
}

/// How far an EP gets on this machine: each level implies the previous one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Availability {
    /// Built into this onyx (or its module exists).
    pub built: bool,
    /// Its module and the libraries it needs load.
    pub loadable: bool,
    /// It has a device to run on: registering it can succeed.
    pub usable: bool,
    /// Why the first missing level is missing ("" when usable).
    pub reason: String,
    /// The EP's version (once loadable).
    pub version: String,
    /// The path of its module ("" when built into libonyx).
    pub module: String,
}

/// How far the EP called `name` gets on this machine (`onyx_ep_availability`). An unknown name is
/// not an error: its reason says so.
pub fn availability(name: &str) -> Result<Availability> {
    let c_name = cstring("execution provider name", name)?;
    let mut raw: *mut sys::OnyxEpAvailability = ptr::null_mut();
    // SAFETY: valid C string and output pointer.
    check(unsafe { sys::onyx_ep_availability(c_name.as_ptr(), &mut raw) })?;
    let guard = AvailabilityHandle(raw);
    let (mut built, mut loadable, mut usable): (c_int, c_int, c_int) = (0, 0, 0);
    let (mut reason, mut version, mut module): (*const c_char, *const c_char, *const c_char) =
        (ptr::null(), ptr::null(), ptr::null());
    // SAFETY: `guard.0` is the live handle made above; every output pointer is valid.
    check(unsafe {
        sys::onyx_ep_availability_get(guard.0, &mut built, &mut loadable, &mut usable, &mut reason, &mut version, &mut module)
    })?;
    // SAFETY: the strings are borrowed from the handle, which lives until `guard` drops below.
    let a = unsafe {
        Availability {
            built: built != 0,
            loadable: loadable != 0,
            usable: usable != 0,
            reason: string_from(reason),
            version: string_from(version),
            module: string_from(module),
        }
    };
    drop(guard);
    Ok(a)
}

struct AvailabilityHandle(*mut sys::OnyxEpAvailability);

impl Drop for AvailabilityHandle {
    fn drop(&mut self) {
        // SAFETY: the handle came from onyx_ep_availability (NULL is accepted) and is released once.
        unsafe { sys::onyx_ep_availability_release(self.0) }
    }
}

/// Registers an EP on a builder with `error_on_failure`, after checking that onyx reports it usable
/// here (an EP loaded from `module_path` is checked when the session is created instead).
pub(crate) fn register_checked(name: &str, options: &[(String, String)], builder: &SessionBuilder) -> Result<()> {
    if !options.iter().any(|(k, _)| k == "module_path") {
        let a = availability(name)?;
        if !a.usable {
            let code = if a.built { ErrorCode::EpFailure } else { ErrorCode::NotAvailable };
            return Err(Error::new(code, format!("cannot register execution provider '{name}': {}", a.reason)));
        }
    }
    builder.add_execution_provider(name, options, true)
}

/// What every EP struct can do: tell its name and options, say whether onyx can use it here, and
/// register itself on a session builder.
pub trait ExecutionProvider {
    /// The EP's name as `onyx providers` lists it ("cpu", "cuda", ...).
    fn name(&self) -> &str;

    /// The options set on it.
    fn options(&self) -> &[(String, String)];

    /// How far the EP gets on this machine (built, loadable, usable, and why not).
    fn availability(&self) -> Result<Availability> {
        availability(self.name())
    }

    /// Whether the EP is usable here: built into this onyx, its libraries loadable, a device
    /// present. Registration can still fail (for instance on a bad option).
    fn is_available(&self) -> bool {
        self.availability().map(|a| a.usable).unwrap_or(false)
    }

    /// Registers the EP on `builder`, after its earlier EPs, with `error_on_failure`: an EP onyx
    /// reports unusable here is an error now (carrying onyx's reason), and a failure to register
    /// it later makes session creation fail.
    fn register(&self, builder: &SessionBuilder) -> Result<()> {
        register_checked(self.name(), self.options(), builder)
    }
}

impl ExecutionProvider for ExecutionProviderDispatch {
    fn name(&self) -> &str {
        &self.name
    }
    fn options(&self) -> &[(String, String)] {
        &self.options
    }
}

macro_rules! execution_providers {
    ($($(#[$doc:meta])* $ty:ident => $name:literal;)*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Default, PartialEq, Eq)]
            pub struct $ty {
                options: Vec<(String, String)>,
            }

            impl $ty {
                /// The EP with every option at its default.
                pub fn new() -> Self {
                    Self::default()
                }

                /// Sets any option the EP publishes, by key (`onyx providers` lists them).
                pub fn with_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
                    set_option(&mut self.options, key.into(), value.into());
                    self
                }

                /// The dispatch to register: pass it to `with_execution_providers`.
                pub fn build(self) -> ExecutionProviderDispatch {
                    ExecutionProviderDispatch { name: $name.to_string(), options: self.options, error_on_failure: false }
                }
            }

            impl ExecutionProvider for $ty {
                fn name(&self) -> &str {
                    $name
                }
                fn options(&self) -> &[(String, String)] {
                    &self.options
                }
            }

            impl From<$ty> for ExecutionProviderDispatch {
                fn from(ep: $ty) -> ExecutionProviderDispatch {
                    ep.build()
                }
            }
        )*

        /// The name of every EP of onyx's table, in its order (`onyx providers`).
        pub const NAMES: &[&str] = &[$($name),*];
    };
}

execution_providers! {
    /// The built-in CPU EP: always available, it takes every node no other EP claims.
    CPU => "cpu";
    /// oneDNN (Intel's deep learning library) on the CPU.
    OneDNN => "onednn";
    /// XNNPACK (Google's neural network operator library) on the CPU.
    XNNPACK => "xnnpack";
    /// Vulkan compute: any Vulkan 1.1 device, Mesa's lavapipe on the CPU included.
    Vulkan => "vulkan";
    /// NVIDIA CUDA (cuBLAS, cuDNN and onyx's own kernels).
    CUDA => "cuda";
    /// NVIDIA TensorRT.
    TensorRT => "tensorrt";
    /// NVIDIA TensorRT for RTX.
    TensorRTRTX => "tensorrt_rtx";
    /// Microsoft DirectML.
    DirectML => "directml";
    /// Apple Core ML.
    CoreML => "coreml";
    /// AMD ROCm.
    ROCm => "rocm";
    /// Intel OpenVINO (its CPU plugin, and GPU or NPU where their plugins and devices are).
    OpenVINO => "openvino";
    /// Qualcomm QNN.
    QNN => "qnn";
    /// Huawei CANN.
    CANN => "cann";
    /// Android NNAPI.
    NNAPI => "nnapi";
    /// Apache TVM.
    TVM => "tvm";
    /// Arm Compute Library.
    ACL => "acl";
    /// Arm NN.
    ArmNN => "armnn";
    /// AMD MIGraphX.
    MIGraphX => "migraphx";
    /// AMD Vitis AI.
    VitisAI => "vitis_ai";
    /// Rockchip RKNPU.
    RKNPU => "rknpu";
    /// WebGPU.
    WebGPU => "webgpu";
    /// Microsoft Azure (remote inference).
    Azure => "azure";
}

/// Another name of [`TensorRTRTX`].
pub type NVRTX = TensorRTRTX;
/// Another name of [`VitisAI`].
pub type Vitis = VitisAI;

/// An EP by name, for EPs without a struct here: a third-party EP module (set its `module_path`
/// option) or a name read from a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Custom {
    name: String,
    options: Vec<(String, String)>,
}

impl Custom {
    /// The EP called `name`.
    pub fn new(name: impl Into<String>) -> Custom {
        Custom { name: name.into(), options: Vec::new() }
    }

    /// Sets any option by key.
    pub fn with_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Custom {
        set_option(&mut self.options, key.into(), value.into());
        self
    }

    /// The dispatch to register.
    pub fn build(self) -> ExecutionProviderDispatch {
        ExecutionProviderDispatch { name: self.name, options: self.options, error_on_failure: false }
    }
}

impl ExecutionProvider for Custom {
    fn name(&self) -> &str {
        &self.name
    }
    fn options(&self) -> &[(String, String)] {
        &self.options
    }
}

impl CPU {
    /// Runs 2-d float convolutions and pools channels-last (option `prefer_nhwc`, on by default).
    pub fn with_prefer_nhwc(self, on: bool) -> Self {
        self.with_option("prefer_nhwc", flag(on))
    }
    /// Runs float16 and bfloat16 nodes as float32 ones (option `half_in_float`, on by default).
    pub fn with_half_in_float(self, on: bool) -> Self {
        self.with_option("half_in_float", flag(on))
    }
}

impl OneDNN {
    /// Threads oneDNN may use (option `threads`; 0, the default, is the session's intra-op threads).
    pub fn with_threads(self, threads: u32) -> Self {
        self.with_option("threads", threads.to_string())
    }
    /// The smallest group of connected nodes worth running in oneDNN (option `min_region_nodes`).
    pub fn with_min_region_nodes(self, nodes: u32) -> Self {
        self.with_option("min_region_nodes", nodes.to_string())
    }
    /// Whether a region's intermediates share one scratch buffer (option `arena`, on by default).
    pub fn with_arena(self, on: bool) -> Self {
        self.with_option("arena", flag(on))
    }
}

impl XNNPACK {
    /// Threads of XNNPACK's thread pool (option `threads`; 0, the default, is the session's
    /// intra-op threads).
    pub fn with_threads(self, threads: u32) -> Self {
        self.with_option("threads", threads.to_string())
    }
    /// Whether XNNPACK takes 8-bit nodes and QDQ groups (option `quantized`, on by default).
    pub fn with_quantized(self, on: bool) -> Self {
        self.with_option("quantized", flag(on))
    }
}

impl Vulkan {
    /// The Vulkan device index (option `device_id`; -1, the default, picks the best device).
    pub fn with_device_id(self, id: i32) -> Self {
        self.with_option("device_id", id.to_string())
    }
    /// Device memory (MiB) the EP may hold (option `memory_limit_mb`; 0 is no limit).
    pub fn with_memory_limit_mb(self, mib: u64) -> Self {
        self.with_option("memory_limit_mb", mib.to_string())
    }
    /// Stores float32 tensors as float16 in device memory (option `fp16_storage`, off by default).
    pub fn with_fp16_storage(self, on: bool) -> Self {
        self.with_option("fp16_storage", flag(on))
    }
}

/// Settings of the CUDA EP.
pub mod cuda {
    /// How Conv and ConvTranspose pick a cuDNN algorithm (option `cudnn_conv_algo_search`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub enum ConvAlgorithmSearch {
        /// Benchmark every algorithm, once per input shape (the default).
        #[default]
        Exhaustive,
        /// cuDNN's heuristics.
        Heuristic,
        /// A fixed implicit-GEMM algorithm.
        Default,
    }

    impl ConvAlgorithmSearch {
        pub(crate) fn as_str(self) -> &'static str {
            match self {
                ConvAlgorithmSearch::Exhaustive => "EXHAUSTIVE",
                ConvAlgorithmSearch::Heuristic => "HEURISTIC",
                ConvAlgorithmSearch::Default => "DEFAULT",
            }
        }
    }

    /// How the caching allocator sizes new device blocks (option `arena_extend_strategy`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub enum ArenaExtendStrategy {
        /// Rounded up to a power of two (the default).
        #[default]
        NextPowerOfTwo,
        /// As requested.
        SameAsRequested,
    }

    impl ArenaExtendStrategy {
        pub(crate) fn as_str(self) -> &'static str {
            match self {
                ArenaExtendStrategy::NextPowerOfTwo => "kNextPowerOfTwo",
                ArenaExtendStrategy::SameAsRequested => "kSameAsRequested",
            }
        }
    }
}

impl CUDA {
    /// The CUDA device ordinal (option `device_id`, default 0).
    pub fn with_device_id(self, id: i32) -> Self {
        self.with_option("device_id", id.to_string())
    }
    /// Most bytes the EP's caching allocator may hold on the device (option `gpu_mem_limit`; 0,
    /// the default, is the device's memory).
    pub fn with_memory_limit(self, bytes: usize) -> Self {
        self.with_option("gpu_mem_limit", bytes.to_string())
    }
    /// How the caching allocator grows (option `arena_extend_strategy`).
    pub fn with_arena_extend_strategy(self, strategy: cuda::ArenaExtendStrategy) -> Self {
        self.with_option("arena_extend_strategy", strategy.as_str())
    }
    /// How convolutions pick their cuDNN algorithm (option `cudnn_conv_algo_search`).
    pub fn with_conv_algo_search(self, search: cuda::ConvAlgorithmSearch) -> Self {
        self.with_option("cudnn_conv_algo_search", search.as_str())
    }
    /// Allows TF32 tensor-core math for float32 (option `use_tf32`, off by default).
    pub fn with_tf32(self, on: bool) -> Self {
        self.with_option("use_tf32", flag(on))
    }
    /// Runs convolution, pooling and batch normalisation channels-last (option `prefer_nhwc`).
    pub fn with_prefer_nhwc(self, on: bool) -> Self {
        self.with_option("prefer_nhwc", flag(on))
    }
    /// Records a static-shape run into a CUDA graph and replays it (option `enable_cuda_graph`).
    pub fn with_cuda_graph(self, on: bool) -> Self {
        self.with_option("enable_cuda_graph", flag(on))
    }
}

impl OpenVINO {
    /// The OpenVINO device: "CPU" (the default), "GPU", "GPU.1", "NPU", "AUTO", ... (option
    /// `device_type`).
    pub fn with_device_type(self, device: impl Into<String>) -> Self {
        self.with_option("device_type", device)
    }
    /// Inference precision: "FP32" (the default), "FP16", "BF16" or "ACCURACY" (option `precision`).
    pub fn with_precision(self, precision: impl Into<String>) -> Self {
        self.with_option("precision", precision)
    }
    /// Threads of the CPU plugin (option `num_of_threads`; 0 is the session's intra-op threads).
    pub fn with_num_threads(self, threads: u32) -> Self {
        self.with_option("num_of_threads", threads.to_string())
    }
    /// Parallel inference streams of the CPU plugin (option `num_streams`, default 1).
    pub fn with_num_streams(self, streams: u32) -> Self {
        self.with_option("num_streams", streams.to_string())
    }
    /// Directory of OpenVINO's compiled-model cache (option `cache_dir`).
    pub fn with_cache_dir(self, dir: impl Into<String>) -> Self {
        self.with_option("cache_dir", dir)
    }
    /// The smallest group of connected nodes worth handing to OpenVINO (option `min_region_nodes`).
    pub fn with_min_region_nodes(self, nodes: u32) -> Self {
        self.with_option("min_region_nodes", nodes.to_string())
    }
}

/// Settings of the Core ML EP.
pub mod coreml {
    /// Which compute units Core ML may use (option `compute_units`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub enum ComputeUnits {
        /// Every unit: CPU, GPU and Neural Engine.
        #[default]
        All,
        /// The CPU only.
        CPUOnly,
        /// The CPU and the GPU.
        CPUAndGPU,
        /// The CPU and the Neural Engine.
        CPUAndNeuralEngine,
    }

    impl ComputeUnits {
        pub(crate) fn as_str(self) -> &'static str {
            match self {
                ComputeUnits::All => "All",
                ComputeUnits::CPUOnly => "CPUOnly",
                ComputeUnits::CPUAndGPU => "CPUAndGPU",
                ComputeUnits::CPUAndNeuralEngine => "CPUAndNeuralEngine",
            }
        }
    }
}

impl CoreML {
    /// Lets Core ML take the subgraphs of control-flow operators too (option `enable_on_subgraphs`).
    pub fn with_subgraphs(self) -> Self {
        self.with_option("enable_on_subgraphs", "true")
    }
    /// The compute units Core ML may use (option `compute_units`).
    pub fn with_compute_units(self, units: coreml::ComputeUnits) -> Self {
        self.with_option("compute_units", units.as_str())
    }
}

impl WebGPU {
    /// How freed device buffers are kept: "bucket" (pooled by size and reused) or "disabled"
    /// (option `storage_buffer_cache_mode`).
    pub fn with_storage_buffer_cache_mode(self, mode: impl Into<String>) -> Self {
        self.with_option("storage_buffer_cache_mode", mode)
    }
    /// How often device errors are checked: "basic" (at each submission) or "full" (after every
    /// node; option `validation_mode`).
    pub fn with_validation_mode(self, mode: impl Into<String>) -> Self {
        self.with_option("validation_mode", mode)
    }
}

macro_rules! with_device_id {
    ($($ty:ident),*) => {
        $(
            impl $ty {
                /// The device index (option `device_id`).
                pub fn with_device_id(self, id: i32) -> Self {
                    self.with_option("device_id", id.to_string())
                }
            }
        )*
    };
}

with_device_id!(TensorRT, TensorRTRTX, DirectML, CoreML, ROCm, QNN, CANN, NNAPI, TVM, ACL, ArmNN, MIGraphX, VitisAI, RKNPU, WebGPU, Azure);
