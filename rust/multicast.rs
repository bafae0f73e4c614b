// SPDX-License-Identifier: GPL-2.0

//! Multicast joins: JOIN_IP_MCAST, JOIN_MCAST and LEAVE_MCAST.
//!
//! Each join gets an id from its own global table (the C module's
//! `multicast_table`), reserved until the reply is out and published under
//! the joining context's command lock, so a concurrent DESTROY_ID finds
//! every join of the context published. The context keeps its joins in its
//! command state; rdma_cm is given the join's address as the event context,
//! kept alive by that list until `rdma_leave_multicast()` or
//! `rdma_destroy_id()` has returned.
//!
//! Unlike C, a context cannot join one address twice (`EADDRINUSE`):
//! `rdma_leave_multicast()` names a join by its address and tears down the
//! first match, which for a repeated address may be another join than the
//! one left, whose context C then frees while rdma_cm still holds it.

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
    context::Context, event::EventList, id_table::IdTable, rdma_cm::SockAddr,
    ucma_core::uapi::SOCKADDR_STORAGE_SIZE, ucma_file::UcmaFile,
};

/// The ids of all joins, lowest free id first.
static MULTICASTS: IdTable<Arc<Multicast>> = IdTable::uninit();

/// Initialises the global multicast table. Called once, from module init.
pub(crate) fn init_table() {
    // SAFETY: called once, before the device that reaches the table exists.
    unsafe { MULTICASTS.init() };
}

/// Frees the multicast table's storage. Called once, from module exit.
pub(crate) fn exit_table() {
    // SAFETY: every file is closed: nothing uses the table any more.
    unsafe { MULTICASTS.destroy() };
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
    /// The group address, zero-padded.
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
        let mut stored = [0u8; SOCKADDR_STORAGE_SIZE];
        let n = addr.len().min(stored.len());
        stored[..n].copy_from_slice(&addr[..n]);

        let mut st = ctx.state.lock();
        // `ucma_get_ctx_dev`: a zombie or unbound context fails first.
        st.cm_id_dev()?;
        let r = MULTICASTS.lock().reserve()?;
        let mc = Arc::new(
            Multicast {
                id: r.id(),
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
                MULTICASTS.lock().release(r);
                return Err(e.into());
            }
        };
        let listed = if st.mcs.iter().any(|m| m.addr == mc.addr) {
            Err(EADDRINUSE)
        } else {
            st.mcs.push(mc.clone(), GFP_KERNEL).map_err(Error::from)
        };
        if let Err(e) = listed {
            MULTICASTS.lock().release(r);
            return Err(e);
        }
        // M is held: still the live id checked above.
        let (cm, mcs) = st.id_and_joins();
        let ret = cm.and_then(|cm| {
            cm.join_multicast(&mc)?;
            reply(mc.id).inspect_err(|_| {
                cm.leave_multicast(&mc);
                // Its events go before its id can be reused, and while no
                // MIGRATE_ID can move them (M) nor the handler add one (H).
                let _handler = cm.lock_handler();
                mc.purge_events();
            })
        });
        match &ret {
            Ok(()) => MULTICASTS.lock().publish(r, mc),
            Err(_) => {
                mcs.retain(|m| !Arc::ptr_eq(m, &mc));
                drop(st);
                MULTICASTS.lock().release(r);
            }
        }
        ret
    }

    /// LEAVE_MCAST: leaves multicast `id` of `file`. Returns the number of
    /// its events already delivered.
    pub(crate) fn leave(file: &UcmaFile, id: u32) -> Result<u32> {
        let mc: Arc<Multicast> = MULTICASTS.lock().get(id).ok_or(ENOENT)?.into();
        if !mc.ctx.belongs_to(file) {
            return Err(EINVAL);
        }
        let ctx = &mc.ctx;
        let mut st = ctx.state.lock();
        let cm = st.cm_id()?;
        // Only one LEAVE (or the context's destruction) wins the join.
        let taken = MULTICASTS
            .lock()
            .unpublish(id, |m| core::ptr::eq(&*m, &*mc));
        // The table's reference is dropped here, outside its lock.
        let (_, r) = taken.ok_or(ENOENT)?;
        cm.leave_multicast(&mc);
        {
            // No event of the context is being queued while the join's are
            // removed.
            let _handler = cm.lock_handler();
            mc.purge_events();
        }
        st.mcs.retain(|m| !Arc::ptr_eq(m, &mc));
        drop(st);
        MULTICASTS.lock().release(r);
        Ok(mc.events_reported.load(Relaxed))
    }

    /// Frees the ids of joins whose context is being destroyed (rdma_cm left
    /// the groups when the id was destroyed). Every join listed on a
    /// context is published, so each is unpublished here or by a LEAVE.
    pub(crate) fn forget_all(mcs: KVec<Arc<Multicast>>) {
        for mc in mcs.iter() {
            let taken = MULTICASTS
                .lock()
                .unpublish(mc.id, |m| core::ptr::eq(&*m, &**mc));
            if let Some((table_ref, r)) = taken {
                MULTICASTS.lock().release(r);
                drop(table_ref);
            }
        }
    }

    /// Removes the queued events of this join from its context's file.
    pub(crate) fn purge_events(self: &Arc<Self>) {
        let mut dropped = EventList::new();
        let file = self.ctx.file();
        {
            let mut inner = file.lock();
            inner.take_events(&mut dropped, |ev| {
                ev.mc.as_ref().is_some_and(|m| Arc::ptr_eq(m, self))
            });
        }
        drop(dropped);
    }
}
