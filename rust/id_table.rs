// SPDX-License-Identifier: GPL-2.0

//! An id table over the kernel's allocating xarray.
//!
//! C header: [`include/linux/xarray.h`](srctree/include/linux/xarray.h)
//!
//! It has the semantics of the C module's `ctx_table` and `multicast_table`:
//! ids are allocated lowest free first and stay *reserved* (a zero entry,
//! invisible to lookups) until published; an object is unpublished by
//! exactly one winner, which then owns the reserved id until it releases
//! it. Every operation is O(log n) in the number of ids, and the table
//! grows node by node (no reallocation of the whole table).
//!
//! The 7.3 `kernel::xarray::XArray` has no allocation (`xa_alloc`), no zero
//! entries and no compare-and-exchange: this wraps what the module needs.
//! It imports nothing from the rest of the crate.

use core::{
    marker::PhantomData,
    ptr::null_mut, //
};

use kernel::{
    bindings,
    prelude::*,
    types::{
        ForeignOwnable,
        Opaque, //
    },
};

/// Objects of type `T` (a [`ForeignOwnable`], e.g. `Arc<U>`) numbered by
/// 32-bit ids. Dropping the table drops the objects still in it.
///
/// # Invariants
///
/// `xa` is an xarray initialised with `XA_FLAGS_ALLOC` whose entries are
/// zero entries (reserved ids, each owned by at most one [`Reservation`]:
/// one may have been forgotten) or
/// pointers returned by `T::into_foreign`, owned by the table.
#[pin_data(PinnedDrop)]
pub(crate) struct IdTable<T: ForeignOwnable> {
    #[pin]
    xa: Opaque<bindings::xarray>,
    _p: PhantomData<T>,
}

// SAFETY: the table owns `T`s, which it hands to whichever thread removes
// them, and its xarray may be used from any thread.
unsafe impl<T: ForeignOwnable + Send> Send for IdTable<T> {}
// SAFETY: every access to the xarray is made under its own lock (`xa_lock`);
// a shared table hands out `T::Borrowed`s to several threads, so `T` must
// be `Sync` too.
unsafe impl<T: ForeignOwnable + Send + Sync> Sync for IdTable<T> {}

/// The right to an id reserved in one [`IdTable`]: given by
/// [`IdTableGuard::reserve`] and [`IdTableGuard::unpublish`], consumed by
/// [`Reservation::publish`] or [`Reservation::release`], which lock the
/// table it was given by (so it cannot be spent on another table).
///
/// # Invariants
///
/// `id` is reserved (a zero entry) in `table`, and this is its only
/// `Reservation`.
#[must_use = "a reserved id is freed only by Reservation::release or published"]
pub(crate) struct Reservation<'t, T: ForeignOwnable> {
    id: u32,
    table: &'t IdTable<T>,
}

impl<T: ForeignOwnable> Reservation<'_, T> {
    /// The reserved id.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// Makes `obj` visible under the reserved id.
    pub(crate) fn publish(self, obj: T) {
        let guard = self.table.lock();
        let p = obj.into_foreign();
        // SAFETY: the lock is held. Replacing an existing (zero) entry
        // allocates nothing, and `p` is no internal entry (`new` asserts
        // `T::FOREIGN_ALIGN >= 4`), so this cannot fail. By the invariant
        // the slot holds the zero entry and is no one else's.
        // INVARIANT: the slot now owns a pointer from `T::into_foreign`.
        // SAFETY: as said above: lock held, slot reserved for us.
        unsafe { bindings::__xa_store(guard.xa(), self.id as usize, p, 0) };
    }

    /// Frees the reserved id.
    pub(crate) fn release(self) {
        let guard = self.table.lock();
        // The slot holds the zero entry (invariant): nothing owned is dropped.
        // SAFETY: the lock is held; the slot is reserved for us (invariant).
        unsafe { bindings::__xa_erase(guard.xa(), self.id as usize) };
    }
}

impl<T: ForeignOwnable> IdTable<T> {
    /// An empty table.
    pub(crate) fn new() -> impl PinInit<Self> {
        // An entry whose two low bits are 0b10 is one of the xarray's own
        // (`xa_is_internal()`), which `__xa_store` refuses: `T`'s pointers
        // must have neither.
        const { assert!(T::FOREIGN_ALIGN >= 4) };
        // INVARIANT: initialised, empty, with XA_FLAGS_ALLOC.
        pin_init!(Self {
            xa <- Opaque::ffi_init(|slot: *mut bindings::xarray| {
                // `xa_init_flags` initialises the whole xarray in place.
                // SAFETY: `slot` is valid for writes, and pinned.
                unsafe { bindings::xa_init_flags(slot, bindings::XA_FLAGS_ALLOC) }
            }),
            _p: PhantomData,
        })
    }

    /// Takes the table's lock (a spinlock: nothing may sleep under it).
    pub(crate) fn lock(&self) -> IdTableGuard<'_, T> {
        // SAFETY: by the invariant the xarray is initialised.
        unsafe { bindings::xa_lock(self.xa.get()) };
        // INVARIANT: the lock was just taken, by this thread.
        IdTableGuard {
            table: self,
            _not_send: PhantomData,
        }
    }
}

