// SPDX-License-Identifier: GPL-2.0

//! Contexts: one per user-visible CM id, numbered in one global table.
//!
//! Lock order (outermost first), as in the C module:
//!
//! 1. `Context::state` (M): serialises the commands on one context; held
//!    around rdma_cm calls.
//! 2. rdma_cm's per-id handler lock (H): held by rdma_cm around the event
//!    handler, taken by [`CmId::lock_handler`]. The handler never takes M.
//! 3. `UcmaFile::inner` (F): a file's event queue and context list.
//! 4. `CONTEXTS` (T): the global id table, innermost.
//!
//! `Context::file` is a leaf lock: it is only held to read or swap the
//! `Arc<UcmaFile>` it protects.

use zerocopy::FromZeros;

use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{
            ordering::Relaxed,
            Atomic, //
        },
        Arc,
        ArcBorrow,
        Mutex, //
    },
    workqueue::{
        Work,
        WorkItem, //
    },
};

use crate::{
    event::{
        self,
        Event,
        EventList, //
    },
    id_table::IdTable,
    multicast::Multicast,
    owned_queue::OwnedQueue,
    rdma_cm::{
        CmEvent,
        CmId,
        CmIdRef,
        ConnectRequest,
        EVENT_DEVICE_REMOVAL,
        EVENT_ROUTE_RESOLVED, //
    },
    ucma_core::errno::Errno,
    ucma_core::uapi::EventResp,
    ucma_file::{
        errno_to_error,
        move_events,
        UcmaFile, //
    },
};

/// The ids of all contexts of all files, as the C module's `ctx_table`:
/// global, lowest free id first.
pub(crate) struct ContextTable {
    ids: IdTable<Context>,
    /// Runs the teardown of contexts whose device went away.
    close_wq: Option<OwnedQueue>,
}

kernel::sync::global_lock! {
    // SAFETY: `init_tables` initialises it in module init, before the
    // device (the only way to reach it) is registered.
    unsafe(uninit) static CONTEXTS: Mutex<ContextTable> = ContextTable::new();
}

/// Initialises the global tables. Called once, from module init.
pub(crate) fn init_tables() -> Result {
    // SAFETY: called once, before any other use of `CONTEXTS`.
    unsafe { CONTEXTS.init() };
    let wq = OwnedQueue::new(c"ucma_rs_close")?;
    CONTEXTS.lock().close_wq = Some(wq);
    crate::multicast::init_table();
    Ok(())
}

/// Tears down the global tables. Called once, from module exit, when no file
/// is open any more: waits for queued context teardown to finish.
pub(crate) fn exit_tables() {
    let (wq, ids) = {
        let mut table = CONTEXTS.lock();
        (
            table.close_wq.take(),
            core::mem::replace(&mut table.ids, IdTable::new()),
        )
    };
    drop(wq);
    // Statics are never dropped: free the tables' storage by hand.
    drop(ids);
    crate::multicast::exit_table();
}

impl ContextTable {
    const fn new() -> Self {
        ContextTable {
            ids: IdTable::new(),
            close_wq: None,
        }
    }

    /// The published context `id`, if it belongs to `file` (`ucma_get_ctx`):
    /// `ENOENT` if there is none, `EINVAL` if it is another file's.
    fn lookup(&self, file: &UcmaFile, id: u32) -> Result<Arc<Context>, Errno> {
        let ctx = self.ids.get(id).ok_or(Errno::NoEnt)?;
        if ctx.belongs_to(file) {
            Ok(ctx.clone())
        } else {
            Err(Errno::Inval)
        }
    }
}

/// The command-side state of a context, under its command lock (M).
pub(crate) struct ContextState {
    /// The rdma_cm id; `None` once closed after a device removal (a zombie
    /// that answers `ENXIO` until destroyed).
    cm_id: Option<CmId>,
    /// The context's multicast joins; each stays here (alive) until left.
    mcs: KVec<Arc<Multicast>>,
}

