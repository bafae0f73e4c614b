// SPDX-License-Identifier: GPL-2.0

//! An intrusive list whose items record which list holds them.
//!
//! `kernel::list::List::remove` is `unsafe`: the item must be on that list
//! or on none, which the list cannot check. A [`TaggedList`] stamps each item
//! with its own tag when it takes the item and clears it when it lets the
//! item go, so [`TaggedList::remove`] can tell an item of another list
//! (which it leaves alone) from one of its own, and is safe.

use kernel::{
    list::{
        List,
        ListArc,
        ListItem, //
    },
    sync::{
        atomic::{
            ordering::Relaxed,
            Atomic, //
        },
        ArcBorrow,
    },
};

/// The tag of an item: which [`TaggedList`] holds it (0: none). Only this
/// file reads or writes it.
pub(crate) struct ListTag(Atomic<u64>);

impl ListTag {
    /// The tag of an item on no list.
    pub(crate) fn new() -> Self {
        ListTag(Atomic::new(0))
    }
}

/// An item that can be on a [`TaggedList`] of links `ID`. Implement it with
/// [`impl_tagged!`].
///
/// # Safety
///
/// `tag` returns the same tag for an item every time, and no two
/// items share one. (An item's `Tagged` impls for two `ID`s may share a
/// tag without harm: a list only ever writes its own tag or 0, so another
/// list can make a remove miss, never make one find an item that is not
/// there; give each `ID` its own field all the same.)
pub(crate) unsafe trait Tagged<const ID: u64 = 0>: ListItem<ID> {
    /// The item's tag.
    fn tag(&self) -> &ListTag;
}

/// Implements [`Tagged`] for a struct with a [`ListTag`] field:
/// `impl_tagged! { impl Tagged<0> for Context { self.list_tag } }`. The
/// field must be the struct's own (checked: `offset_of!`, which does not
/// look through `Deref`) and a `ListTag` itself, not a pointer that derefs
/// to one, which two items could share (checked: a raw pointer to the
/// field must be a `*const ListTag`, and raw pointers do not
/// deref-coerce). (It expands to an `unsafe impl`: invoke it outside the
/// modules that forbid `unsafe`.)
macro_rules! impl_tagged {
    (impl Tagged<$id:literal> for $t:ty { self.$field:ident }) => {
        const _: usize = ::core::mem::offset_of!($t, $field);
        const _: fn(&$t) -> *const $crate::tagged_list::ListTag = |item| &raw const item.$field;
        // SAFETY: the tag is a field of each item, so no two items share
        // one, and it is the same for an item every time.
        unsafe impl $crate::tagged_list::Tagged<$id> for $t {
            fn tag(&self) -> &$crate::tagged_list::ListTag {
                &self.$field
            }
        }
    };
}
pub(crate) use impl_tagged;

/// The tag of the next list; 0 means "on no list".
static NEXT_TAG: Atomic<u64> = Atomic::new(1);

/// A [`List`] that stamps its items with its tag.
///
/// # Invariants
///
/// `tag` is non-zero and no other `TaggedList` has it (a 64-bit counter does
/// not wrap). An item whose tag equals `tag` is on `list`: the tag is set
/// when the item is added and cleared when it is taken off, both through
/// `&mut self`. (The converse may fail only where an item's `Tagged` impls
/// for two `ID`s share a tag, which [`Tagged`] allows: another list's push
/// or pop may overwrite or clear it, which makes a remove here miss, never
/// find an item that is not on `list`.)
pub(crate) struct TaggedList<T: ?Sized + Tagged<ID>, const ID: u64 = 0> {
    list: List<T, ID>,
    tag: u64,
}

impl<T: ?Sized + Tagged<ID>, const ID: u64> TaggedList<T, ID> {
    /// An empty list with a tag of its own.
    pub(crate) fn new() -> Self {
        // INVARIANT: the counter starts at 1 and only grows.
        TaggedList {
            list: List::new(),
            tag: NEXT_TAG.fetch_add(1, Relaxed),
        }
    }

    /// The items, head first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = ArcBorrow<'_, T>> {
        self.list.iter()
    }

    /// Adds `item` at the tail.
    pub(crate) fn push_back(&mut self, item: ListArc<T, ID>) {
        // INVARIANT: the item is on no list (a `ListArc` is the right to add
        // it to one); it is stamped as it goes on this one.
        item.tag().0.store(self.tag, Relaxed);
        self.list.push_back(item);
    }

    /// Takes the item at the head.
    pub(crate) fn pop_front(&mut self) -> Option<ListArc<T, ID>> {
        let item = self.list.pop_front()?;
        // INVARIANT: off the list, unstamped.
        item.tag().0.store(0, Relaxed);
        Some(item)
    }

    /// Whether `item` is on this list.
    pub(crate) fn contains(&self, item: &T) -> bool {
        // Only this list stamps an item with this tag, through `&mut self`:
        // whoever holds `&self` sees no stamp of ours come or go.
        item.tag().0.load(Relaxed) == self.tag
    }

    /// Takes `item` off this list; `None` if it is not on it.
    pub(crate) fn remove(&mut self, item: &T) -> Option<ListArc<T, ID>> {
        // Only this list stamps an item with this tag, and it does so through
        // `&mut self`, which the caller holds: the tag cannot change under us
        // to or from ours. (The lock that gives `&mut self` also orders this
        // read after any earlier unstamping by this list.)
        if item.tag().0.load(Relaxed) != self.tag {
            return None;
        }
        // SAFETY: by the type invariant an item stamped with our tag is on
        // `self.list` (no other item shares its tag: `Tagged`'s contract, and nothing
        // but this file writes a tag).
        let taken = unsafe { self.list.remove(item) }?;
        // INVARIANT: off the list, unstamped.
        taken.tag().0.store(0, Relaxed);
        Some(taken)
    }
}
