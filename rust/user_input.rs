// SPDX-License-Identifier: GPL-2.0

//! Taking values from userspace as the C module does: command indices
//! clamped against speculation (`array_index_nospec`) and option buffers
//! copied as `memdup_user` does (`GFP_USER | __GFP_NOWARN`, so that a large
//! user-chosen size fails quietly with `ENOMEM`), but charged to the
//! caller's memory cgroup (`__GFP_ACCOUNT | __GFP_RETRY_MAYFAIL`: `ENOMEM`
//! at its limit too).

use core::ptr::NonNull;

use kernel::{
    bindings,
    error::from_err_ptr,
    fs::File,
    prelude::*,
    uaccess::UserPtr, //
};

use crate::rdma_sys;

/// `array_index_nospec(index, size)`: `index` if it is below `size`, else 0,
/// also under speculation. Callers check `index < size` first.
pub(crate) fn index_nospec(index: u32, size: u32) -> u32 {
    // SAFETY: a pure function of its arguments.
    unsafe { rdma_sys::ucma_shim_index_nospec(index, size) }
}

/// `ib_safe_file_access()`: whether the writer of `file` has the
/// credentials it was opened with and is not in a kernel context that
/// writes on someone's behalf (a refusal is logged once), as every RDMA
/// write()-command interface requires.
pub(crate) fn safe_file_access(file: &File) -> bool {
    // SAFETY: `file` is a valid file for the borrow; the check only reads it.
    unsafe { rdma_sys::ucma_shim_safe_file_access(file.as_ptr()) }
}

/// `KMALLOC_MAX_SIZE` of the running kernel: the largest `memdup_user`.
pub(crate) fn kmalloc_max_size() -> usize {
    // SAFETY: returns a constant.
    unsafe { rdma_sys::ucma_shim_kmalloc_max_size() }
}

/// A copy of user memory in a `kmalloc` buffer, freed on drop.
///
/// # Invariants
///
/// `ptr` points to `len` initialised bytes from `kmalloc`, owned by this value.
pub(crate) struct UserBuffer {
    ptr: NonNull<u8>,
    len: usize,
}

impl UserBuffer {
    /// `memdup_user(src, len)`, charged to the caller's memory cgroup:
    /// `EFAULT` if the user memory cannot be read, `ENOMEM` (without an
    /// allocation-failure report) if `len` bytes cannot be allocated.
    pub(crate) fn memdup(src: UserPtr, len: usize) -> Result<Self> {
        // SAFETY: the shim checks the user range itself (copy_from_user); it
        // returns a kmalloc'd buffer of `len` bytes or an error pointer.
        let p = from_err_ptr(unsafe {
            rdma_sys::ucma_shim_memdup_user_account(src.as_const_ptr(), len)
        })?;
        // INVARIANT: a fresh buffer of `len` bytes copied from userspace
        // (a zero-length copy is ZERO_SIZE_PTR, non-null, never read).
        Ok(UserBuffer {
            ptr: NonNull::new(p.cast::<u8>()).ok_or(ENOMEM)?,
            len,
        })
    }

    /// The copied bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: by the invariant `ptr` holds `len` initialised bytes.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for UserBuffer {
    fn drop(&mut self) {
        // SAFETY: by the invariant the buffer came from kmalloc and is ours.
        unsafe { bindings::kfree(self.ptr.as_ptr().cast()) };
    }
}

// SAFETY: the buffer is plain memory owned by this value.
unsafe impl Send for UserBuffer {}
