// SPDX-License-Identifier: GPL-2.0

//! Multicast joins: JOIN_IP_MCAST, JOIN_MCAST and LEAVE_MCAST.
//!
//! Each join gets an id from its own global table (the C module's
//! `multicast_table`), reserved until the reply is out. The context keeps
//! its joins in its command state; rdma_cm is given the join's address as
//! the event context, kept alive by that list until `rdma_leave_multicast()`
//! or `rdma_destroy_id()` has returned.

use kernel::{
    prelude::*,
    sync::{
        atomic::{
            ordering::Relaxed,
            Atomic, //
        },
        Arc, //
    },
};

use crate::{
    context::Context,
    event::{
        self,
        EventList, //
    },
    id_table::IdTable,
    rdma_cm::SockAddr,
    ucma_core::uapi::SOCKADDR_STORAGE_SIZE,
    ucma_file::UcmaFile,
};

kernel::sync::global_lock! {
    // SAFETY: `init_table` initialises it in module init, before the device
    // (the only way to reach it) is registered.
    unsafe(uninit) static MULTICASTS: Mutex<IdTable<Multicast>> = IdTable::new();
}

/// Initialises the global multicast table. Called once, from module init.
pub(crate) fn init_table() {
    // SAFETY: called once, before any other use of `MULTICASTS`.
    unsafe { MULTICASTS.init() };
}

/// Frees the multicast table's storage. Called once, from module exit.
pub(crate) fn exit_table() {
    let ids = core::mem::replace(&mut *MULTICASTS.lock(), IdTable::new());
    drop(ids);
}

/// One multicast join of a context.
pub(crate) struct Multicast {
    /// The id userspace names it by.
    pub(crate) id: u32,
    /// The joining context.
    pub(crate) ctx: Arc<Context>,
    /// User cookie reported with the join's events.
    pub(crate) uid: u64,
    /// `BIT(FULLMEMBER_JOIN)` or `BIT(SENDONLY_FULLMEMBER_JOIN)`.
    join_state: u8,
    /// The group address.
    addr: [u8; SOCKADDR_STORAGE_SIZE],
    /// Events of this join already delivered by GET_EVENT.
    pub(crate) events_reported: Atomic<u32>,
}

impl Multicast {
    /// The group address, as rdma_cm takes it.
    pub(crate) fn sockaddr(&self) -> SockAddr {
        SockAddr::from_bytes(&self.addr)
    }

    /// The join state given to rdma_cm.
    pub(crate) fn join_state(&self) -> u8 {
        self.join_state
    }

    /// Joins `addr` on `ctx` and replies with the new multicast id through
    /// `reply`; the id becomes visible only once the reply is out.
    pub(crate) fn join(
        ctx: &Arc<Context>,
        uid: u64,
        addr: &[u8],
        join_state: u8,
        reply: impl FnOnce(u32) -> Result,
    ) -> Result {
        // `ucma_get_ctx_dev`: a zombie or unbound context fails first.
        ctx.state.lock().cm_id_dev()?;
        let id = MULTICASTS.lock().reserve()?;
        let mut stored = [0u8; SOCKADDR_STORAGE_SIZE];
        let n = addr.len().min(stored.len());
        stored[..n].copy_from_slice(&addr[..n]);
        let mc = Arc::new(
            Multicast {
                id,
                ctx: ctx.clone(),
                uid,
                join_state,
                addr: stored,
                events_reported: Atomic::new(0),
            },
            GFP_KERNEL,
        );
        let mc = match mc {
            Ok(mc) => mc,
            Err(e) => {
                MULTICASTS.lock().release(id);
                return Err(e.into());
            }
        };
        let ret = ctx.join(&mc, reply);
        let mut table = MULTICASTS.lock();
        match ret {
            Ok(()) => table.publish(id, mc),
            Err(_) => table.release(id),
        }
        ret
    }

    /// LEAVE_MCAST: leaves multicast `id` of `file`. Returns the number of
    /// its events already delivered.
    pub(crate) fn leave(file: &UcmaFile, id: u32) -> Result<u32> {
        let mc = MULTICASTS.lock().get(id).cloned().ok_or(ENOENT)?;
        if !mc.ctx.belongs_to(file) {
            return Err(EINVAL);
        }
        mc.ctx
            .leave(&mc, || MULTICASTS.lock().unpublish(mc.id, &mc))?;
        MULTICASTS.lock().release(mc.id);
        Ok(mc.events_reported.load(Relaxed))
    }

    /// Frees the ids of joins whose context is being destroyed (rdma_cm left
    /// the groups when the id was destroyed).
    pub(crate) fn forget_all(mcs: KVec<Arc<Multicast>>) {
        let mut table = MULTICASTS.lock();
        for mc in mcs.iter() {
            table.unpublish(mc.id, mc);
            table.release(mc.id);
        }
    }

    /// Removes the queued events of this join from its context's file.
    pub(crate) fn purge_events(self: &Arc<Self>) {
        let mut dropped = EventList::new();
        let file = self.ctx.file();
        {
            let mut inner = file.inner.lock();
            event::extract(&mut inner.events, &mut dropped, |ev| {
                ev.mc.as_ref().is_some_and(|m| Arc::ptr_eq(m, self))
            });
        }
        drop(dropped);
    }
}
