//! Rust bindings to onyx, an ONNX inference runtime built around execution providers (EPs), over
//! its C API (`include/onyx/c_api.h`). The EP API has the shape of the `ort` crate's: EP structs
//! in [`ep`] that `build()` dispatches for
//! [`SessionBuilder::with_execution_providers`](session::SessionBuilder::with_execution_providers),
//! `error_on_failure()`, [`ep::ExecutionProvider::register`] and `is_available()`, and
//! environment-wide defaults with [`init`].
//!
//! ```no_run
//! use onyx::{ep, session::Session, value::Tensor};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let session = Session::builder()?
//!         .with_execution_providers([ep::XNNPACK::default().with_threads(2).build(), ep::CPU::default().build()])?
//!         .commit_from_file("model.onnx")?;
//!     let image = Tensor::from_array(([1, 3, 32, 32], vec![0.5f32; 3 * 32 * 32]))?;
//!     let outputs = session.run([("image", &image)])?;
//!     let (shape, probabilities) = outputs["probabilities"].try_extract_tensor::<f32>()?;
//!     println!("{shape:?} {probabilities:?}");
//!     for node in session.placement()?.nodes {
//!         println!("{} ({}) on {}", node.name, node.op_type, node.ep);
//!     }
//!     Ok(())
//! }
//! ```
//!
//! docs/rust.md describes the crate and how it maps to the C API.

#![warn(missing_docs)]

mod environment;
mod error;

pub mod ep;
pub mod session;
#[allow(missing_docs)]
pub mod sys;
pub mod value;

pub use environment::{init, EnvironmentBuilder};
pub use error::{Error, ErrorCode, Result};
pub use session::{Session, SessionBuilder};
pub use value::{ElementType, Tensor, TensorElement};

/// The library's version ("0.1.0").
pub fn version() -> String {
    // SAFETY: no arguments; returns a static NUL-terminated string.
    unsafe { error::string_from(sys::onyx_version_string()) }
}

/// The C API version of the loaded library (at least [`sys::ONYX_C_API_VERSION`]).
pub fn api_version() -> u32 {
    // SAFETY: no arguments.
    unsafe { sys::onyx_api_version() }
}

/// Severity of onyx's log messages (written to stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogLevel {
    /// Everything.
    Verbose,
    /// Information and above.
    Info,
    /// Warnings and errors (the default): a skipped EP is a warning.
    Warning,
    /// Errors only.
    Error,
    /// Nothing.
    Off,
}

/// Drops log messages below `level` (process-wide; the default is [`LogLevel::Warning`], or the
/// environment variable ONYX_LOG_LEVEL).
pub fn set_log_level(level: LogLevel) -> Result<()> {
    let raw = match level {
        LogLevel::Verbose => sys::ONYX_LOG_VERBOSE,
        LogLevel::Info => sys::ONYX_LOG_INFO,
        LogLevel::Warning => sys::ONYX_LOG_WARNING,
        LogLevel::Error => sys::ONYX_LOG_ERROR,
        LogLevel::Off => sys::ONYX_LOG_OFF,
    };
    // SAFETY: accepts any value (an unknown one is an invalid argument).
    error::check(unsafe { sys::onyx_set_log_level(raw) })
}
