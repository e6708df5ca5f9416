//! Sessions: a builder of options (EPs, threads, optimisation, dimensions), the loaded model, runs,
//! and the reports of where each node runs and what became of each requested EP.

use std::cell::Cell;
use std::ffi::CString;
use std::marker::PhantomData;
use std::ops::Index;
use std::os::raw::{c_char, c_int, c_void};
use std::path::Path;
use std::ptr::{self, NonNull};

use crate::ep::{self, ExecutionProviderDispatch};
use crate::error::{check, cstring, string_from, Error, ErrorCode, Result};
use crate::sys;
use crate::value::{ElementType, Tensor};

/// How much onyx rewrites the graph before running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum GraphOptimizationLevel {
    /// Run the graph as written.
    Disable,
    /// Constant folding and removal of no-op nodes.
    Basic,
    /// Everything, fusions included (the default).
    #[default]
    All,
}

/// Options for new sessions; `commit_from_file` or `commit_from_memory` loads a model with them.
///
/// Its methods take and return the builder, so they chain with `?`. EPs registered through
/// [`ExecutionProvider::register`](crate::ep::ExecutionProvider::register) take `&SessionBuilder`;
/// a builder may move between threads but not be shared by them:
///
/// ```compile_fail
/// fn shared<T: Sync>() {}
/// shared::<onyx::session::SessionBuilder>();
/// ```
pub struct SessionBuilder {
    raw: NonNull<sys::OnyxSessionBuilder>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: the C API lets any one thread at a time use a builder; `Cell` keeps it `!Sync`.
unsafe impl Send for SessionBuilder {}

fn path_cstring(what: &str, path: &Path) -> Result<CString> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        CString::new(path.as_os_str().as_bytes())
            .map_err(|_| Error::invalid_argument(format!("{what} contains a NUL byte: {}", path.display())))
    }
    #[cfg(not(unix))]
    {
        match path.to_str() {
            Some(s) => cstring(what, s),
            None => Err(Error::invalid_argument(format!("{what} is not valid Unicode: {}", path.display()))),
        }
    }
}

/// Keys and values of EP options as C strings, and the pointer arrays onyx reads.
struct CStringPairs {
    _keys: Vec<CString>,
    _values: Vec<CString>,
    key_ptrs: Vec<*const c_char>,
    value_ptrs: Vec<*const c_char>,
}

impl CStringPairs {
    fn new(ep: &str, options: &[(String, String)]) -> Result<CStringPairs> {
        let mut keys = Vec::with_capacity(options.len());
        let mut values = Vec::with_capacity(options.len());
        for (k, v) in options {
            keys.push(cstring(&format!("an option key of execution provider '{ep}'"), k)?);
            values.push(cstring(&format!("option '{k}' of execution provider '{ep}'"), v)?);
        }
        let key_ptrs = keys.iter().map(|k| k.as_ptr()).collect();
        let value_ptrs = values.iter().map(|v| v.as_ptr()).collect();
        Ok(CStringPairs { _keys: keys, _values: values, key_ptrs, value_ptrs })
    }
}

/// Adds one EP to a builder or an environment through `add` (the two C functions share a shape).
pub(crate) fn add_ep_with(
    name: &str,
    options: &[(String, String)],
    error_on_failure: bool,
    add: impl FnOnce(*const c_char, *const *const c_char, *const *const c_char, usize, c_int) -> *mut sys::OnyxStatus,
) -> Result<()> {
    let c_name = cstring("execution provider name", name)?;
    let pairs = CStringPairs::new(name, options)?;
    check(add(
        c_name.as_ptr(),
        pairs.key_ptrs.as_ptr(),
        pairs.value_ptrs.as_ptr(),
        options.len(),
        c_int::from(error_on_failure),
    ))
}