impl ContextState {
    /// The live rdma_cm id, or `ENXIO` for a zombie.
    pub(crate) fn cm_id(&self) -> Result<&CmId> {
        self.cm_id.as_ref().ok_or(ENXIO)
    }

    /// The live rdma_cm id bound to a device (`ucma_get_ctx_dev`): `EINVAL`
    /// when not bound.
    pub(crate) fn cm_id_dev(&self) -> Result<&CmId> {
        let cm = self.cm_id()?;
        if !cm.as_ref().has_device() {
            return Err(EINVAL);
        }
        Ok(cm)
    }
}

/// One user-visible CM id.
#[pin_data]
pub(crate) struct Context {
    /// The id userspace names it by.
    pub(crate) id: u32,
    /// The command lock (M) and what it protects.
    #[pin]
    pub(crate) state: Mutex<ContextState>,
    /// The file the context belongs to; changed by MIGRATE_ID.
    #[pin]
    file: Mutex<Arc<UcmaFile>>,
    /// User cookie for events; 0 until ACCEPT for a connect request's child
    /// (events are not delivered while 0).
    uid: Atomic<u64>,
    /// Events of this context already delivered by GET_EVENT (changed under
    /// the file's lock).
    pub(crate) events_reported: Atomic<u32>,
    /// Connect requests this listener may still queue.
    backlog: Atomic<i32>,
    /// Set (to 1) once the rdma_cm id is closed: lookups answer `ENXIO`.
    closed: Atomic<i32>,
    /// Teardown after a device removal, run on the close workqueue.
    #[pin]
    close_work: Work<Context>,
}

kernel::impl_has_work! {
    impl HasWork<Self> for Context { self.close_work }
}

impl WorkItem for Context {
    type Pointer = Arc<Context>;

    fn run(this: Arc<Context>) {
        this.close();
    }
}

impl Context {
    fn new(id: u32, file: Arc<UcmaFile>, uid: u64, cm_id: CmId) -> impl PinInit<Self, Error> {
        try_pin_init!(Context {
            id,
            state <- new_mutex!(
                ContextState {
                    cm_id: Some(cm_id),
                    mcs: KVec::new(),
                },
                "Context::state"
            ),
            file <- new_mutex!(file, "Context::file"),
            uid: Atomic::new(uid),
            events_reported: Atomic::new(0),
            backlog: Atomic::new(0),
            closed: Atomic::new(0),
            close_work <- kernel::new_work!("Context::close_work"),
        })
    }

    /// The file the context belongs to now.
    pub(crate) fn file(&self) -> Arc<UcmaFile> {
        self.file.lock().clone()
    }

    /// Whether the context belongs to `file` now.
    pub(crate) fn belongs_to(&self, file: &UcmaFile) -> bool {
        core::ptr::eq(&**self.file.lock(), file)
    }

    /// The user cookie.
    pub(crate) fn uid(&self) -> u64 {
        self.uid.load(Relaxed)
    }

    /// Sets the user cookie; done under the handler lock (ACCEPT).
    pub(crate) fn set_uid(&self, uid: u64) {
        self.uid.store(uid, kernel::sync::atomic::ordering::Release);
    }

    /// Sets the listen backlog.
    pub(crate) fn set_backlog(&self, backlog: i32) {
        self.backlog
            .store(backlog, kernel::sync::atomic::ordering::Release);
    }

    /// Gives back one backlog slot (a connect request was fetched or dropped).
    pub(crate) fn backlog_inc(&self) {
        self.backlog.add(1, Relaxed);
    }

