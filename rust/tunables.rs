// SPDX-License-Identifier: GPL-2.0

//! The module's tunables, which the C shim defines: its parameters
//! (`module_param`, readable under `/sys/module/ucma_rs/parameters/`, set
//! at load time only) and the `net.rdma_ucm.max_backlog` sysctl, as the C
//! module has it.
//!
//! It imports nothing from the rest of the crate but the bindings.

use kernel::prelude::*;

use crate::ucma_shim;

/// The `max_ids_per_file` module parameter as loaded (0: no limit).
pub(crate) fn max_ids_per_file_param() -> u32 {
    // SAFETY: reads a static integer.
    unsafe { ucma_shim::ucma_shim_max_ids_per_file() }
}

/// The `max_events_per_file` module parameter as loaded (0: no limit).
pub(crate) fn max_events_per_file_param() -> u32 {
    // SAFETY: reads a static integer.
    unsafe { ucma_shim::ucma_shim_max_events_per_file() }
}

/// The current `net.rdma_ucm.max_backlog`.
pub(crate) fn max_backlog() -> i32 {
    // SAFETY: reads a static integer.
    unsafe { ucma_shim::ucma_shim_max_backlog() }
}

/// The `net.rdma_ucm.max_backlog` sysctl (initial network namespace),
/// registered while this value lives.
///
/// # Invariants
///
/// The shim's sysctl table is registered, by this value's `register()`
/// (the only one that succeeded while it lives); it is unregistered exactly
/// once, in `drop`.
pub(crate) struct Sysctl {
    _registered: (),
}

impl Sysctl {
    /// Registers the sysctl: `EBUSY` while another `Sysctl` lives.
    pub(crate) fn register() -> Result<Self> {
        // SAFETY: registers the shim's static table, unless it is registered
        // already (then it fails and changes nothing), under the shim's lock.
        kernel::error::to_result(unsafe { ucma_shim::ucma_shim_sysctl_register() })?;
        // INVARIANT: registered just above, by this call: no other `Sysctl`
        // lives (its registration would have made the call fail).
        Ok(Sysctl { _registered: () })
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        // SAFETY: by the invariant the table is registered.
        unsafe { ucma_shim::ucma_shim_sysctl_unregister() };
    }
}
