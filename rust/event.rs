// SPDX-License-Identifier: GPL-2.0

//! A queued CM event and the per-file event list.

#![forbid(unsafe_code)]

use kernel::{
    alloc::Flags,
    list::{
        List,
        ListArc,
        ListLinks, //
    },
    prelude::*,
    sync::Arc,
};

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

/// One event waiting in a file's queue for GET_EVENT.
#[pin_data]
pub(crate) struct Event {
    /// The context the event is counted against (the listener, for a
    /// connect request).
    pub(crate) ctx: Arc<Context>,
    /// What else the event is about.
    pub(crate) kind: EventKind,
    /// The 336-byte image GET_EVENT copies out.
    pub(crate) resp: EventResp,
    #[pin]
    links: ListLinks<0>,
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
                ctx,
                kind,
                resp,
                links <- ListLinks::new(),
            }),
            flags,
        )
    }

    /// The new context, for a connect request.
    pub(crate) fn child(&self) -> Option<&Arc<Context>> {
        match &self.kind {
            EventKind::ConnectRequest(child) => Some(child),
            _ => None,
        }
    }

    /// The multicast join, for an event of one.
    pub(crate) fn join(&self) -> Option<&Arc<Multicast>> {
        match &self.kind {
            EventKind::Multicast(mc) => Some(mc),
            _ => None,
        }
    }
}
