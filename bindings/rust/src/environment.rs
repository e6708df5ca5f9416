//! The process-wide environment: default EPs for every session created afterwards.

use std::ptr::{self, NonNull};

use crate::ep::ExecutionProviderDispatch;
use crate::error::{check, Error, ErrorCode, Result};
use crate::session::add_ep_with;
use crate::sys;

/// Starts configuring the environment; [`EnvironmentBuilder::commit`] applies it.
///
/// Call it before creating sessions: a session keeps the defaults of the time it was created.
pub fn init() -> EnvironmentBuilder {
    EnvironmentBuilder { eps: Vec::new() }
}

/// Environment settings under construction (see [`init`]).
#[derive(Debug, Clone, Default)]
#[must_use = "the settings apply only once committed"]
pub struct EnvironmentBuilder {
    eps: Vec<ExecutionProviderDispatch>,
}

struct EnvHandle(NonNull<sys::OnyxEnv>);

impl Drop for EnvHandle {
    fn drop(&mut self) {
        // SAFETY: owned handle, released once.
        unsafe { sys::onyx_env_release(self.0.as_ptr()) }
    }
}

impl EnvironmentBuilder {
    /// Default EPs, appended in this order after every new session's own EPs (a session leaves
    /// them out with `with_no_environment_execution_providers`). Replaces any list given before.
    pub fn with_execution_providers(mut self, eps: impl IntoIterator<Item = ExecutionProviderDispatch>) -> Self {
        self.eps = eps.into_iter().collect();
        self
    }

    /// Makes these settings the process's, returning whether that worked (see
    /// [`try_commit`](Self::try_commit) for the reason when it did not).
    pub fn commit(self) -> bool {
        self.try_commit().is_ok()
    }

    /// Makes these settings the process's. Sessions created before keep what they captured.
    pub fn try_commit(self) -> Result<()> {
        let mut raw: *mut sys::OnyxEnv = ptr::null_mut();
        // SAFETY: valid output pointer.
        check(unsafe { sys::onyx_env_create(&mut raw) })?;
        let env = EnvHandle(NonNull::new(raw).ok_or_else(|| Error::new(ErrorCode::Internal, "onyx_env_create gave nothing"))?);
        for d in &self.eps {
            add_ep_with(d.name(), d.options(), d.is_error_on_failure(), |n, k, v, count, fail| {
                // SAFETY: live env handle, strings and arrays valid for the call.
                unsafe { sys::onyx_env_add_execution_provider(env.0.as_ptr(), n, k, v, count, fail) }
            })?;
        }
        // SAFETY: live env handle.
        check(unsafe { sys::onyx_env_commit(env.0.as_ptr()) })
    }
}
