// SPDX-License-Identifier: GPL-2.0

//! A queued CM event, the per-file event list, and the spare events a file
//! keeps for reuse.

#![forbid(unsafe_code)]

use core::{
    mem::ManuallyDrop,
    pin::Pin, //
};

use kernel::{
    alloc::Flags,
    list::{
        List,
        ListArc,
        ListLinks, //
    },
    prelude::*,
    sync::{
        Arc,
        UniqueArc, //
    },
};

use zerocopy::FromZeros;

use crate::{
    context::Context,
    multicast::Multicast,
    ucma_core::uapi::EventResp, //
};

/// What an event is about, beyond its context.
pub(crate) enum EventKind {
    /// An event of the context alone.
    Plain,
    /// A connect request, with the new context. It is published (its id
    /// answers commands) as soon as the request is queued, as in C.
    ConnectRequest(Arc<Context>),
    /// An event of a multicast join of the context.
    Multicast(Arc<Multicast>),
}

/// What an event is about: its context and what else.
pub(crate) struct EventAbout {
    /// The context the event is counted against (the listener, for a
    /// connect request).
    ctx: Arc<Context>,
    /// What else the event is about.
    kind: EventKind,
}

/// One event waiting in a file's queue for GET_EVENT, or a spare.
///
/// # Invariants
///
/// `about` is `None` only in a spare: an event emptied by
/// [`Event::into_spare`], held as a [`SpareEvent`] (in no list) until
/// [`Event::refill`] gives it an `about` again.
#[pin_data]
pub(crate) struct Event {
    /// The context and what else the event is about.
    about: Option<EventAbout>,
    /// The 336-byte image GET_EVENT copies out.
    pub(crate) resp: EventResp,
    #[pin]
    links: ListLinks<0>,
}

/// An emptied event, kept for reuse: its allocation (charged to the memory
/// cgroup of whoever made it) outlives the event it carried. Only
/// [`Event::into_spare`] makes one.
///
/// # Invariants
///
/// The event's `about` is `None`.
pub(crate) struct SpareEvent(Pin<UniqueArc<Event>>);

/// How many spare events a file keeps: enough for the events in flight
/// between a producer and a few readers; bounded, so an idle file holds at
/// most this many (about 4 KiB).
const SPARE_EVENTS: usize = 8;

/// A file's spare events, a stack of at most [`SPARE_EVENTS`].
///
/// The slots are dropped by [`SpareEvents`]'s own `Drop`, which visits the
/// `len` kept ones only: the array's drop glue would test all
/// [`SPARE_EVENTS`] of them at every file's release, most files having
/// none.
///
/// # Invariants
///
/// `slots[..len]` are `Some`, the rest `None`; `len <= SPARE_EVENTS`.
pub(crate) struct SpareEvents {
    slots: ManuallyDrop<[Option<SpareEvent>; SPARE_EVENTS]>,
    len: usize,
}

impl SpareEvents {
    /// No spares.
    pub(crate) const fn new() -> Self {
        SpareEvents {
            slots: ManuallyDrop::new([const { None }; SPARE_EVENTS]),
            len: 0,
        }
    }

    /// The spare kept last, if any.
    pub(crate) fn take(&mut self) -> Option<SpareEvent> {
        let last = self.len.checked_sub(1)?;
        let spare = self.slots.get_mut(last)?.take();
        self.len = last;
        spare
    }

    /// Keeps `spare`; gives it back when the stack is full.
    pub(crate) fn put(&mut self, spare: SpareEvent) -> Option<SpareEvent> {
        match self.slots.get_mut(self.len) {
            Some(slot) => {
                *slot = Some(spare);
                self.len += 1;
                None
            }
            None => Some(spare),
        }
    }

    /// Gives up every spare (to be freed outside the file's lock); `None`
    /// if there is none (nothing to move out and drop).
    pub(crate) fn take_all(&mut self) -> Option<SpareEvents> {
        if self.len == 0 {
            return None;
        }
        Some(core::mem::replace(self, SpareEvents::new()))
    }
}

