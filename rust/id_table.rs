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
//! entries and no compare-and-exchange, and cannot live in a `static`: this
//! wraps what the module needs. It imports nothing from the rest of the
//! crate.

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
/// 32-bit ids.
///
/// # Invariants
///
/// Once [`IdTable::init`] has run, `xa` is an xarray initialised with
/// `XA_FLAGS_ALLOC` whose entries are zero entries (reserved ids, each owned
/// by one [`Reservation`]) or pointers returned by `T::into_foreign`, owned by
/// the table.
pub(crate) struct IdTable<T: ForeignOwnable> {
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

/// The right to an id reserved in an [`IdTable`]: given by
/// [`IdTableGuard::reserve`] and [`IdTableGuard::unpublish`], consumed by
/// [`IdTableGuard::publish`] or [`IdTableGuard::release`].
///
/// It names its table's type, so a reservation of one table cannot be
/// spent on a table of another type.
#[must_use = "a reserved id is freed only by IdTableGuard::release or published"]
pub(crate) struct Reservation<T> {
    id: u32,
    _table: PhantomData<fn(T)>,
}

impl<T> Reservation<T> {
    /// The reserved id.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }
}

impl<T: ForeignOwnable> IdTable<T> {
    /// A table to be initialised with [`IdTable::init`] before any use.
    pub(crate) const fn uninit() -> Self {
        IdTable {
            xa: Opaque::uninit(),
            _p: PhantomData,
        }
    }

    /// Initialises the table, empty.
    ///
    /// # Safety
    ///
    /// Called once, before any other method, while nothing else uses the table.
    pub(crate) unsafe fn init(&self) {
        // SAFETY: `xa` is valid for writes and not in use, as guaranteed by the caller.
        unsafe { bindings::xa_init_flags(self.xa.get(), bindings::XA_FLAGS_ALLOC) };
        // INVARIANT: initialised, empty, with XA_FLAGS_ALLOC.
    }

    /// Drops every object still in the table and frees its memory; the table
    /// is empty (and initialised) afterwards.
    ///
    /// # Safety
    ///
    /// The table was initialised, and no other thread uses it any more.
    pub(crate) unsafe fn destroy(&self) {
        let mut index: usize = 0;
        loop {
            // SAFETY: the table is initialised; `xa_find` takes its own locks
            // and skips zero entries.
            let p = unsafe {
                bindings::xa_find(self.xa.get(), &mut index, usize::MAX, bindings::XA_PRESENT)
            };
            if p.is_null() {
                break;
            }
            // SAFETY: as above; `xa_erase` takes the lock.
            unsafe { bindings::xa_erase(self.xa.get(), index) };
            // SAFETY: a non-zero entry came from `T::into_foreign` and the
            // table owned it; it is out of the table now.
            drop(unsafe { T::from_foreign(p) });
        }
        // SAFETY: no other thread uses the table; zero entries need no cleanup.
        unsafe { bindings::xa_destroy(self.xa.get()) };
    }

    /// Takes the table's lock (a spinlock: nothing may sleep under it).
    pub(crate) fn lock(&self) -> IdTableGuard<'_, T> {
        // SAFETY: by the type invariant the xarray is initialised.
        unsafe { bindings::xa_lock(self.xa.get()) };
        IdTableGuard { table: self }
    }
}

/// An [`IdTable`] whose lock is held; unlocks when dropped.
pub(crate) struct IdTableGuard<'a, T: ForeignOwnable> {
    table: &'a IdTable<T>,
}

impl<T: ForeignOwnable> Drop for IdTableGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the guard holds the lock.
        unsafe { bindings::xa_unlock(self.table.xa.get()) };
    }
}

impl<T: ForeignOwnable> IdTableGuard<'_, T> {
    fn xa(&self) -> *mut bindings::xarray {
        self.table.xa.get()
    }

    /// Reserves the lowest free id (`xa_alloc` of a NULL entry), allocating
    /// with `gfp`. May drop and retake the lock to allocate. `ENOMEM` when
    /// the ids or the memory run out, as in C.
    pub(crate) fn reserve(&mut self, gfp: bindings::gfp_t) -> Result<Reservation<T>> {
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
        Ok(Reservation {
            id,
            _table: PhantomData,
        })
    }

    /// Makes `obj` visible under the reserved id.
    pub(crate) fn publish(&mut self, r: Reservation<T>, obj: T) {
        let p = obj.into_foreign();
        // SAFETY: the lock is held. Replacing an existing (zero) entry
        // allocates nothing, so this cannot fail. The reservation proves the
        // slot holds the zero entry and is no one else's.
        // INVARIANT: the slot now owns a pointer from `T::into_foreign`.
        unsafe { bindings::__xa_store(self.xa(), r.id as usize, p, 0) };
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
    ) -> Option<(T, Reservation<T>)> {
        // SAFETY: the lock is held.
        let p = unsafe { bindings::xa_load(self.xa(), id as usize) };
        if p.is_null() {
            return None;
        }
        // SAFETY: a non-zero entry came from `T::into_foreign`.
        if !is_it(unsafe { T::borrow(p) }) {
            return None;
        }
        // SAFETY: the lock is held. In an allocating xarray a NULL store
        // leaves the zero entry (the id stays reserved); over an existing
        // entry it allocates nothing.
        unsafe { bindings::__xa_store(self.xa(), id as usize, null_mut(), 0) };
        // SAFETY: `p` came from `T::into_foreign` and is out of the table.
        Some((
            unsafe { T::from_foreign(p) },
            Reservation {
                id,
                _table: PhantomData,
            },
        ))
    }

    /// Frees a reserved id.
    pub(crate) fn release(&mut self, r: Reservation<T>) {
        // SAFETY: the lock is held; the reservation proves the slot holds the
        // zero entry, so nothing the table owns is dropped.
        unsafe { bindings::__xa_erase(self.xa(), r.id as usize) };
    }
}
