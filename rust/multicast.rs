// SPDX-License-Identifier: GPL-2.0

//! Multicast joins: JOIN_IP_MCAST, JOIN_MCAST and LEAVE_MCAST.
//!
//! Each join gets an id from the device's table of joins (the C module's
//! global `multicast_table`), reserved until the reply is out and published under
//! the joining context's command lock, so a concurrent DESTROY_ID finds
//! every join of the context published. The context's rdma_cm id keeps its
//! joins (see `CmId::join_multicast`), alive until `rdma_leave_multicast()`
//! or `rdma_destroy_id()` has returned.
//!
//! Unlike C, a context cannot join one address twice (`EADDRINUSE`):
//! `rdma_leave_multicast()` names a join by its address and tears down the
//! first match, which for a repeated address may be another join than the
//! one left, whose context C then frees while rdma_cm still holds it.

#![forbid(unsafe_code)]

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
    device::UcmaDevice,
    event::EventList,
    memcg::{
        GFP_ACCOUNTED,
        GFP_ACCOUNTED_RAW, //
    },
    rdma_cm::{
        JoinState,
        Joins,
        SockAddr, //
    },
    ucma_file::UcmaFile, //
};

/// One multicast join of a context.
pub(crate) struct Multicast {
    /// The id userspace names it by.
    pub(crate) id: u32,
    /// The joining context.
    pub(crate) ctx: Arc<Context>,
    /// User cookie reported with the join's events.
    pub(crate) uid: u64,
    /// Events of this join already delivered by GET_EVENT.
    pub(crate) events_reported: Atomic<u32>,
}

impl Multicast {
    /// Joins `addr` on `ctx` and replies with the new multicast id through
    /// `reply`; the id becomes visible only once the reply is out.
    pub(crate) fn join(
        device: &UcmaDevice,
        ctx: &Arc<Context>,
        uid: u64,
        addr: &[u8],
        join_state: JoinState,
        reply: impl FnOnce(u32) -> Result,
    ) -> Result {
        let addr = SockAddr::from_bytes(addr);
        let mut st = ctx.lock_state();
        // `ucma_get_ctx_dev`: a zombie or unbound context fails first.
        st.cm_id_dev()?;
        let r = device.multicasts.lock().reserve(GFP_ACCOUNTED_RAW)?;
        let mc = Arc::new(
            Multicast {
                id: r.id(),
                ctx: ctx.clone(),
                uid,
                events_reported: Atomic::new(0),
            },
            GFP_ACCOUNTED,
        );
        let mc = match mc {
            Ok(mc) => mc,
            Err(e) => {
                r.release();
                return Err(e.into());
            }
        };
        let joined = st.cm_id_mut().and_then(|cm| {
            cm.join_multicast(&addr, join_state, mc.clone(), GFP_ACCOUNTED)?;
            reply(mc.id).inspect_err(|_| {
                let left = cm.leave_multicast(&mc);
                // Its events go before its id can be reused, and while no
                // MIGRATE_ID can move them (M) nor the handler add one (H).
                let _handler = cm.lock_handler();
                mc.purge_events();
                drop(left);
            })
        });
        match joined {
            // Published under M, so that a destroyer, which closes the id
            // under M first, finds every join its id kept published.
            Ok(()) => {
                ctx.count_join(true);
                r.publish(mc);
            }
            Err(_) => {
                drop(st);
                r.release();
            }
        }
        joined
    }

    /// LEAVE_MCAST: leaves multicast `id` of `file`. Returns the number of
    /// its events already delivered.
    pub(crate) fn leave(file: &UcmaFile, id: u32) -> Result<u32> {
        let mc: Arc<Multicast> = file.device.multicasts.lock().get(id).ok_or(ENOENT)?.into();
        if !mc.ctx.belongs_to(file) {
            return Err(EINVAL);
        }
        let ctx = &mc.ctx;
        let mut st = ctx.lock_state();
        let cm = st.cm_id_mut()?;
        // Only one LEAVE (or the context's destruction) wins the join.
        let taken = file
            .device
            .multicasts
            .lock()
            .unpublish(id, |m| core::ptr::eq(&*m, &*mc));
        // The table's reference is dropped here, outside its lock.
        let (_, r) = taken.ok_or(ENOENT)?;
        let left = cm.leave_multicast(&mc);
        ctx.count_join(false);
        {
            // No event of the context is being queued while the join's are
            // removed.
            let _handler = cm.lock_handler();
            mc.purge_events();
        }
        drop(st);
        drop(left);
        r.release();
        Ok(mc.events_reported.load(Relaxed))
    }

    /// Frees the ids of joins whose context is being destroyed (rdma_cm left
    /// the groups when the id was destroyed). Every join the id kept was
    /// published (joins are published, and ids closed, under M), so each
    /// is unpublished here or by a LEAVE. Inline for the ids that never
    /// joined (most): nothing to do.
    #[inline]
    pub(crate) fn forget_all(device: &UcmaDevice, joins: Joins<Multicast>) {
        if !joins.never_joined() {
            Self::forget_each(device, joins);
        }
    }

    fn forget_each(device: &UcmaDevice, joins: Joins<Multicast>) {
        for mc in joins.into_joins() {
            let taken = device
                .multicasts
                .lock()
                .unpublish(mc.id, |m| core::ptr::eq(&*m, &*mc));
            if let Some((table_ref, r)) = taken {
                r.release();
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
                ev.join().is_some_and(|m| Arc::ptr_eq(m, self))
            });
        }
        drop(dropped);
    }
}
