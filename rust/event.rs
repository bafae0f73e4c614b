// SPDX-License-Identifier: GPL-2.0

//! A queued CM event and the per-file event list.

use kernel::{
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

/// One event waiting in a file's queue for GET_EVENT.
#[pin_data]
pub(crate) struct Event {
    /// The context the event is counted against (the listener, for a
    /// connect request).
    pub(crate) ctx: Arc<Context>,
    /// For a connect request: the new context. It is published (its id
    /// answers commands) as soon as the request is queued, as in C.
    pub(crate) child: Option<Arc<Context>>,
    /// The multicast join this event belongs to.
    pub(crate) mc: Option<Arc<Multicast>>,
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
    /// Allocates an event for `ctx`.
    pub(crate) fn new(
        ctx: Arc<Context>,
        child: Option<Arc<Context>>,
        mc: Option<Arc<Multicast>>,
        resp: EventResp,
    ) -> Result<ListArc<Event>> {
        ListArc::pin_init(
            try_pin_init!(Event {
                ctx,
                child,
                mc,
                resp,
                links <- ListLinks::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// Whether this is a connect request (one with a child context).
    pub(crate) fn is_connect_request(&self) -> bool {
        self.child.is_some()
    }
}