impl SessionBuilder {
    /// A builder with onyx's defaults (no EPs but the implicit CPU EP, plus the environment's).
    pub fn new() -> Result<SessionBuilder> {
        // SAFETY: no arguments.
        let version = unsafe { sys::onyx_api_version() };
        if version < sys::ONYX_C_API_VERSION {
            return Err(Error::new(
                ErrorCode::NotImplemented,
                format!(
                    "libonyx has C API version {version}, older than the version {} this crate needs",
                    sys::ONYX_C_API_VERSION
                ),
            ));
        }
        let mut raw: *mut sys::OnyxSessionBuilder = ptr::null_mut();
        // SAFETY: valid output pointer.
        check(unsafe { sys::onyx_session_builder_create(&mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(ErrorCode::Internal, "onyx_session_builder_create gave no builder"))?;
        Ok(SessionBuilder { raw, _not_sync: PhantomData })
    }

    /// Appends an EP (after those already added). Used by `with_execution_providers` and
    /// `ExecutionProvider::register`.
    pub(crate) fn add_execution_provider(&self, name: &str, options: &[(String, String)], error_on_failure: bool) -> Result<()> {
        add_ep_with(name, options, error_on_failure, |n, k, v, count, fail| {
            // SAFETY: the builder is live and used by this thread only (`!Sync`); the strings and
            // arrays live until `add_ep_with` returns.
            unsafe { sys::onyx_session_builder_add_execution_provider(self.raw.as_ptr(), n, k, v, count, fail) }
        })
    }

    /// Registers EPs in priority order: each node runs on the first that takes it, the CPU EP
    /// takes the rest. One that cannot register here is skipped, unless its dispatch has
    /// `error_on_failure`: then an EP onyx reports unusable makes this call fail with onyx's
    /// reason (and a later failure to register it fails session creation).
    pub fn with_execution_providers(
        self,
        eps: impl IntoIterator<Item = ExecutionProviderDispatch>,
    ) -> Result<SessionBuilder> {
        for d in eps {
            if d.is_error_on_failure() {
                ep::register_checked(d.name(), d.options(), &self)?;
            } else {
                self.add_execution_provider(d.name(), d.options(), false)?;
            }
        }
        Ok(self)
    }

    /// Leaves out the environment's default EPs ([`crate::init`]).
    pub fn with_no_environment_execution_providers(self) -> Result<SessionBuilder> {
        // SAFETY: live builder.
        check(unsafe { sys::onyx_session_builder_disable_environment_execution_providers(self.raw.as_ptr()) })?;
        Ok(self)
    }

    /// With `false` (strict placement), session creation fails when a node would run on the CPU
    /// EP, naming those nodes and why each EP declined them. Default `true`.
    pub fn with_cpu_fallback(self, allowed: bool) -> Result<SessionBuilder> {
        // SAFETY: live builder.
        check(unsafe { sys::onyx_session_builder_set_cpu_fallback(self.raw.as_ptr(), c_int::from(allowed)) })?;
        Ok(self)
    }

    /// Intra-op threads, the calling thread included; 0 (the default) is one per core.
    pub fn with_intra_threads(self, threads: usize) -> Result<SessionBuilder> {
        let n = i32::try_from(threads).map_err(|_| Error::invalid_argument(format!("too many intra-op threads: {threads}")))?;
        // SAFETY: live builder.
        check(unsafe { sys::onyx_session_builder_set_intra_threads(self.raw.as_ptr(), n) })?;
        Ok(self)
    }

    /// Whether idle intra-op threads spin briefly before sleeping (default `true`).
    pub fn with_intra_op_spinning(self, allowed: bool) -> Result<SessionBuilder> {
        // SAFETY: live builder.
        check(unsafe { sys::onyx_session_builder_set_intra_op_spinning(self.raw.as_ptr(), c_int::from(allowed)) })?;
        Ok(self)
    }

    /// How much onyx rewrites the graph (default [`GraphOptimizationLevel::All`]).
    pub fn with_optimization_level(self, level: GraphOptimizationLevel) -> Result<SessionBuilder> {
        let raw = match level {
            GraphOptimizationLevel::Disable => sys::ONYX_OPTIMIZATION_DISABLED,
            GraphOptimizationLevel::Basic => sys::ONYX_OPTIMIZATION_BASIC,
            GraphOptimizationLevel::All => sys::ONYX_OPTIMIZATION_ALL,
        };
        // SAFETY: live builder.
        check(unsafe { sys::onyx_session_builder_set_optimization_level(self.raw.as_ptr(), raw) })?;
        Ok(self)
    }

    /// Caps the host memory a session's runs hold at once, in bytes (0, the default: no limit).
    pub fn with_memory_limit(self, bytes: u64) -> Result<SessionBuilder> {
        // SAFETY: live builder.
        check(unsafe { sys::onyx_session_builder_set_memory_limit(self.raw.as_ptr(), bytes) })?;
        Ok(self)
    }

    /// Fixes the symbolic dimension `name` to `value` on every input that has it.
    pub fn with_dimension_override(self, name: &str, value: i64) -> Result<SessionBuilder> {
        let c = cstring("dimension name", name)?;
        // SAFETY: live builder, valid C string.
        check(unsafe { sys::onyx_session_builder_set_dimension_override(self.raw.as_ptr(), c.as_ptr(), value) })?;
        Ok(self)
    }

    /// Fixes dimension `axis` of input `input` to `value`.
    pub fn with_input_dimension(self, input: &str, axis: usize, value: i64) -> Result<SessionBuilder> {
        let c = cstring("input name", input)?;
        // SAFETY: live builder, valid C string.
        check(unsafe { sys::onyx_session_builder_set_input_dimension(self.raw.as_ptr(), c.as_ptr(), axis, value) })?;
        Ok(self)
    }

    /// Directory where external data files are looked up for `commit_from_memory`.
    pub fn with_external_data_dir(self, dir: impl AsRef<Path>) -> Result<SessionBuilder> {
        let c = path_cstring("external data directory", dir.as_ref())?;
        // SAFETY: live builder, valid C string.
        check(unsafe { sys::onyx_session_builder_set_external_data_dir(self.raw.as_ptr(), c.as_ptr()) })?;
        Ok(self)
    }

    /// Writes the model as onyx runs it (after the optimizer) to `path` when a session is created.
    pub fn with_optimized_model_path(self, path: impl AsRef<Path>) -> Result<SessionBuilder> {
        let c = path_cstring("optimized model path", path.as_ref())?;
        // SAFETY: live builder, valid C string.
        check(unsafe { sys::onyx_session_builder_set_optimized_model_file(self.raw.as_ptr(), c.as_ptr()) })?;
        Ok(self)
    }

    /// Loads, checks and prepares the model at `path`.
    pub fn commit_from_file(self, path: impl AsRef<Path>) -> Result<Session> {
        let c = path_cstring("model path", path.as_ref())?;
        let mut raw: *mut sys::OnyxSession = ptr::null_mut();
        // SAFETY: live builder, valid C string and output pointer.
        check(unsafe { sys::onyx_session_create_from_file(self.raw.as_ptr(), c.as_ptr(), &mut raw) })?;
        Session::from_raw(raw)
    }

    /// Loads, checks and prepares the model in `bytes` (copied: the slice may go afterwards).
    pub fn commit_from_memory(self, bytes: &[u8]) -> Result<Session> {
        let mut raw: *mut sys::OnyxSession = ptr::null_mut();
        // SAFETY: live builder; `bytes.len()` readable bytes; valid output pointer.
        check(unsafe {
            sys::onyx_session_create_from_memory(self.raw.as_ptr(), bytes.as_ptr() as *const c_void, bytes.len(), &mut raw)
        })?;
        Session::from_raw(raw)
    }
}

impl Drop for SessionBuilder {
    fn drop(&mut self) {
        // SAFETY: owned handle, released once.
        unsafe { sys::onyx_session_builder_release(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for SessionBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionBuilder").finish_non_exhaustive()
    }
}

/// What a model input or output holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ValueKind {
    /// A tensor.
    Tensor,
    /// A sequence of tensors.
    Sequence,
    /// An optional value.
    Optional,
    /// A map.
    Map,
    /// A kind this crate does not know.
    Other(i32),
}

impl ValueKind {
    fn from_raw(raw: sys::OnyxValueKind) -> ValueKind {
        match raw {
            sys::ONYX_VALUE_TENSOR => ValueKind::Tensor,
            sys::ONYX_VALUE_SEQUENCE => ValueKind::Sequence,
            sys::ONYX_VALUE_OPTIONAL => ValueKind::Optional,
            sys::ONYX_VALUE_MAP => ValueKind::Map,
            other => ValueKind::Other(other),
        }
    }
}

/// A model input or output, as the model declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IoInfo {
    /// Its name.
    pub name: String,
    /// What it holds.
    pub kind: ValueKind,
    /// The element type (of the tensors inside, for a sequence or optional; a map's value type).
    pub element_type: ElementType,
    /// The declared shape, -1 for a symbolic or unknown dimension; `None` when the rank is unknown.
    pub shape: Option<Vec<i64>>,
    /// The name of each dimension (its dim_param), "" for a concrete or unnamed one.
    pub dim_names: Vec<String>,
    /// Inputs: whether an initializer supplies it when it is not given.
    pub has_default: bool,
    /// The type as onyx prints it: `float[batch,3,32,32]`.
    pub type_string: String,
}

impl IoInfo {
    /// # Safety
    /// `info` must be a live handle borrowed from a live session.
    unsafe fn read(info: *const sys::OnyxIoInfo) -> Result<IoInfo> {
        let mut name: *const c_char = ptr::null();
        check(sys::onyx_io_info_name(info, &mut name))?;
        let mut kind: sys::OnyxValueKind = 0;
        check(sys::onyx_io_info_kind(info, &mut kind))?;
        let mut element_type: sys::OnyxElementType = 0;
        check(sys::onyx_io_info_element_type(info, &mut element_type))?;
        let mut dims: *const i64 = ptr::null();
        let mut rank: i64 = -1;
        check(sys::onyx_io_info_shape(info, &mut dims, &mut rank))?;
        let shape = match usize::try_from(rank) {
            Ok(0) => Some(Vec::new()),
            Ok(r) if !dims.is_null() => Some(std::slice::from_raw_parts(dims, r).to_vec()),
            _ => None,
        };
        let mut dim_names = Vec::new();
        for axis in 0..shape.as_ref().map_or(0, Vec::len) {
            let mut dim: *const c_char = ptr::null();
            check(sys::onyx_io_info_dim_name(info, axis, &mut dim))?;
            dim_names.push(string_from(dim));
        }
        let mut has_default: c_int = 0;
        check(sys::onyx_io_info_has_default(info, &mut has_default))?;
        let mut type_string: *const c_char = ptr::null();
        check(sys::onyx_io_info_type_string(info, &mut type_string))?;
        Ok(IoInfo {
            name: string_from(name),
            kind: ValueKind::from_raw(kind),
            element_type: ElementType::from_raw(element_type),
            shape,
            dim_names,
            has_default: has_default != 0,
            type_string: string_from(type_string),
        })
    }
}

/// Options of runs: a run using them can be stopped from another thread.
#[derive(Debug)]
pub struct RunOptions {
    raw: NonNull<sys::OnyxRunOptions>,
}

// SAFETY: terminate and reset are atomic stores, safe from any thread (c_api.h); the handle is
// otherwise only read by runs.
unsafe impl Send for RunOptions {}
unsafe impl Sync for RunOptions {}

impl RunOptions {
    /// Options that let runs proceed.
    pub fn new() -> Result<RunOptions> {
        let mut raw: *mut sys::OnyxRunOptions = ptr::null_mut();
        // SAFETY: valid output pointer.
        check(unsafe { sys::onyx_run_options_create(&mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(ErrorCode::Internal, "onyx_run_options_create gave nothing"))?;
        Ok(RunOptions { raw })
    }

    /// Stops every run using these options, now and until [`reset`](Self::reset): each fails with
    /// [`ErrorCode::Cancelled`] at its next node.
    pub fn terminate(&self) -> Result<()> {
        // SAFETY: live handle; safe from any thread.
        check(unsafe { sys::onyx_run_options_terminate(self.raw.as_ptr()) })
    }

    /// Lets runs with these options proceed again.
    pub fn reset(&self) -> Result<()> {
        // SAFETY: live handle; safe from any thread.
        check(unsafe { sys::onyx_run_options_reset(self.raw.as_ptr()) })
    }
}

impl Drop for RunOptions {
    fn drop(&mut self) {
        // SAFETY: owned handle, released once.
        unsafe { sys::onyx_run_options_release(self.raw.as_ptr()) }
    }
}

/// A loaded, prepared model. Any number of threads may run it at once.
pub struct Session {
    raw: NonNull<sys::OnyxSession>,
    inputs: Vec<IoInfo>,
    outputs: Vec<IoInfo>,
}

// SAFETY: the C API lets a session run from many threads at once; its other functions only read.
unsafe impl Send for Session {}
unsafe impl Sync for Session {}

impl Session {
    /// A builder of sessions with onyx's defaults.
    pub fn builder() -> Result<SessionBuilder> {
        SessionBuilder::new()
    }

    fn from_raw(raw: *mut sys::OnyxSession) -> Result<Session> {
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(ErrorCode::Internal, "onyx gave no session"))?;
        // From here on the handle is owned by `session`, released by its Drop on any error below.
        let mut session = Session { raw, inputs: Vec::new(), outputs: Vec::new() };
        let p = session.raw.as_ptr();
        let (mut n_in, mut n_out) = (0usize, 0usize);
        // SAFETY: live session; valid outputs; IoInfo handles are borrowed from the session, read
        // into owned values at once.
        unsafe {
            check(sys::onyx_session_input_count(p, &mut n_in))?;
            check(sys::onyx_session_output_count(p, &mut n_out))?;
            for i in 0..n_in {
                let mut info: *const sys::OnyxIoInfo = ptr::null();
                check(sys::onyx_session_input_info(p, i, &mut info))?;
                session.inputs.push(IoInfo::read(info)?);
            }
            for i in 0..n_out {
                let mut info: *const sys::OnyxIoInfo = ptr::null();
                check(sys::onyx_session_output_info(p, i, &mut info))?;
                session.outputs.push(IoInfo::read(info)?);
            }
        }
        Ok(session)
    }

    /// The model's inputs, in its order.
    pub fn inputs(&self) -> &[IoInfo] {
        &self.inputs
    }

    /// The model's outputs, in its order.
    pub fn outputs(&self) -> &[IoInfo] {
        &self.outputs
    }

    /// Runs the model on named inputs and returns every output, in the model's order. Each input
    /// is a `&Tensor` (used in place) or `None::<&Tensor>` (no value: an input with a default uses
    /// its initializer, an optional input is empty).
    pub fn run<'t, I, K, V>(&self, inputs: I) -> Result<SessionOutputs>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: Into<Option<&'t Tensor>>,
    {
        self.run_with(inputs, None, None)
    }

    /// Runs the model, returning the outputs named in `outputs` in that order (every output when
    /// `None`), with `options` (to stop the run from another thread) when given.
    pub fn run_with<'t, I, K, V>(
        &self,
        inputs: I,
        outputs: Option<&[&str]>,
        options: Option<&RunOptions>,
    ) -> Result<SessionOutputs>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: Into<Option<&'t Tensor>>,
    {
        let mut in_names = Vec::new();
        let mut in_tensors: Vec<*const sys::OnyxTensor> = Vec::new();
        for (name, tensor) in inputs {
            in_names.push(cstring("input name", name.as_ref())?);
            in_tensors.push(tensor.into().map_or(ptr::null(), Tensor::as_ptr));
        }
        let in_name_ptrs: Vec<*const c_char> = in_names.iter().map(|n| n.as_ptr()).collect();

        let out_names: Vec<String> = match outputs {
            Some(names) => names.iter().map(|n| n.to_string()).collect(),
            None => self.outputs.iter().map(|o| o.name.clone()).collect(),
        };
        let out_cnames = out_names.iter().map(|n| cstring("output name", n)).collect::<Result<Vec<_>>>()?;
        let out_name_ptrs: Vec<*const c_char> = out_cnames.iter().map(|n| n.as_ptr()).collect();
        let mut out_tensors: Vec<*mut sys::OnyxTensor> = vec![ptr::null_mut(); out_names.len()];

        // SAFETY: live session (runs may be concurrent); the name and tensor arrays hold
        // `in_names.len()` and `out_names.len()` valid entries that outlive the call; the output
        // array has room for every output. With `outputs` NULL onyx requires the model's count.
        let status = unsafe {
            sys::onyx_session_run(
                self.raw.as_ptr(),
                options.map_or(ptr::null(), |o| o.raw.as_ptr() as *const _),
                in_name_ptrs.as_ptr(),
                in_tensors.as_ptr(),
                in_tensors.len(),
                if outputs.is_some() { out_name_ptrs.as_ptr() } else { ptr::null() },
                out_tensors.len(),
                out_tensors.as_mut_ptr(),
            )
        };
        // Take ownership of whatever was returned before looking at the status (on failure every
        // entry is NULL).
        let values: Vec<Option<Tensor>> = out_tensors.into_iter().map(|t| NonNull::new(t).map(Tensor::from_raw)).collect();
        check(status)?;
        Ok(SessionOutputs { entries: out_names.into_iter().zip(values).collect() })
    }

    /// Where every node of the main graph runs, with every higher-priority EP's reason for
    /// declining it, and the copies between memories.
    pub fn placement(&self) -> Result<Placement> {
        let mut raw: *mut sys::OnyxPlacement = ptr::null_mut();
        // SAFETY: live session, valid output.
        check(unsafe { sys::onyx_session_placement(self.raw.as_ptr(), &mut raw) })?;
        let handle = PlacementHandle(raw);
        // SAFETY: `handle.0` is the live placement made above; every string read is copied before
        // `handle` releases it.
        unsafe { handle.read() }
    }

    /// Every requested EP in request order (the implicit CPU EP last): who asked for it, what
    /// became of it, and why.
    pub fn registration(&self) -> Result<Vec<EpRegistration>> {
        let p = self.raw.as_ptr();
        let mut count = 0usize;
        let mut out = Vec::new();
        // SAFETY: live session; the strings are borrowed from it and copied at once.
        unsafe {
            check(sys::onyx_session_registration_count(p, &mut count))?;
            for i in 0..count {
                let (mut name, mut reason): (*const c_char, *const c_char) = (ptr::null(), ptr::null());
                let (mut source, mut outcome): (sys::OnyxEpSource, sys::OnyxEpOutcome) = (0, 0);
                check(sys::onyx_session_registration(p, i, &mut name, &mut source, &mut outcome, &mut reason))?;
                let mut priority: i32 = -1;
                let (mut version, mut device, mut module): (*const c_char, *const c_char, *const c_char) =
                    (ptr::null(), ptr::null(), ptr::null());
                let mut error_on_failure: c_int = 0;
                check(sys::onyx_session_registration_details(
                    p,
                    i,
                    &mut priority,
                    &mut version,
                    &mut device,
                    &mut module,
                    &mut error_on_failure,
                ))?;
                let outcome = EpOutcome::from_raw(outcome);
                let mut options = Vec::new();
                if outcome == EpOutcome::Registered {
                    let mut n = 0usize;
                    check(sys::onyx_session_registration_option_count(p, i, &mut n))?;
                    for o in 0..n {
                        let (mut k, mut v): (*const c_char, *const c_char) = (ptr::null(), ptr::null());
                        check(sys::onyx_session_registration_option(p, i, o, &mut k, &mut v))?;
                        options.push((string_from(k), string_from(v)));
                    }
                }
                out.push(EpRegistration {
                    name: string_from(name),
                    source: EpSource::from_raw(source),
                    outcome,
                    reason: string_from(reason),
                    priority: u32::try_from(priority).ok(),
                    version: string_from(version),
                    device: string_from(device),
                    module: string_from(module),
                    error_on_failure: error_on_failure != 0,
                    options,
                });
            }
        }
        Ok(out)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: owned handle, released once; no borrowed IoInfo outlives it (they were copied).
        unsafe { sys::onyx_session_release(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("inputs", &self.inputs).field("outputs", &self.outputs).finish()
    }
}

/// The outputs of a run, by name and in order. An empty optional output has no tensor.
#[derive(Debug)]
pub struct SessionOutputs {
    entries: Vec<(String, Option<Tensor>)>,
}

impl SessionOutputs {
    /// Number of outputs.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The output called `name` (`None` when there is no such output or it is empty).
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.entries.iter().find(|(n, _)| n == name).and_then(|(_, t)| t.as_ref())
    }

    /// Takes the output called `name` out of the list.
    pub fn remove(&mut self, name: &str) -> Option<Tensor> {
        let i = self.entries.iter().position(|(n, _)| n == name)?;
        self.entries.remove(i).1
    }

    /// The outputs' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// Each output's name and tensor, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&Tensor>)> {
        self.entries.iter().map(|(n, t)| (n.as_str(), t.as_ref()))
    }
}

impl Index<&str> for SessionOutputs {
    type Output = Tensor;
    /// The output called `name`; panics when there is none (use [`SessionOutputs::get`] to check).
    fn index(&self, name: &str) -> &Tensor {
        match self.get(name) {
            Some(t) => t,
            None => panic!("the run has no output '{name}' with a value"),
        }
    }
}

impl Index<usize> for SessionOutputs {
    type Output = Tensor;
    /// Output `index`; panics when out of range or empty.
    fn index(&self, index: usize) -> &Tensor {
        match self.entries.get(index).and_then(|(_, t)| t.as_ref()) {
            Some(t) => t,
            None => panic!("the run has no output {index} with a value"),
        }
    }
}

/// Where a session's nodes run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Placement {
    /// The one-line summary: "cpu: 9 nodes; 0 copies".
    pub summary: String,
    /// Every node of the main graph, in order.
    pub nodes: Vec<PlacedNode>,
    /// The copies between memories.
    pub copies: Vec<PlacementCopy>,
}

/// One node and the EP it runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlacedNode {
    /// Its name ("#index" when it has none).
    pub name: String,
    /// Its operator.
    pub op_type: String,
    /// Its operator's domain ("" for ai.onnx, "onyx" for the optimizer's fused ops).
    pub domain: String,
    /// The EP it runs on.
    pub ep: String,
    /// The device it runs on.
    pub device: String,
    /// Its fused region on a compiling EP (`None` for a single-node kernel).
    pub region: Option<u32>,
    /// Why each higher-priority EP declined it.
    pub declines: Vec<Decline>,
}

