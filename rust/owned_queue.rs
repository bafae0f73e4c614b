// SPDX-License-Identifier: GPL-2.0

//! A workqueue owned by the module.
//!
//! The 7.3 kernel crate offers only the system workqueues, which a loadable
//! module cannot drain before its code goes away. An [`OwnedQueue`] is
//! destroyed (drained, then freed) when dropped, at module exit.
//!
//! It takes plain work only, never delayed work: `destroy_workqueue()`
//! does not wait for a delayed item whose timer has not fired, which
//! would then queue itself on the freed queue. So the queue itself (a
//! [`Queue`], whose `enqueue_delayed` is safe) is never handed out.

use core::ptr::NonNull;

use kernel::{
    bindings,
    prelude::*,
    str::as_char_ptr_in_const_context,
    workqueue::{
        Queue,
        RawWorkItem, //
    },
};

/// An unbound workqueue allocated by this module.
///
/// # Invariants
///
/// `ptr` is a workqueue from `alloc_workqueue()`, destroyed only in `drop`.
pub(crate) struct OwnedQueue {
    ptr: NonNull<bindings::workqueue_struct>,
}

// SAFETY: workqueues may be used and destroyed from any thread.
unsafe impl Send for OwnedQueue {}
// SAFETY: queueing work is thread-safe.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// Allocates an unbound queue named `name`.
    pub(crate) fn new(name: &'static CStr) -> Result<Self> {
        // SAFETY: the format is a NUL-terminated `%s`, and its one argument
        // `name` a NUL-terminated string (`alloc_workqueue()` copies it).
        let ptr = unsafe {
            bindings::alloc_workqueue_noprof(
                as_char_ptr_in_const_context(c"%s"),
                bindings::wq_flags_WQ_UNBOUND,
                0,
                name.as_char_ptr(),
            )
        };
        // INVARIANT: a queue fresh from alloc_workqueue().
        Ok(OwnedQueue {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// Waits until the queue is empty and no work of it runs, letting work
    /// that runs requeue itself meanwhile (`drain_workqueue()`). Work
    /// queued from elsewhere meanwhile makes the kernel warn and drop it
    /// with its pending bit still set: its pointer (an `Arc`'s reference)
    /// leaks and the item can never be queued again, though
    /// [`Self::enqueue`] reported it queued. Not undefined behaviour; the
    /// module drains only at exit, when nothing queues.
    pub(crate) fn drain(&self) {
        // SAFETY: `ptr` stays valid until `drop`, which the borrow precedes.
        unsafe { bindings::drain_workqueue(self.ptr.as_ptr()) };
    }

    /// Queues the work item `w` (`queue_work()`), as [`Queue::enqueue`];
    /// `drop` waits for it.
    pub(crate) fn enqueue<W, const ID: u64>(&self, w: W) -> W::EnqueueOutput
    where
        W: RawWorkItem<ID> + Send + 'static,
    {
        // SAFETY: `ptr` stays valid until `drop`, which the borrow precedes;
        // the `&Queue` does not leave this function.
        let queue = unsafe { Queue::from_raw(self.ptr.as_ptr()) };
        queue.enqueue(w)
    }
}

impl Drop for OwnedQueue {
    fn drop(&mut self) {
        // SAFETY: by the invariant, `ptr` is a live queue destroyed only here;
        // destroy_workqueue() drains it first.
        unsafe { bindings::destroy_workqueue(self.ptr.as_ptr()) };
    }
}
