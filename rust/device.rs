// SPDX-License-Identifier: GPL-2.0

//! The uCMA device: what every file of `/dev/infiniband/rdma_cm` shares.
//!
//! One [`UcmaDevice`], made at module init and held by the misc device's
//! registration, owns the id tables (the C module's global `ctx_table` and
//! `multicast_table`: one numbering for all files, lowest free id first),
//! the close workqueue and the limits the module was loaded with. Every
//! file and every context holds a reference to it. The tables hold the
//! published contexts and joins, which hold the device: the cycle ends as
//! the files close, each unpublishing its ids.

#![forbid(unsafe_code)]

use kernel::{
    new_poll_condvar,
    prelude::*,
    sync::{
        poll::PollCondVar,
        Arc, //
    },
};

use crate::{
    context::Context,
    id_table::IdTable,
    multicast::Multicast,
    owned_queue::OwnedQueue,
    tunables, //
};

/// The caps the module was loaded with (its parameters; 0: none).
///
/// # Invariants
///
/// `id_cap` and `event_cap` are the two parameters, `usize::MAX` for 0.
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    /// `max_ids_per_file`, as loaded.
    max_ids_per_file_param: u32,
    /// `max_events_per_file`, as loaded.
    max_events_per_file_param: u32,
    id_cap: usize,
    event_cap: usize,
}

impl Limits {
    /// The module's parameters.
    fn loaded() -> Self {
        let ids = tunables::max_ids_per_file_param();
        let events = tunables::max_events_per_file_param();
        let cap = |param: u32| match param {
            0 => usize::MAX,
            n => n as usize,
        };
        // INVARIANT: the caps are computed from the parameters here.
        Limits {
            max_ids_per_file_param: ids,
            max_events_per_file_param: events,
            id_cap: cap(ids),
            event_cap: cap(events),
        }
    }

    /// The `max_ids_per_file` parameter, as loaded (0: no limit).
    pub(crate) fn max_ids_per_file_param(&self) -> u32 {
        self.max_ids_per_file_param
    }

    /// The `max_events_per_file` parameter, as loaded (0: no limit).
    pub(crate) fn max_events_per_file_param(&self) -> u32 {
        self.max_events_per_file_param
    }

    /// The `max_ids_per_file` cap (`usize::MAX` for 0, no limit).
    pub(crate) fn max_ids_per_file(&self) -> usize {
        self.id_cap
    }

    /// The `max_events_per_file` cap (`usize::MAX` for 0, no limit).
    pub(crate) fn max_events_per_file(&self) -> usize {
        self.event_cap
    }
}

/// The state all files of the device share.
#[pin_data]
pub(crate) struct UcmaDevice {
    /// The ids of all contexts of all files.
    #[pin]
    pub(crate) contexts: IdTable<Arc<Context>>,
    /// The ids of all multicast joins.
    #[pin]
    pub(crate) multicasts: IdTable<Arc<Multicast>>,
    /// Where a context's teardown after a device removal runs (the event
    /// handler cannot destroy its own id).
    close_wq: OwnedQueue,
    /// The module's caps.
    pub(crate) limits: Limits,
    /// The `poll()` wait queue of the files whose first poll found no
    /// memory for a queue of their own; woken whole by an event of any of
    /// them (a spurious wake-up of the others' pollers is harmless).
    #[pin]
    pub(crate) poll_shared: PollCondVar,
}

impl UcmaDevice {
    /// The device's state, empty.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            contexts <- IdTable::new(),
            multicasts <- IdTable::new(),
            close_wq: OwnedQueue::new(c"ucma_rs_close")?,
            limits: Limits::loaded(),
            poll_shared <- new_poll_condvar!("UcmaDevice::poll_shared"),
        }? Error)
    }

    /// Queues the teardown of `ctx` (see `Context`'s `WorkItem`).
    pub(crate) fn queue_close(&self, ctx: Arc<Context>) {
        // Already queued: once is enough.
        let _ = self.close_wq.enqueue(ctx);
    }

    /// Waits until no teardown is queued or running: at module exit, once
    /// no file is open (so that none can be queued any more), before the
    /// module's code goes.
    pub(crate) fn drain_close_work(&self) {
        self.close_wq.drain();
    }
}
