// SPDX-License-Identifier: GPL-2.0

//! Remote coverage sections: the code a process's requests run in other
//! contexts, counted as that process's KCOV coverage.
//!
//! C header: [`include/linux/kcov.h`](srctree/include/linux/kcov.h); see
//! `Documentation/dev-tools/kcov.rst`, "Remote coverage collection".
//!
//! A coverage collector enables KCOV with a common handle
//! (`KCOV_REMOTE_ENABLE`); the tasks it then forks inherit the handle. Code
//! that runs on their behalf elsewhere (a workqueue, another task's event
//! handler) takes the handle where the request was made
//! ([`KcovHandle::of_current`]) and opens a [`KcovSection`] with it where the
//! work runs: what the section executes goes to that collector's buffer.
//!
//! Without `CONFIG_KCOV` both types are empty and every method does nothing.
//!
//! Nothing here names a driver: the only module of this crate it uses is the
//! bindings of the C shim, [`crate::ucma_shim`].

use core::marker::PhantomData;

#[cfg(CONFIG_KCOV)]
use crate::ucma_shim;

/// The KCOV common handle of the task that took it: 0 when that task has
/// none (no collector above it), or without `CONFIG_KCOV`.
#[derive(Clone, Copy, Default)]
pub(crate) struct KcovHandle {
    #[cfg(CONFIG_KCOV)]
    val: u64,
}

impl KcovHandle {
    /// The current task's handle.
    #[inline]
    pub(crate) fn of_current() -> Self {
        #[cfg(CONFIG_KCOV)]
        {
            // SAFETY: reads the current task's own field; no precondition.
            let val = unsafe { ucma_shim::ucma_shim_kcov_common_handle() };
            Self { val }
        }
        #[cfg(not(CONFIG_KCOV))]
        Self {}
    }

    /// Opens a coverage section for this handle's collector on the current
    /// task, which ends when the returned value is dropped. Opens none
    /// (and the section is empty) for a handle of 0, when no collector has
    /// the handle, when the task collects coverage already (its own
    /// `KCOV_ENABLE`, or a section around this one), or when kcov cannot
    /// allocate the section's buffer.
    ///
    /// Call in task context, where sleeping is allowed: starting a section
    /// may allocate its buffer.
    #[inline]
    pub(crate) fn section(self) -> KcovSection {
        // Any handle is accepted (unknown ones start nothing); that starting
        // may sleep is a rule of the context (see above), not of memory
        // safety.
        #[cfg(CONFIG_KCOV)]
        {
            // SAFETY: the shim has no precondition.
            let started = unsafe { ucma_shim::ucma_shim_kcov_remote_start(self.val) };
            KcovSection {
                started,
                _task_bound: PhantomData,
            }
        }
        #[cfg(not(CONFIG_KCOV))]
        KcovSection {
            _task_bound: PhantomData,
        }
    }
}

/// A coverage section opened by [`KcovHandle::section`].
///
/// # Invariants
///
/// If `started`, the current task has a remote coverage section open that
/// this value started, and it is the task's innermost one. Not [`Send`]: it
/// ends on the task that opened it.
pub(crate) struct KcovSection {
    #[cfg(CONFIG_KCOV)]
    started: bool,
    _task_bound: PhantomData<*mut ()>,
}

impl Drop for KcovSection {
    #[inline]
    fn drop(&mut self) {
        #[cfg(CONFIG_KCOV)]
        if self.started {
            // By the type invariants, the task's innermost section is this one.
            // SAFETY: stops the section this value started, on its own task.
            unsafe { ucma_shim::ucma_shim_kcov_remote_stop() };
        }
    }
}