    /// Takes one backlog slot unless none is left.
    fn backlog_take(&self) -> bool {
        let mut cur = self.backlog.load(Relaxed);
        loop {
            if cur <= 0 {
                return false;
            }
            match self.backlog.cmpxchg(cur, cur - 1, Relaxed) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    /// CREATE_ID: a new context with a new rdma_cm id, reserved but not yet
    /// visible. The caller publishes it with [`Context::publish`] once the
    /// reply is out, or destroys it with [`Context::destroy`].
    pub(crate) fn create(
        file: &Arc<UcmaFile>,
        uid: u64,
        ps: u32,
        qp_type: u32,
    ) -> Result<Arc<Self>> {
        let id = CONTEXTS.lock().ids.reserve()?;
        let (cm_id, unattached) = match CmId::create(ps, qp_type) {
            Ok(created) => created,
            Err(e) => {
                CONTEXTS.lock().ids.release(id);
                return Err(e);
            }
        };
        match Arc::pin_init(Context::new(id, file.clone(), uid, cm_id), GFP_KERNEL) {
            Ok(ctx) => {
                unattached.attach(ctx.clone());
                Ok(ctx)
            }
            Err(e) => {
                // The `CmId` was dropped with the failed initializer.
                unattached.destroy();
                CONTEXTS.lock().ids.release(id);
                Err(e)
            }
        }
    }

    /// Makes a created context visible: adds it to its file and the table.
    pub(crate) fn publish(self: &Arc<Self>) -> Result {
        let file = self.file();
        let mut inner = file.inner.lock();
        inner.contexts.push(self.clone(), GFP_KERNEL)?;
        CONTEXTS.lock().ids.publish(self.id, self.clone());
        Ok(())
    }

    /// Looks up `id` on `file` (`ucma_get_ctx`): `ENOENT`, `EINVAL` for
    /// another file's id, `ENXIO` for a zombie.
    pub(crate) fn lookup(file: &UcmaFile, id: u32) -> Result<Arc<Self>> {
        let ctx = CONTEXTS.lock().lookup(file, id).map_err(errno_to_error)?;
        if ctx.closed.load(Relaxed) != 0 {
            return Err(ENXIO);
        }
        Ok(ctx)
    }

    /// DESTROY_ID's first step: hides `id` of `file` from every lookup. Only
    /// one destroyer wins; the others get `ENOENT`.
    pub(crate) fn unpublish_id(file: &UcmaFile, id: u32) -> Result<Arc<Self>> {
        let mut table = CONTEXTS.lock();
        let ctx = table.lookup(file, id).map_err(errno_to_error)?;
        if !table.ids.unpublish(ctx.id, &ctx) {
            return Err(ENOENT);
        }
        Ok(ctx)
    }

    /// Hides this context from lookups; false if someone else already did.
    pub(crate) fn unpublish(&self) -> bool {
        CONTEXTS.lock().ids.unpublish(self.id, self)
    }

    /// Destroys the rdma_cm id, if still there; afterwards no handler runs
    /// and its multicast groups are left.
    fn close(&self) {
        let cm_id = {
            let mut st = self.state.lock();
            self.closed
                .store(1, kernel::sync::atomic::ordering::Release);
            st.cm_id.take()
        };
        if let Some(cm_id) = cm_id {
            // The context reference the id held is dropped here, outside M.
            drop(cm_id.destroy());
        }
    }

    /// Joins `mc` (JOIN_*MCAST); `reply` copies the multicast id out. On any
    /// failure the group is left again.
    pub(crate) fn join(&self, mc: &Arc<Multicast>, reply: impl FnOnce(u32) -> Result) -> Result {
        let mut st = self.state.lock();
        st.mcs.push(mc.clone(), GFP_KERNEL)?;
        let ContextState { cm_id, mcs } = &mut *st;
        let ret = cm_id.as_ref().ok_or(ENXIO).and_then(|cm| {
            cm.join_multicast(mc)?;
            reply(mc.id).inspect_err(|_| cm.leave_multicast(mc))
        });
        if ret.is_err() {
            mcs.retain(|m| !Arc::ptr_eq(m, mc));
            drop(st);
            mc.purge_events();
        }
        ret
    }

    /// Leaves `mc` (LEAVE_MCAST), if `unpublish` wins the race for it.
    pub(crate) fn leave(&self, mc: &Arc<Multicast>, unpublish: impl FnOnce() -> bool) -> Result {
        let mut st = self.state.lock();
        let ContextState { cm_id, mcs } = &mut *st;
        let cm = cm_id.as_ref().ok_or(ENXIO)?;
        if !unpublish() {
            return Err(ENOENT);
        }
        mcs.retain(|m| !Arc::ptr_eq(m, mc));
        cm.leave_multicast(mc);
        {
            // No event of the context is being queued while the join's are
            // removed.
            let _handler = cm.lock_handler();
            mc.purge_events();
        }
        Ok(())
    }

    /// Tears down an unpublished context: closes its id, drops its queued
    /// events (destroying the children of unfetched connect requests) and
    /// frees its id. Returns the number of its events already delivered.
    pub(crate) fn destroy(self: &Arc<Self>) -> u32 {
        self.close();

        let mut dropped = EventList::new();
        let file = self.file();
        let reported = {
            let mut inner = file.inner.lock();
            event::extract(&mut inner.events, &mut dropped, |ev| {
                core::ptr::eq(&*ev.ctx, &**self)
            });
            inner.contexts.retain(|c| !Arc::ptr_eq(c, self));
            self.events_reported.load(Relaxed)
        };
        // Children of connect requests not yet fetched die with the listener.
        // Their events are off the queue, so GET_EVENT cannot hand them out
        // any more; a DESTROY_ID of a guessed id or the file's release may
        // still race for them, and whoever unpublishes a child destroys it.
        // (No allocation here: a child claimed but not destroyed would leak.)
        for ev in dropped.iter() {
            if let Some(child) = &ev.child {
                if ev.is_connect_request() && child.unpublish() {
                    child.destroy();
                }
            }
        }
        drop(dropped);
        // rdma_destroy_id() left the groups; free the joins' ids.
        let mcs = core::mem::take(&mut self.state.lock().mcs);
        Multicast::forget_all(mcs);
        CONTEXTS.lock().ids.release(self.id);
        reported
    }

    /// The event handler (not for connect requests), under the id's handler lock.
    pub(crate) fn event(ctx: ArcBorrow<'_, Context>, id: CmIdRef<'_>, ev: &CmEvent<'_>) {
        let ctx: Arc<Context> = ctx.into();
        // Events of a connect request's child are dropped until ACCEPT sets
        // its uid; accept will just fail later.
        let uid = ctx.uid();
        if uid != 0 {
            let mc = ev.multicast();
            let resp = match &mc {
                Some(mc) => ev.to_resp(mc.uid, mc.id, id),
                None if ev.is_multicast() => return,
                None => ev.to_resp(uid, ctx.id, id),
            };
            if let Ok(event) = Event::new(ctx.clone(), None, mc, resp) {
                ctx.file().queue_event(event);
            }
        }
        if ev.kind() == EVENT_DEVICE_REMOVAL {
            // rdma_cm waits for the id to be destroyed, which the handler
            // cannot do itself: hand it to the close workqueue, unless
            // userspace is destroying the context already.
            let table = CONTEXTS.lock();
            if table.ids.is_live(ctx.id, &ctx) {
                if let Some(wq) = &table.close_wq {
                    let _ = wq.queue().enqueue(ctx.clone());
                }
            }
        }
    }

    /// A connect request on listener `listener`: creates the child context
    /// and queues the request. On error rdma_cm destroys the new id.
    pub(crate) fn connect_request(
        listener: ArcBorrow<'_, Context>,
        req: ConnectRequest,
        ev: &CmEvent<'_>,
    ) -> Result {
        let listener: Arc<Context> = listener.into();
        if !listener.backlog_take() {
            return Err(ENOMEM);
        }
        let ret = Self::try_connect_request(&listener, req, ev);
        if ret.is_err() {
            listener.backlog_inc();
        }
        ret
    }

    fn try_connect_request(
        listener: &Arc<Context>,
        req: ConnectRequest,
        ev: &CmEvent<'_>,
    ) -> Result {
        let file = listener.file();
        let id = CONTEXTS.lock().ids.reserve()?;
        // The event carries the listener's uid and the child's id; its param
        // branch follows the QP type of the ids (the child's is the listener's).
        let resp = ev.to_resp(listener.uid(), id, req.as_ref());
        let (cm_id, unattached) = req.into_cm_id();
        let built =
            Arc::pin_init(Context::new(id, file.clone(), 0, cm_id), GFP_KERNEL).and_then(|child| {
                Ok((
                    Event::new(listener.clone(), Some(child.clone()), None, resp)?,
                    child,
                ))
            });
        let (ev, child) = match built {
            Ok(built) => built,
            Err(e) => {
                // The id was never attached: rdma_cm destroys it on our error.
                CONTEXTS.lock().ids.release(id);
                return Err(e);
            }
        };
        {
            let mut inner = file.inner.lock();
            // Listed in the same critical section as published: a child on
            // no file's list would never be destroyed at close.
            if let Err(e) = inner.contexts.push(child.clone(), GFP_KERNEL) {
                drop(inner);
                CONTEXTS.lock().ids.release(id);
                return Err(e.into());
            }
            // From here on nothing fails: the child owns the id.
            unattached.attach(child.clone());
            CONTEXTS.lock().ids.publish(id, child);
            inner.events.push_back(ev);
        }
        file.notify();
        Ok(())
    }

    /// MIGRATE_ID: moves this context of `from` (with its queued events) to
    /// `to`. Returns its delivered-event count.
    pub(crate) fn migrate(
        self: &Arc<Self>,
        from: &Arc<UcmaFile>,
        to: &Arc<UcmaFile>,
    ) -> Result<u32> {
        let st = self.state.lock();
        let cm = st.cm_id()?;
        // No event of this context is queued while it moves.
        let _handler = cm.lock_handler();
        if Arc::ptr_eq(from, to) {
            // As in C: nothing moves, and the count is read under the file's lock.
            let _inner = from.inner.lock();
            return Ok(self.events_reported.load(Relaxed));
        }
        // Listed on `to` before anything changes: once the context has
        // switched files nothing may fail, or it would be on no file's list
        // and never be destroyed at close (found by the fail-nth sweep).
        to.inner.lock().contexts.push(self.clone(), GFP_KERNEL)?;
        {
            let table = CONTEXTS.lock();
            // Destruction may have begun since the lookup.
            if !table.ids.is_live(self.id, self) || !self.belongs_to(from) {
                drop(table);
                to.inner.lock().contexts.retain(|c| !Arc::ptr_eq(c, self));
                return Err(ENOENT);
            }
            *self.file.lock() = to.clone();
        }
        Ok(move_events(self, from, to))
    }

    /// WRITE_CM_EVENT: queues a user-made event; `EINVAL` while the context
    /// has no uid.
    pub(crate) fn write_event(self: &Arc<Self>, mut resp: EventResp) -> Result {
        let st = self.state.lock();
        let cm = st.cm_id()?;
        let _handler = cm.lock_handler();
        let uid = self.uid();
        if uid == 0 {
            return Err(EINVAL);
        }
        resp.uid = uid;
        let ev = Event::new(self.clone(), None, None, resp)?;
        self.file().queue_event(ev);
        Ok(())
    }

    /// SET_OPTION IB_PATH: sets the route from a user path record, then
    /// reports ROUTE_RESOLVED as rdma_cm would have.
    pub(crate) fn set_ib_path(self: &Arc<Self>, wire: &[u8; 64]) -> Result {
        let st = self.state.lock();
        let cm = st.cm_id_dev()?;
        cm.set_ib_path(wire)?;
        let _handler = cm.lock_handler();
        let uid = self.uid();
        if uid != 0 {
            let mut resp = EventResp::new_zeroed();
            resp.uid = uid;
            resp.id = self.id;
            resp.event = EVENT_ROUTE_RESOLVED;
            let ev = Event::new(self.clone(), None, None, resp)?;
            self.file().queue_event(ev);
        }
        Ok(())
    }
}