#[pinned_drop]
impl<T: ForeignOwnable> PinnedDrop for IdTable<T> {
    /// Drops every object still in the table and frees its memory.
    fn drop(self: Pin<&mut Self>) {
        let xa = self.xa.get();
        let mut index: usize = 0;
        loop {
            // `xa_find` takes its own locks and skips zero entries.
            // SAFETY: the xarray is initialised (invariant).
            let p = unsafe { bindings::xa_find(xa, &mut index, usize::MAX, bindings::XA_PRESENT) };
            if p.is_null() {
                break;
            }
            // SAFETY: as above; `xa_erase` takes the lock.
            unsafe { bindings::xa_erase(xa, index) };
            // SAFETY: a non-zero entry came from `T::into_foreign` and the
            // table owned it; it is out of the table now.
            drop(unsafe { T::from_foreign(p) });
        }
        // Zero entries need no cleanup; a `Reservation` borrows the table.
        // SAFETY: the table is being dropped: nothing else uses it.
        unsafe { bindings::xa_destroy(xa) };
    }
}

/// An [`IdTable`] whose lock is held; unlocks when dropped.
///
/// # Invariants
///
/// This thread holds `table`'s xarray lock, taken when the guard was made
/// and released only by its `drop`.
pub(crate) struct IdTableGuard<'a, T: ForeignOwnable> {
    table: &'a IdTable<T>,
    /// Not `Send`: the spinlock is released by the thread that took it.
    _not_send: PhantomData<*mut ()>,
}

impl<T: ForeignOwnable> Drop for IdTableGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the guard holds the lock.
        unsafe { bindings::xa_unlock(self.table.xa.get()) };
    }
}

impl<'a, T: ForeignOwnable> IdTableGuard<'a, T> {
    fn xa(&self) -> *mut bindings::xarray {
        self.table.xa.get()
    }

    /// Reserves the lowest free id (`xa_alloc` of a NULL entry), allocating
    /// with `gfp`. May drop and retake the lock to allocate. `ENOMEM` when
    /// the ids or the memory run out, as in C.
    pub(crate) fn reserve(&mut self, gfp: bindings::gfp_t) -> Result<Reservation<'a, T>> {
        let mut id: u32 = 0;
        let limit = bindings::xa_limit {
            max: u32::MAX,
            min: 0,
        };
        // SAFETY: the lock is held, as `__xa_alloc` requires; `id` is valid
        // for writes. A NULL entry in an allocating xarray is a zero entry.
        let ret = unsafe { bindings::__xa_alloc(self.xa(), &mut id, null_mut(), limit, gfp) };
        if ret != 0 {
            return Err(ENOMEM);
        }
        // INVARIANT: `id` now holds the zero entry, reserved for this
        // `Reservation` alone.
        Ok(Reservation {
            id,
            table: self.table,
        })
    }

    /// The published object `id`, if any.
    pub(crate) fn get(&self, id: u32) -> Option<T::Borrowed<'_>> {
        // SAFETY: the lock is held; `xa_load` returns NULL for zero entries.
        let p = unsafe { bindings::xa_load(self.xa(), id as usize) };
        if p.is_null() {
            return None;
        }
        // SAFETY: a non-zero entry came from `T::into_foreign`; it stays in
        // the table while the guard is borrowed.
        Some(unsafe { T::borrow(p) })
    }

    /// Hides the object published as `id` from lookups if `is_it` accepts
    /// it, and hands it over with the id, which stays reserved. Only one
    /// caller can win.
    pub(crate) fn unpublish(
        &mut self,
        id: u32,
        is_it: impl FnOnce(T::Borrowed<'_>) -> bool,
    ) -> Option<(T, Reservation<'a, T>)> {
        self.unpublish_checked(id, |obj| if is_it(obj) { Ok(()) } else { Err(ENOENT) })
            .ok()
    }

    /// [`Self::unpublish`] with the refusal's error: `ENOENT` if nothing is
    /// published as `id`, `check`'s error if it refuses the object. One
    /// lookup of the id.
    pub(crate) fn unpublish_checked(
        &mut self,
        id: u32,
        check: impl FnOnce(T::Borrowed<'_>) -> Result,
    ) -> Result<(T, Reservation<'a, T>)> {
        // SAFETY: the lock is held.
        let p = unsafe { bindings::xa_load(self.xa(), id as usize) };
        if p.is_null() {
            return Err(ENOENT);
        }
        // SAFETY: a non-zero entry came from `T::into_foreign`; the table
        // keeps it while the guard (and so `obj`) is borrowed.
        let obj = unsafe { T::borrow(p) };
        check(obj)?;
        // SAFETY: the lock is held. In an allocating xarray a NULL store
        // leaves the zero entry (the id stays reserved); over an existing
        // entry it allocates nothing.
        unsafe { bindings::__xa_store(self.xa(), id as usize, null_mut(), 0) };
        // SAFETY: `p` came from `T::into_foreign` and is out of the table.
        let obj = unsafe { T::from_foreign(p) };
        // INVARIANT: the slot holds the zero entry, reserved for this
        // `Reservation` alone (its object was taken, once, under the lock).
        Ok((
            obj,
            Reservation {
                id,
                table: self.table,
            },
        ))
    }
}