/// An EP's reason for not taking a node.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decline {
    /// The EP.
    pub ep: String,
    /// The reason's code: "UnsupportedOp", "UnsupportedType", ...
    pub code: String,
    /// The reason.
    pub message: String,
}

/// A copy between memories.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlacementCopy {
    /// The value copied.
    pub value: String,
    /// The memory it comes from.
    pub from: String,
    /// The memory it goes to.
    pub to: String,
    /// Its size in bytes (`None` when it depends on the input shapes).
    pub bytes: Option<u64>,
}

struct PlacementHandle(*mut sys::OnyxPlacement);

impl PlacementHandle {
    /// # Safety
    /// `self.0` must be a live placement.
    unsafe fn read(&self) -> Result<Placement> {
        let p = self.0;
        let mut summary: *const c_char = ptr::null();
        check(sys::onyx_placement_summary(p, &mut summary))?;
        let mut n_nodes = 0usize;
        check(sys::onyx_placement_node_count(p, &mut n_nodes))?;
        let mut nodes = Vec::with_capacity(n_nodes);
        for i in 0..n_nodes {
            let mut s: [*const c_char; 5] = [ptr::null(); 5];
            let mut region: i32 = -1;
            let [name, op_type, domain, ep, device] = &mut s;
            check(sys::onyx_placement_node(p, i, name, op_type, domain, ep, device, &mut region))?;
            let mut n_declines = 0usize;
            check(sys::onyx_placement_node_decline_count(p, i, &mut n_declines))?;
            let mut declines = Vec::with_capacity(n_declines);
            for d in 0..n_declines {
                let (mut ep, mut code, mut message): (*const c_char, *const c_char, *const c_char) =
                    (ptr::null(), ptr::null(), ptr::null());
                check(sys::onyx_placement_node_decline(p, i, d, &mut ep, &mut code, &mut message))?;
                declines.push(Decline { ep: string_from(ep), code: string_from(code), message: string_from(message) });
            }
            nodes.push(PlacedNode {
                name: string_from(s[0]),
                op_type: string_from(s[1]),
                domain: string_from(s[2]),
                ep: string_from(s[3]),
                device: string_from(s[4]),
                region: u32::try_from(region).ok(),
                declines,
            });
        }
        let mut n_copies = 0usize;
        check(sys::onyx_placement_copy_count(p, &mut n_copies))?;
        let mut copies = Vec::with_capacity(n_copies);
        for i in 0..n_copies {
            let (mut value, mut from, mut to): (*const c_char, *const c_char, *const c_char) =
                (ptr::null(), ptr::null(), ptr::null());
            let mut bytes: i64 = -1;
            check(sys::onyx_placement_copy(p, i, &mut value, &mut from, &mut to, &mut bytes))?;
            copies.push(PlacementCopy {
                value: string_from(value),
                from: string_from(from),
                to: string_from(to),
                bytes: u64::try_from(bytes).ok(),
            });
        }
        Ok(Placement { summary: string_from(summary), nodes, copies })
    }
}

