// SPDX-License-Identifier: GPL-2.0

//! An id allocator and lookup table with the C module's xarray semantics:
//! lowest free id first, ids reserved (invisible) until published, and
//! unpublished by exactly one winner before they are freed.

use kernel::{
    prelude::*,
    sync::Arc, //
};

/// A slot of an [`IdTable`].
enum Slot<T> {
    /// Unused.
    Free,
    /// Allocated, not yet visible to lookups.
    Reserved,
    /// Visible to lookups.
    Live(Arc<T>),
    /// Being torn down: invisible to lookups, not reusable yet.
    Closing,
}

/// Objects numbered by small integers, lowest free number first.
pub(crate) struct IdTable<T> {
    slots: KVec<Slot<T>>,
    /// No slot below this index is free.
    first_free: usize,
}

impl<T> IdTable<T> {
    /// An empty table.
    pub(crate) const fn new() -> Self {
        IdTable {
            slots: KVec::new(),
            first_free: 0,
        }
    }

    fn slot(&self, id: u32) -> Option<&Slot<T>> {
        self.slots.get(usize::try_from(id).ok()?)
    }

    fn slot_mut(&mut self, id: u32) -> Option<&mut Slot<T>> {
        self.slots.get_mut(usize::try_from(id).ok()?)
    }

    /// Allocates the lowest free id, unpublished.
    pub(crate) fn reserve(&mut self) -> Result<u32> {
        let mut i = self.first_free;
        while let Some(slot) = self.slots.get(i) {
            if matches!(slot, Slot::Free) {
                break;
            }
            i += 1;
        }
        let id = u32::try_from(i).map_err(|_| ENOMEM)?;
        match self.slots.get_mut(i) {
            Some(slot) => *slot = Slot::Reserved,
            None => self.slots.push(Slot::Reserved, GFP_KERNEL)?,
        }
        self.first_free = i + 1;
        Ok(id)
    }

    /// Makes a reserved id visible to lookups.
    pub(crate) fn publish(&mut self, id: u32, obj: Arc<T>) {
        if let Some(slot @ Slot::Reserved) = self.slot_mut(id) {
            *slot = Slot::Live(obj);
        }
    }

    /// The published object `id`.
    pub(crate) fn get(&self, id: u32) -> Option<&Arc<T>> {
        match self.slot(id) {
            Some(Slot::Live(obj)) => Some(obj),
            _ => None,
        }
    }

    /// Whether `obj` is published as `id`.
    pub(crate) fn is_live(&self, id: u32, obj: &T) -> bool {
        self.get(id).is_some_and(|o| core::ptr::eq(&**o, obj))
    }

    /// Hides `obj` (published as `id`) from lookups. Only one caller wins.
    pub(crate) fn unpublish(&mut self, id: u32, obj: &T) -> bool {
        if !self.is_live(id, obj) {
            return false;
        }
        if let Some(slot) = self.slot_mut(id) {
            // The table's reference goes; the caller holds its own.
            *slot = Slot::Closing;
        }
        true
    }

    /// Frees an unpublished (reserved or closing) id.
    pub(crate) fn release(&mut self, id: u32) {
        if let Some(slot @ (Slot::Reserved | Slot::Closing)) = self.slot_mut(id) {
            *slot = Slot::Free;
            if let Ok(i) = usize::try_from(id) {
                self.first_free = self.first_free.min(i);
            }
        }
        // Trim free slots at the end so the table shrinks back.
        while matches!(self.slots.last(), Some(Slot::Free)) {
            self.slots.pop();
        }
    }
}
