//! onyx's errors: the C API's status code and message, as a Rust error.

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::c_char;

use crate::sys;

/// What kind of failure an [`Error`] reports: the C API's `OnyxErrorCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The caller passed something wrong: a name, shape, type, size or option value.
    InvalidArgument,
    /// The model file is malformed.
    InvalidModel,
    /// The graph is ill-formed.
    InvalidGraph,
    /// Valid ONNX (or a request) this onyx does not support.
    NotImplemented,
    /// A failure while running.
    Runtime,
    /// The file system refused: a missing or unreadable file.
    Io,
    /// An execution provider failed to register or to run; strict placement refused a node.
    EpFailure,
    /// An execution provider is not built, loadable or usable here.
    NotAvailable,
    /// The run was stopped by [`RunOptions::terminate`](crate::session::RunOptions::terminate).
    Cancelled,
    /// An allocation failed, or a run would pass the session's memory limit.
    OutOfMemory,
    /// A failure onyx did not expect (a bug to report).
    Internal,
    /// A code this crate does not know (from a newer library).
    Other(i32),
}

impl ErrorCode {
    /// The code of a C status (`ONYX_OK` is not an error and maps to `Other(0)`).
    pub fn from_raw(code: sys::OnyxErrorCode) -> ErrorCode {
        match code {
            sys::ONYX_ERROR_INVALID_ARGUMENT => ErrorCode::InvalidArgument,
            sys::ONYX_ERROR_INVALID_MODEL => ErrorCode::InvalidModel,
            sys::ONYX_ERROR_INVALID_GRAPH => ErrorCode::InvalidGraph,
            sys::ONYX_ERROR_NOT_IMPLEMENTED => ErrorCode::NotImplemented,
            sys::ONYX_ERROR_RUNTIME => ErrorCode::Runtime,
            sys::ONYX_ERROR_IO => ErrorCode::Io,
            sys::ONYX_ERROR_EP_FAILURE => ErrorCode::EpFailure,
            sys::ONYX_ERROR_NOT_AVAILABLE => ErrorCode::NotAvailable,
            sys::ONYX_ERROR_CANCELLED => ErrorCode::Cancelled,
            sys::ONYX_ERROR_OUT_OF_MEMORY => ErrorCode::OutOfMemory,
            sys::ONYX_ERROR_INTERNAL => ErrorCode::Internal,
            other => ErrorCode::Other(other),
        }
    }

    /// The C API's value of this code.
    pub fn raw(self) -> sys::OnyxErrorCode {
        match self {
            ErrorCode::InvalidArgument => sys::ONYX_ERROR_INVALID_ARGUMENT,
            ErrorCode::InvalidModel => sys::ONYX_ERROR_INVALID_MODEL,
            ErrorCode::InvalidGraph => sys::ONYX_ERROR_INVALID_GRAPH,
            ErrorCode::NotImplemented => sys::ONYX_ERROR_NOT_IMPLEMENTED,
            ErrorCode::Runtime => sys::ONYX_ERROR_RUNTIME,
            ErrorCode::Io => sys::ONYX_ERROR_IO,
            ErrorCode::EpFailure => sys::ONYX_ERROR_EP_FAILURE,
            ErrorCode::NotAvailable => sys::ONYX_ERROR_NOT_AVAILABLE,
            ErrorCode::Cancelled => sys::ONYX_ERROR_CANCELLED,
            ErrorCode::OutOfMemory => sys::ONYX_ERROR_OUT_OF_MEMORY,
            ErrorCode::Internal => sys::ONYX_ERROR_INTERNAL,
            ErrorCode::Other(v) => v,
        }
    }

    /// onyx's name of the code: "InvalidArgument", "IoError", "NotAvailable", ...
    pub fn name(self) -> &'static str {
        // SAFETY: onyx_error_code_name accepts any value and returns a static string.
        let p = unsafe { sys::onyx_error_code_name(self.raw()) };
        if p.is_null() {
            return "Unknown";
        }
        // SAFETY: non-null, NUL-terminated, static storage in libonyx.
        unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("Unknown")
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An error from onyx (or from this crate's checks before calling it): a code and onyx's message,
/// which names what went wrong and where (the input, the node, the EP, the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    code: ErrorCode,
    message: String,
}

/// `std::result::Result` with onyx's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with the given code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error { code, message: message.into() }
    }

    /// What kind of failure this is.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// onyx's message.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn invalid_argument(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::InvalidArgument, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

/// Turns a status returned by a C function into a `Result`, releasing the status.
pub(crate) fn check(status: *mut sys::OnyxStatus) -> Result<()> {
    if status.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null status comes from the C API, is owned by us, and is released exactly once
    // here after its code and message are copied out.
    unsafe {
        let code = sys::onyx_status_code(status);
        let message = string_from(sys::onyx_status_message(status));
        sys::onyx_status_release(status);
        Err(Error::new(ErrorCode::from_raw(code), message))
    }
}

/// Copies a borrowed C string (NULL gives "").
///
/// # Safety
/// `p` must be NULL or point to a NUL-terminated string valid for the duration of the call.
pub(crate) unsafe fn string_from(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// A C string for an argument; a string with an interior NUL is an invalid argument.
pub(crate) fn cstring(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid_argument(format!("{what} contains a NUL byte: {s:?}")))
}