impl Drop for SpareEvents {
    fn drop(&mut self) {
        // By the invariant the slots from `len` on are `None`: taking the
        // first `len` drops every spare.
        while self.take().is_some() {}
    }
}

kernel::list::impl_list_arc_safe! {
    impl ListArcSafe<0> for Event { untracked; }
}
kernel::list::impl_list_item! {
    impl ListItem<0> for Event { using ListLinks { self.links }; }
}

/// A file's queue of events, oldest first.
pub(crate) type EventList = List<Event>;

impl Event {
    /// Allocates an event for `ctx`, with `flags`:
    /// [`GFP_ACCOUNTED`](crate::memcg::GFP_ACCOUNTED) in a command, the
    /// handler's ([`HandlerGfp`](crate::memcg::HandlerGfp)) in the event
    /// handler.
    pub(crate) fn new(
        ctx: Arc<Context>,
        kind: EventKind,
        resp: EventResp,
        flags: Flags,
    ) -> Result<ListArc<Event>> {
        ListArc::pin_init(
            try_pin_init!(Event {
                about: Some(EventAbout { ctx, kind }),
                resp,
                links <- ListLinks::new(),
            }),
            flags,
        )
    }

    /// Allocates an event for `ctx` (as [`Event::new`]) whose image `image`
    /// writes in place, onto zeros.
    pub(crate) fn new_with(
        ctx: Arc<Context>,
        kind: EventKind,
        image: impl FnOnce(&mut EventResp),
        flags: Flags,
    ) -> Result<ListArc<Event>> {
        let mut ev = UniqueArc::pin_init(
            try_pin_init!(Event {
                about: Some(EventAbout { ctx, kind }),
                resp: EventResp::new_zeroed(),
                links <- ListLinks::new(),
            }),
            flags,
        )?;
        image(ev.as_mut().project().resp);
        Ok(ListArc::from(ev))
    }

    /// Makes `spare` the event about `ctx` and `kind` whose image `image`
    /// writes in place (all of it: the spare holds an old one), allocating
    /// nothing.
    pub(crate) fn refill(
        spare: SpareEvent,
        ctx: Arc<Context>,
        kind: EventKind,
        image: impl FnOnce(&mut EventResp),
    ) -> ListArc<Event> {
        let SpareEvent(mut ev) = spare;
        let fields = ev.as_mut().project();
        // By `SpareEvent`'s invariant `about` is `None`: nothing is dropped
        // here (the caller may hold the file's lock).
        // INVARIANT: no longer a spare, `about` is set again.
        *fields.about = Some(EventAbout { ctx, kind });
        image(fields.resp);
        ListArc::from(ev)
    }

    /// Empties an event off the queue for reuse: returns what it was about
    /// (to be dropped outside the file's lock: the last reference to a
    /// context may go with it) and the spare, unless another reference to
    /// the event remains (then only this one is dropped).
    pub(crate) fn into_spare(ev: ListArc<Event>) -> (Option<EventAbout>, Option<SpareEvent>) {
        match Arc::into_unique_or_drop(ev.into_arc()) {
            Some(mut ev) => {
                let about = ev.as_mut().project().about.take();
                // INVARIANT: `about` was just taken.
                (about, Some(SpareEvent(ev)))
            }
            None => (None, None),
        }
    }

    /// The context the event is counted against (the listener, for a
    /// connect request); `None` only for a spare.
    pub(crate) fn ctx(&self) -> Option<&Arc<Context>> {
        self.about.as_ref().map(|a| &a.ctx)
    }

    /// The new context, for a connect request.
    pub(crate) fn child(&self) -> Option<&Arc<Context>> {
        match &self.about.as_ref()?.kind {
            EventKind::ConnectRequest(child) => Some(child),
            _ => None,
        }
    }

    /// The multicast join, for an event of one.
    pub(crate) fn join(&self) -> Option<&Arc<Multicast>> {
        match &self.about.as_ref()?.kind {
            EventKind::Multicast(mc) => Some(mc),
            _ => None,
        }
    }
}
