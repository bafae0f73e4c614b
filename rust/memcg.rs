// SPDX-License-Identifier: GPL-2.0

//! Charging what a user makes the module allocate to that user's memory
//! cgroup.
//!
//! An allocation made in a command (the `write()` of the user's process)
//! with [`GFP_ACCOUNTED`] is charged to that process's cgroup. One made in
//! the rdma_cm event handler runs in a kernel worker: [`MemCgroup::charged`]
//! of the cgroup taken when the file was opened charges it to the opener's
//! cgroup instead (`set_active_memcg()`).
//!
//! At the cgroup's limit a command's allocation fails with `ENOMEM`
//! (`__GFP_RETRY_MAYFAIL`): the memory controller reclaims what it can, and
//! then fails the charge instead of invoking the cgroup's OOM killer, so the
//! command gets an errno and the process lives on. The event handler's
//! allocations ([`HandlerGfp`], the flags [`MemCgroup::charged`] hands out)
//! give up after one reclaim pass: the handler runs in
//! rdma_cm's workqueues, which every user's events share, and a tenant at
//! its limit must not hold them up with its reclaim. What they were for is
//! lost (an event) or refused (a connect request), as at any failure there.

use kernel::{alloc::Flags, bindings};

use crate::ucma_shim;

/// `Flags` of raw `gfp_t` bits: `kernel::alloc::flags` has no
/// `__GFP_RETRY_MAYFAIL` or `__GFP_NORETRY`, nor a way to make `Flags`
/// from bits.
const fn flags_of(raw: bindings::gfp_t) -> Flags {
    // SAFETY: `Flags` is `struct Flags(u32)`: a single `u32` field, and
    // `transmute` checks at compile time that `Flags` is no larger, so the
    // field is all of its bytes. Every `u32` is a valid `Flags` (its
    // operators make any bit pattern).
    unsafe { core::mem::transmute::<bindings::gfp_t, Flags>(raw) }
}

/// `GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL` as raw `gfp_t` bits, for the
/// C allocators (`xa_alloc`).
pub(crate) const GFP_ACCOUNTED_RAW: bindings::gfp_t = ucma_shim::UCMA_GFP_ACCOUNTED;

/// `GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL`: charged to the memory cgroup
/// in effect, failing with `ENOMEM` at its limit after the controller's
/// reclaim. For a command's allocations.
pub(crate) const GFP_ACCOUNTED: Flags = flags_of(GFP_ACCOUNTED_RAW);

/// The flags of the event handler's allocations, for the Rust allocators
/// and as raw bits for the C ones: `GFP_KERNEL_ACCOUNT | __GFP_NORETRY |
/// __GFP_NOWARN`, charged like [`GFP_ACCOUNTED`] but failing at the limit
/// after one reclaim pass.
#[derive(Clone, Copy)]
pub(crate) struct HandlerGfp {
    /// For `KBox`, `Arc` and the like.
    pub(crate) flags: Flags,
    /// For `xa_alloc()`.
    pub(crate) raw: bindings::gfp_t,
}

const GFP_ACCOUNTED_NORETRY: HandlerGfp = HandlerGfp {
    flags: flags_of(ucma_shim::UCMA_GFP_ACCOUNTED_NORETRY),
    raw: ucma_shim::UCMA_GFP_ACCOUNTED_NORETRY,
};

/// A counted reference to a memory cgroup.
///
/// # Invariants
///
/// `ptr` is null (the memory controller is disabled) or holds one reference
/// to a `struct mem_cgroup`, owned by this value.
pub(crate) struct MemCgroup {
    ptr: *mut bindings::mem_cgroup,
}

// SAFETY: a reference to a refcounted cgroup may be used and put from any
// task.
unsafe impl Send for MemCgroup {}
// SAFETY: `&MemCgroup` only passes the pointer to `set_active_memcg()`,
// which any task may do with a cgroup it holds a reference to, for a scope
// that ends before the borrow does.
unsafe impl Sync for MemCgroup {}

impl MemCgroup {
    /// The calling process's memory cgroup.
    pub(crate) fn of_current() -> Self {
        // SAFETY: called in process context; returns a counted reference or
        // null.
        let ptr = unsafe { ucma_shim::ucma_shim_memcg_get_current() };
        // INVARIANT: the reference returned is ours.
        MemCgroup { ptr }
    }

    /// Runs `f` with the `__GFP_ACCOUNT` allocations of the calling task
    /// charged to this cgroup (`set_active_memcg()`), then restores the
    /// previous target; `f` gets the flags to allocate with, [`HandlerGfp`]
    /// (this is for the event handler, which
    /// charges a user's cgroup from a shared kernel worker). A closure rather
    /// than a guard: the target is set back on this task, in last-in-first-out
    /// order, before `self` can go away, which a guard that safe code may leak
    /// or drop out of order would not ensure.
    pub(crate) fn charged<R>(&self, f: impl FnOnce(HandlerGfp) -> R) -> R {
        // SAFETY: `self` holds a reference across the scope, which ends
        // before this function returns, as set_active_memcg() requires; null
        // means the task's own cgroup.
        let old = unsafe { ucma_shim::ucma_shim_set_active_memcg(self.ptr) };
        let r = f(GFP_ACCOUNTED_NORETRY);
        // SAFETY: restores, on the same task, the value the call above
        // replaced; scopes begun in `f` have ended (they are closures too),
        // and whoever set `old` holds its reference for longer than this.
        unsafe { ucma_shim::ucma_shim_set_active_memcg(old) };
        r
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        // SAFETY: by the invariant the reference is ours (or `ptr` is null,
        // which mem_cgroup_put() ignores).
        unsafe { ucma_shim::ucma_shim_memcg_put(self.ptr) };
    }
}