impl Drop for PlacementHandle {
    fn drop(&mut self) {
        // SAFETY: the handle came from onyx_session_placement and is released once.
        unsafe { sys::onyx_placement_release(self.0) }
    }
}

/// Who asked for an EP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EpSource {
    /// The session builder.
    Session,
    /// The environment's defaults ([`crate::init`]).
    Environment,
    /// The CPU EP, added last when not listed.
    Implicit,
    /// A source this crate does not know.
    Other(i32),
}

impl EpSource {
    fn from_raw(raw: sys::OnyxEpSource) -> EpSource {
        match raw {
            sys::ONYX_EP_SOURCE_SESSION => EpSource::Session,
            sys::ONYX_EP_SOURCE_ENVIRONMENT => EpSource::Environment,
            sys::ONYX_EP_SOURCE_IMPLICIT => EpSource::Implicit,
            other => EpSource::Other(other),
        }
    }
}

/// What became of a requested EP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EpOutcome {
    /// Registered: it takes the nodes it can.
    Registered,
    /// Could not register; the reason says why.
    Skipped,
    /// Asked for again; the first request keeps its priority.
    Duplicate,
    /// An outcome this crate does not know.
    Other(i32),
}

impl EpOutcome {
    fn from_raw(raw: sys::OnyxEpOutcome) -> EpOutcome {
        match raw {
            sys::ONYX_EP_REGISTERED => EpOutcome::Registered,
            sys::ONYX_EP_SKIPPED => EpOutcome::Skipped,
            sys::ONYX_EP_DUPLICATE => EpOutcome::Duplicate,
            other => EpOutcome::Other(other),
        }
    }
}

/// One requested EP and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EpRegistration {
    /// The EP's name.
    pub name: String,
    /// Who asked for it.
    pub source: EpSource,
    /// What became of it.
    pub outcome: EpOutcome,
    /// Why it was skipped, or which request it duplicates ("" when registered).
    pub reason: String,
    /// Its priority once registered (0 = asked first).
    pub priority: Option<u32>,
    /// The EP's version (once registered).
    pub version: String,
    /// Its device (once registered).
    pub device: String,
    /// Its module's path ("" for EPs built into libonyx).
    pub module: String,
    /// Whether it was asked for with `error_on_failure`.
    pub error_on_failure: bool,
    /// Its effective options, defaults included (once registered).
    pub options: Vec<(String, String)>,
}
