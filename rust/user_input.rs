// SPDX-License-Identifier: GPL-2.0

//! Taking values from userspace as the C module does: command structs
//! copied straight into their typed value and replies straight from it
//! (`copy_from_user()` and `copy_to_user()`, no staging buffer), command
//! indices clamped against speculation (`array_index_nospec`) and option
//! buffers copied as `memdup_user` does (`GFP_USER | __GFP_NOWARN`, so that
//! a large user-chosen size fails quietly with `ENOMEM`), but charged to
//! the caller's memory cgroup (`__GFP_ACCOUNT | __GFP_RETRY_MAYFAIL`:
//! `ENOMEM` at its limit too).

use core::{
    mem::MaybeUninit,
    ptr::NonNull, //
};

use kernel::{
    bindings,
    error::from_err_ptr,
    ffi::c_ulong,
    prelude::*,
    uaccess::UserPtr, //
};
use zerocopy::{
    FromBytes,
    Immutable,
    IntoBytes, //
};

/// `copy_from_user()` of `len` bytes at `src` into `dst`: `EFAULT` unless
/// every byte was copied.
///
/// # Safety
///
/// `dst` is valid for writes of `len` bytes.
unsafe fn copy_from_user(dst: *mut u8, src: UserPtr, len: usize) -> Result {
    // `copy_from_user()` is `_copy_from_user()` once its object-size check
    // is done, which for these sizes (a struct, at most its size) passes at
    // build time; called directly, the helper's extra call goes.
    let n = c_ulong::try_from(len).map_err(|_| EFAULT)?;
    // SAFETY: `dst` is valid for `len` bytes, as guaranteed by the caller;
    // `_copy_from_user` checks the user range itself.
    let left = unsafe { bindings::_copy_from_user(dst.cast(), src.as_const_ptr(), n) };
    if left == 0 {
        Ok(())
    } else {
        Err(EFAULT)
    }
}

/// A `T` read whole from the user address `src`: `EFAULT` unless every
/// byte could be read.
pub(crate) fn read_user<T: FromBytes>(src: UserPtr) -> Result<T> {
    let mut v = MaybeUninit::<T>::uninit();
    // SAFETY: `v` has room for a `T`.
    unsafe { copy_from_user(v.as_mut_ptr().cast(), src, size_of::<T>()) }?;
    // SAFETY: every byte of `v` was written above, and any bytes are a `T`
    // (`FromBytes`).
    Ok(unsafe { v.assume_init() })
}

/// A `T` whose first `min(len, size_of::<T>())` bytes are read from the
/// user address `src` and the rest are zero: `EFAULT` unless all those
/// bytes could be read.
pub(crate) fn read_user_prefix<T: FromBytes + IntoBytes>(src: UserPtr, len: usize) -> Result<T> {
    let mut v = T::new_zeroed();
    let bytes = v.as_mut_bytes();
    let n = len.min(bytes.len());
    // SAFETY: `bytes` has room for `n` bytes.
    unsafe { copy_from_user(bytes.as_mut_ptr(), src, n) }?;
    Ok(v)
}

/// `copy_to_user()` of `data` to the user address `dst`: `EFAULT` unless
/// every byte was copied.
pub(crate) fn write_user(dst: UserPtr, data: &[u8]) -> Result {
    let n = c_ulong::try_from(data.len()).map_err(|_| EFAULT)?;
    // As for `copy_from_user`: `_copy_to_user()` is `copy_to_user()` once
    // its object-size check (on a slice's length) is done.
    // SAFETY: `data` is valid for reads of its length; `_copy_to_user`
    // checks the user range itself.
    let left = unsafe { bindings::_copy_to_user(dst.as_mut_ptr(), data.as_ptr().cast(), n) };
    if left == 0 {
        Ok(())
    } else {
        Err(EFAULT)
    }
}

/// `copy_to_user()` of the first `min(len, size_of::<T>())` bytes of `v`.
pub(crate) fn write_user_prefix<T: IntoBytes + Immutable>(
    dst: UserPtr,
    v: &T,
    len: usize,
) -> Result {
    let b = v.as_bytes();
    write_user(dst, &b[..len.min(b.len())])
}

use crate::ucma_shim;

/// `array_index_nospec(index, size)`: `index` if it is below `size`, else 0,
/// also under speculation. Callers check `index < size` first.
pub(crate) fn index_nospec(index: u32, size: u32) -> u32 {
    // SAFETY: a pure function of its arguments.
    unsafe { ucma_shim::ucma_shim_index_nospec(index, size) }
}

/// `KMALLOC_MAX_SIZE` of the running kernel: the largest `memdup_user`.
pub(crate) fn kmalloc_max_size() -> usize {
    // SAFETY: returns a constant.
    unsafe { ucma_shim::ucma_shim_kmalloc_max_size() }
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
            ucma_shim::ucma_shim_memdup_user_account(src.as_const_ptr(), len)
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
