// SPDX-License-Identifier: GPL-2.0

//! Contexts: one per user-visible CM id, numbered in one global table.
//!
//! Lock order (outermost first):
//!
//! 1. `Context::state` (M): serialises the commands on one context; held
//!    around rdma_cm calls.
//! 2. rdma_cm's per-id handler lock (H): held by rdma_cm around the event
//!    handler, taken by [`CmId::lock_handler`]. The handler never takes M.
//! 3. `UcmaFile::inner` (F): a file's event queue and context list.
//! 4. The device's id tables, of contexts and of multicast joins (T):
//!    xarray spinlocks, innermost but for 5; never both at once.
//! 5. `Context::file`: a spinlock around the `Arc<UcmaFile>`, innermost:
//!    taken alone or under any of the above, nothing taken under it
//!    (MIGRATE_ID switches files under the context table's lock, as C
//!    does under `xa_lock`).

#![forbid(unsafe_code)]

use zerocopy::FromZeros;

use kernel::{
    list::{
        AtomicTracker,
        ListLinks,
        TryNewListArc, //
    },
    new_mutex, new_spinlock,
    prelude::*,
    sync::{
        atomic::{
            ordering::{
                Relaxed,
                Release, //
            },
            Atomic, //
        },
        Arc,
        ArcBorrow,
        Mutex,
        MutexGuard,
        SetOnce,
        SpinLock, //
    },
    workqueue::{
        Work,
        WorkItem, //
    },
};

use crate::{
    device::UcmaDevice,
    event::{
        Event,
        EventKind,
        EventList, //
    },
    id_table::Reservation,
    kcov::KcovHandle,
    marshal::{
        event_resp,
        write_event_resp, //
    },
    memcg::{
        HandlerGfp, //
        GFP_ACCOUNTED,
        GFP_ACCOUNTED_RAW,
    },
    multicast::Multicast,
    rdma_cm::{
        CmEvent,
        CmHandler,
        CmId,
        ConnectOutcome,
        ConnectRequest,
        EventType,
        Joins,
        PortSpace,
        QpType, //
    },
    tagged_list::ListTag,
    ucma_core::uapi::EventResp,
    ucma_file::{
        EventOrigin,
        Queued,
        UcmaFile, //
    },
};

/// Whether `ctx`, a context of `device`, is published (not being
/// destroyed).
fn is_live(device: &UcmaDevice, ctx: &Context) -> bool {
    device
        .contexts
        .lock()
        .get(ctx.id)
        .is_some_and(|c| core::ptr::eq(&*c, ctx))
}

/// What a context's id is doing, as the module sees it from the commands
/// that succeeded on it and the events it got (`/proc/<pid>/fdinfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum IdState {
    /// Created, nothing else.
    Idle = 0,
    /// Bound, or resolving its address, or its resolution failed.
    Bound,
    /// ADDR_RESOLVED came (or ROUTE_ERROR).
    AddrResolved,
    /// ROUTE_RESOLVED came.
    RouteResolved,
    /// LISTEN succeeded.
    Listening,
    /// CONNECT succeeded, or a connect request's new id, until ESTABLISHED.
    Connecting,
    /// ESTABLISHED came.
    Connected,
    /// DISCONNECT succeeded, or DISCONNECTED, REJECTED, UNREACHABLE or
    /// CONNECT_ERROR came.
    Disconnected,
    /// DEVICE_REMOVAL came.
    DeviceRemoved,
}

impl IdState {
    /// Every state, in fdinfo's order.
    pub(crate) const ALL: [IdState; 9] = [
        IdState::Idle,
        IdState::Bound,
        IdState::AddrResolved,
        IdState::RouteResolved,
        IdState::Listening,
        IdState::Connecting,
        IdState::Connected,
        IdState::Disconnected,
        IdState::DeviceRemoved,
    ];

    /// The state's name in fdinfo.
    pub(crate) fn name(self) -> &'static str {
        match self {
            IdState::Idle => "idle",
            IdState::Bound => "bound",
            IdState::AddrResolved => "addr_resolved",
            IdState::RouteResolved => "route_resolved",
            IdState::Listening => "listening",
            IdState::Connecting => "connecting",
            IdState::Connected => "connected",
            IdState::Disconnected => "disconnected",
            IdState::DeviceRemoved => "device_removed",
        }
    }

    fn from_raw(raw: i8) -> Self {
        Self::ALL
            .into_iter()
            .find(|s| *s as i8 == raw)
            .unwrap_or(IdState::Idle)
    }

    /// The state an event leaves the id in, if it changes it.
    fn after(event: EventType) -> Option<Self> {
        Some(match event {
            EventType::ADDR_RESOLVED | EventType::ROUTE_ERROR => IdState::AddrResolved,
            EventType::ADDR_ERROR => IdState::Bound,
            EventType::ROUTE_RESOLVED => IdState::RouteResolved,
            EventType::ESTABLISHED => IdState::Connected,
            EventType::DISCONNECTED
            | EventType::REJECTED
            | EventType::UNREACHABLE
            | EventType::CONNECT_ERROR => IdState::Disconnected,
            EventType::DEVICE_REMOVAL => IdState::DeviceRemoved,
            _ => return None,
        })
    }
}

/// A file's contexts by [`IdState`], and their multicast joins, kept as
/// they change so that fdinfo reads them in O(1). Each listed context adds
/// one to its state's count, unless idle, and its joins to `joins` (see
/// [`Placement`]); every change is made under that context's `file` lock,
/// so a count is a sum of the listed contexts' shares and never reads below
/// zero. The idle ones are not counted as they come and go (most ids are
/// created and destroyed idle, and then cost no read-modify-write here):
/// they are the listed contexts in no other state ([`Self::in_state`]).
pub(crate) struct IdCounts {
    /// The count of each state but [`IdState::Idle`] (0), at the state's
    /// value less one.
    by_state: [Atomic<u64>; IdState::ALL.len() - 1],
    joins: Atomic<u64>,
}

impl IdCounts {
    /// No context counted.
    pub(crate) fn new() -> Self {
        IdCounts {
            by_state: [const { Atomic::new(0) }; IdState::ALL.len() - 1],
            joins: Atomic::new(0),
        }
    }

    /// The count of state `s`; none for [`IdState::Idle`].
    fn count_of(&self, s: IdState) -> Option<&Atomic<u64>> {
        (s as usize)
            .checked_sub(1)
            .and_then(|i| self.by_state.get(i))
    }

    // Most contexts have no joins: no read-modify-write of `joins` for
    // them (an atomic RMW and, without inlined helpers, a call).
    fn add(&self, s: IdState, joins: u32) {
        if let Some(n) = self.count_of(s) {
            n.add(1, Relaxed);
        }
        if joins != 0 {
            self.joins.add(u64::from(joins), Relaxed);
        }
    }

    fn remove(&self, s: IdState, joins: u32) {
        if let Some(n) = self.count_of(s) {
            n.fetch_sub(1, Relaxed);
        }
        if joins != 0 {
            self.joins.fetch_sub(u64::from(joins), Relaxed);
        }
    }

    fn moved(&self, from: IdState, to: IdState) {
        if let Some(n) = self.count_of(from) {
            n.fetch_sub(1, Relaxed);
        }
        if let Some(n) = self.count_of(to) {
            n.add(1, Relaxed);
        }
    }

    fn joined(&self, made: bool) {
        if made {
            self.joins.add(1, Relaxed);
        } else {
            self.joins.fetch_sub(1, Relaxed);
        }
    }

    /// The contexts in state `s`, of the `listed` contexts the counts are
    /// of: for [`IdState::Idle`], those in no other state. The counts are
    /// read one by one, as they change: a context that changes state
    /// meanwhile may be seen in two states or none.
    pub(crate) fn in_state(&self, s: IdState, listed: u64) -> u64 {
        match self.count_of(s) {
            Some(n) => n.load(Relaxed),
            None => self
                .by_state
                .iter()
                .fold(listed, |idle, n| idle.saturating_sub(n.load(Relaxed))),
        }
    }

    /// The joins of the counted contexts.
    pub(crate) fn joins(&self) -> u64 {
        self.joins.load(Relaxed)
    }
}

/// The command-side state of a context, under its command lock (M).
pub(crate) enum ContextState {
    /// The rdma_cm id. It keeps the context's multicast joins, each alive
    /// until left; whenever M is free, every join it keeps is published in
    /// the multicast table (a join is published under M).
    Live(CmId<Context>),
    /// The id was closed after a device removal (a zombie that answers
    /// `ENXIO` until destroyed): the joins it had, whose multicast ids are
    /// freed when the context is destroyed.
    Closed(Joins<Multicast>),
}

impl ContextState {
    /// The live rdma_cm id, or `ENXIO` for a zombie.
    pub(crate) fn cm_id(&self) -> Result<&CmId<Context>> {
        match self {
            ContextState::Live(cm) => Ok(cm),
            ContextState::Closed(_) => Err(ENXIO),
        }
    }

    /// The live rdma_cm id, mutable (joins and leaves), or `ENXIO`.
    pub(crate) fn cm_id_mut(&mut self) -> Result<&mut CmId<Context>> {
        match self {
            ContextState::Live(cm) => Ok(cm),
            ContextState::Closed(_) => Err(ENXIO),
        }
    }

    /// The live rdma_cm id bound to a device (`ucma_get_ctx_dev`): `EINVAL`
    /// when not bound.
    pub(crate) fn cm_id_dev(&self) -> Result<&CmId<Context>> {
        let cm = self.cm_id()?;
        if !cm.has_device() {
            return Err(EINVAL);
        }
        Ok(cm)
    }
}

/// What WRITE_CM_EVENT asks to queue: the fields its event takes from the
/// command (passed on instead of the 320-byte command, which would be
/// copied whole to be passed).
#[derive(Clone, Copy)]
pub(crate) struct UserEvent {
    /// `RDMA_CM_EVENT_USER` or `RDMA_CM_EVENT_INTERNAL`.
    pub(crate) event: u32,
    /// The event's status.
    pub(crate) status: u32,
    /// `param.arg`, copied raw into `param.arg32[0..1]`.
    pub(crate) arg: [u8; 8],
}

/// One user-visible CM id.
///
/// Its size is watched: on the test kernels (and Debian's, whose lock
/// options are theirs) `Context` is 184 bytes, its `Arc` 192, the
/// `kmalloc-192` class of `ucma.c`'s context; 8 bytes more would take it to
/// `kmalloc-256`, and `memcg_create_ids_enomem` (ids a cgroup holds)
/// fails then. Not asserted at build time: lock debugging, KCOV or
/// `PREEMPT_RT` make the context larger on other kernels.
///
/// # Invariants
///
/// The context is on no file's context list, or on the list of the file
/// `file` names; the one exception is MIGRATE_ID, which moves it between
/// lists while holding `state` with a live `cm_id` (so a destroyer, which
/// closes the id under `state` first, never sees the exception).
#[pin_data]
pub(crate) struct Context {
    /// The id userspace names it by.
    pub(crate) id: u32,
    /// The QP type of its rdma_cm id, fixed at creation.
    qp_type: QpType,
    /// The command lock (M) and what it protects; commands take it with
    /// [`Self::lock_state`].
    #[pin]
    state: Mutex<ContextState>,
    /// The file the context belongs to (changed by MIGRATE_ID), and
    /// whether its per-state counts include the context.
    #[pin]
    file: SpinLock<Placement>,
    /// The address of the file in `file`, for ownership checks without its
    /// lock: stored with it, under the id table's lock as well (MIGRATE_ID),
    /// so that a lookup under that lock sees the file MIGRATE_ID left, as
    /// `ucma.c` checks `ctx->file` under `xa_lock`. Compared only, never
    /// followed: `file` keeps that file alive, so no other live file can
    /// have its address.
    file_addr: Atomic<usize>,
    /// User cookie for events; 0 until ACCEPT for a connect request's child
    /// (events are not delivered while 0).
    uid: Atomic<u64>,
    /// Events of this context already delivered by GET_EVENT (changed under
    /// the file's lock).
    pub(crate) events_reported: Atomic<u32>,
    /// Events of this context in its file's queue (changed under the file's
    /// lock): a context with none is destroyed without scanning the queue.
    pub(crate) queued: Atomic<u32>,
    /// What LISTEN made of the context, once it was given one: its backlog
    /// and its place on its file's listener list. (Kept apart, allocated by
    /// the first LISTEN, for room: `Context` fits the `kmalloc-192` class
    /// on the test kernels, as `ucma.c`'s context does.)
    listener: SetOnce<Arc<Listener>>,
    /// What the id is doing ([`IdState`]); changed under `file`'s lock.
    id_state: Atomic<i8>,
    /// Multicast joins not left; changed under `file`'s lock.
    joins: Atomic<u32>,
    /// Set once the rdma_cm id is closed: lookups answer `ENXIO`.
    closed: Atomic<bool>,
    /// Its file's opener's KCOV handle (the file it was created on): the
    /// coverage of its event handler and close work goes to that collector.
    kcov: KcovHandle,
    /// Teardown after a device removal, run on the close workqueue.
    #[pin]
    close_work: Work<Context>,
    /// Links of the file's context list.
    #[pin]
    links: ListLinks<0>,
    #[pin]
    list_tracker: AtomicTracker,
    /// Which file's list holds the context (see `TaggedList`).
    pub(crate) list_tag: ListTag,
}

/// What LISTEN adds to a context: its backlog, and its place on its file's
/// listener list (for fdinfo). Made by the context's first LISTEN, it is
/// on the listener list of the file whose context list holds the context,
/// or on none (MIGRATE_ID moves it with the context; taking the context
/// off a list takes it off too), and it is freed with the context.
#[pin_data]
pub(crate) struct Listener {
    /// The listening context's id.
    pub(crate) id: u32,
    /// Connect requests this listener may still queue.
    backlog: Atomic<i32>,
    /// The backlog LISTEN set.
    backlog_limit: Atomic<i32>,
    /// Connect requests of this listener queued and not fetched.
    requests_queued: Atomic<i32>,
    /// Whether the context's state is [`IdState::Listening`]; changed with
    /// it, under the context's `file` lock.
    listening: Atomic<bool>,
    /// Links of the file's listener list.
    #[pin]
    links: ListLinks,
    #[pin]
    tracker: AtomicTracker,
    /// Which file's listener list holds it.
    pub(crate) tag: ListTag,
}

impl Listener {
    fn new(id: u32) -> impl PinInit<Self> {
        pin_init!(Listener {
            id,
            backlog: Atomic::new(0),
            backlog_limit: Atomic::new(0),
            requests_queued: Atomic::new(0),
            listening: Atomic::new(false),
            links <- ListLinks::new(),
            tracker <- AtomicTracker::new(),
            tag: ListTag::new(),
        })
    }

    /// The listen backlog as `(used, limit)`, if the context is listening:
    /// connect requests queued and not fetched, and the backlog LISTEN set.
    pub(crate) fn backlog_use(&self) -> Option<(i32, i32)> {
        self.listening.load(Relaxed).then(|| {
            (
                self.requests_queued.load(Relaxed),
                self.backlog_limit.load(Relaxed),
            )
        })
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

    /// Gives back one backlog slot.
    fn backlog_put(&self) {
        self.backlog.add(1, Relaxed);
    }
}

/// The file a context belongs to, and whether the file's [`IdCounts`]
/// count it: from the moment it is listed on the file to the moment it
/// is taken off (MIGRATE_ID moves its share with it).
struct Placement {
    file: Arc<UcmaFile>,
    counted: bool,
}

kernel::impl_has_work! {
    impl HasWork<Self> for Context { self.close_work }
}

kernel::list::impl_list_arc_safe! {
    impl ListArcSafe<0> for Context { tracked_by list_tracker: AtomicTracker; }
}
kernel::list::impl_list_item! {
    impl ListItem<0> for Context { using ListLinks { self.links }; }
}

kernel::list::impl_list_arc_safe! {
    impl ListArcSafe<0> for Listener { tracked_by tracker: AtomicTracker; }
}
kernel::list::impl_list_item! {
    impl ListItem<0> for Listener { using ListLinks { self.links }; }
}

impl WorkItem for Context {
    type Pointer = Arc<Context>;

    fn run(this: Arc<Context>) {
        let _coverage = this.kcov.section();
        // The joins stay in the closed state until the context is
        // destroyed.
        let kept = this.close(false);
        drop(kept);
    }
}

impl Context {
    fn new(
        id: u32,
        file: Arc<UcmaFile>,
        uid: u64,
        qp_type: QpType,
        cm_id: CmId<Context>,
        id_state: IdState,
    ) -> impl PinInit<Self, Error> {
        let kcov = file.kcov;
        let file_addr = Arc::as_ptr(&file).addr();
        try_pin_init!(Context {
            id,
            qp_type,
            state <- new_mutex!(ContextState::Live(cm_id), "Context::state"),
            file <- new_spinlock!(
                Placement {
                    file,
                    counted: false
                },
                "Context::file"
            ),
            file_addr: Atomic::new(file_addr),
            uid: Atomic::new(uid),
            events_reported: Atomic::new(0),
            queued: Atomic::new(0),
            listener: SetOnce::new(),
            id_state: Atomic::new(id_state as i8),
            joins: Atomic::new(0),
            closed: Atomic::new(false),
            kcov,
            close_work <- kernel::new_work!("Context::close_work"),
            links <- ListLinks::new(),
            list_tracker <- AtomicTracker::new(),
            list_tag: ListTag::new(),
        })
    }

    /// Takes the command lock (M), as every command does to reach the
    /// rdma_cm id. The first time, it also makes the context the handler of
    /// its id: an id is quiet until used (rdma_cm reports events only on an
    /// id a command bound, resolved or made listen, the device's and the
    /// network's events included), so the handler is attached before the
    /// first command uses the id, and an id destroyed unused (most of
    /// `ucma_bench`'s create + destroy pairs, a release's unused ids) takes
    /// M once, in its close, and never the reference and the atomic
    /// exchange of an attach. A connect request's new id has its handler
    /// from the request.
    #[inline]
    pub(crate) fn lock_state(self: &Arc<Self>) -> MutexGuard<'_, ContextState> {
        let st = self.state.lock();
        if let ContextState::Live(cm) = &*st {
            if !cm.is_attached() {
                // Refused only if the id was used: every use is under M,
                // after this.
                let _ = cm.attach(self.clone());
            }
        }
        st
    }

    /// The file the context belongs to now.
    pub(crate) fn file(&self) -> Arc<UcmaFile> {
        self.file.lock().file.clone()
    }

    /// Whether the context belongs to `file` now: exact under the id
    /// table's lock, which MIGRATE_ID holds to move it, and wherever
    /// MIGRATE_ID cannot run: on a context not yet published (MIGRATE_ID
    /// cannot find it) and once it is closed (MIGRATE_ID moves only a live
    /// id, under M, which the close takes). Elsewhere it may be stale by a
    /// concurrent MIGRATE_ID, as any unlocked read.
    pub(crate) fn belongs_to(&self, file: &UcmaFile) -> bool {
        self.file_addr.load(Relaxed) == core::ptr::from_ref(file).addr()
    }

    /// Adds the context's state and joins to its file's counts (it is
    /// being listed there). Called under the file's lock.
    pub(crate) fn count_in(&self) {
        let mut p = self.file.lock();
        if !p.counted {
            p.counted = true;
            p.file.counts.add(self.id_state(), self.joins());
        }
    }

    /// Takes the context's state and joins off its file's counts (it is
    /// being taken off the list). Called under the file's lock.
    pub(crate) fn count_out(&self) {
        let mut p = self.file.lock();
        if p.counted {
            p.counted = false;
            p.file.counts.remove(self.id_state(), self.joins());
        }
    }

    /// Moves the id to state `to`, and its file's counts with it.
    fn set_state(&self, to: IdState) {
        let p = self.file.lock();
        let from = IdState::from_raw(self.id_state.xchg(to as i8, Relaxed));
        if p.counted {
            p.file.counts.moved(from, to);
        }
        self.note_listening(from, to);
    }

    /// Tells the listener part, if any, that the state moved from `from`
    /// to `to`. Called under `file`'s lock, with the change.
    fn note_listening(&self, from: IdState, to: IdState) {
        if from == IdState::Listening || to == IdState::Listening {
            if let Some(l) = self.listener.as_ref() {
                l.listening.store(to == IdState::Listening, Relaxed);
            }
        }
    }

    /// The user cookie.
    pub(crate) fn uid(&self) -> u64 {
        self.uid.load(Relaxed)
    }

    /// Sets the user cookie; done under the handler lock (ACCEPT).
    pub(crate) fn set_uid(&self, uid: u64) {
        self.uid.store(uid, Release);
    }

    /// LISTEN, under M (`held`, this context's command lock; `EINVAL` for
    /// another's): sets the listen backlog, on the context's listener part,
    /// made now if it has none yet. Returns the part, for the file's
    /// listener list.
    pub(crate) fn set_backlog(
        &self,
        held: &MutexGuard<'_, ContextState>,
        backlog: i32,
    ) -> Result<&Arc<Listener>> {
        if !core::ptr::eq(held.lock_ref(), &self.state) {
            return Err(EINVAL);
        }
        if self.listener.as_ref().is_none() {
            // Only this populates it, under M: no other populate runs
            // meanwhile, so this one succeeds.
            let new = Arc::pin_init(Listener::new(self.id), GFP_ACCOUNTED)?;
            self.listener.populate(new);
        }
        let l = self.listener.as_ref().ok_or(EINVAL)?;
        l.backlog_limit.store(backlog, Relaxed);
        l.backlog.store(backlog, Release);
        Ok(l)
    }

    /// The context's listener part, if LISTEN made one.
    pub(crate) fn listener(&self) -> Option<&Arc<Listener>> {
        self.listener.as_ref()
    }

    /// GET_EVENT fetched one of this listener's connect requests: its
    /// backlog slot is free again.
    pub(crate) fn request_fetched(&self) {
        if let Some(l) = self.listener.as_ref() {
            l.requests_queued.fetch_sub(1, Relaxed);
            l.backlog_put();
        }
    }

    /// What the id is doing.
    pub(crate) fn id_state(&self) -> IdState {
        IdState::from_raw(self.id_state.load(Relaxed))
    }

    /// After a command that succeeded: moves the id from `from` (read
    /// before the command, under M) to `to`, unless an event moved it
    /// meanwhile (that state is newer).
    pub(crate) fn command_done(&self, from: IdState, to: IdState) {
        let p = self.file.lock();
        let changed = self.id_state.cmpxchg(from as i8, to as i8, Relaxed).is_ok();
        if changed {
            if p.counted {
                p.file.counts.moved(from, to);
            }
            self.note_listening(from, to);
        }
    }

    /// Multicast joins not left.
    pub(crate) fn joins(&self) -> u32 {
        self.joins.load(Relaxed)
    }

    /// Counts a join made (`true`) or left.
    pub(crate) fn count_join(&self, made: bool) {
        let p = self.file.lock();
        if made {
            self.joins.add(1, Relaxed);
        } else {
            self.joins.fetch_sub(1, Relaxed);
        }
        if p.counted {
            p.file.counts.joined(made);
        }
    }

    /// CREATE_ID: a new context with a new rdma_cm id, its id reserved but
    /// not yet visible. The caller publishes it with [`Context::publish`]
    /// once the reply is out, or destroys it with [`Context::destroy`].
    /// The context's reference to `file` is taken from `file` (not cloned).
    pub(crate) fn create<'f>(
        file: ArcBorrow<'_, UcmaFile>,
        device: &'f UcmaDevice,
        uid: u64,
        ps: PortSpace,
        qp_type: QpType,
    ) -> Result<(Arc<Self>, Reservation<'f, Arc<Context>>)> {
        // The id goes to the table of the file's device.
        if !core::ptr::eq(device, &*file.device) {
            return Err(EINVAL);
        }
        let r = device.contexts.lock().reserve(GFP_ACCOUNTED_RAW)?;
        // The id goes into the context's initializer: if that fails, it is
        // dropped with it (destroyed).
        let init = CmId::new_user(ps, qp_type)
            .map(|cm_id| Context::new(r.id(), file.into(), uid, qp_type, cm_id, IdState::Idle));
        match init.and_then(|init| Arc::pin_init(init, GFP_ACCOUNTED)) {
            // The context becomes its id's handler at the first command on
            // it ([`Self::lock_state`]).
            Ok(ctx) => Ok((ctx, r)),
            Err(e) => {
                r.release();
                Err(e)
            }
        }
    }

    /// Makes a context [`Self::create`] made on `file` visible: lists it on
    /// `file` and publishes its id, giving the table its reference. Gives
    /// both back, with `EBADF`, if the file is being released, or with
    /// `EMFILE` if it is full (`EINVAL` if `file` is not the context's,
    /// which an unpublished context cannot leave: MIGRATE_ID cannot find
    /// it).
    #[expect(clippy::type_complexity, reason = "what the caller gets back")]
    pub(crate) fn publish<'d>(
        this: Arc<Self>,
        file: &UcmaFile,
        r: Reservation<'d, Arc<Context>>,
    ) -> Result<(), (Arc<Self>, Reservation<'d, Arc<Context>>, Error)> {
        if !this.belongs_to(file) {
            return Err((this, r, EINVAL));
        }
        if let Err(e) = file.lock().list_context(&this) {
            return Err((this, r, e));
        }
        r.publish(this);
        Ok(())
    }

    /// Looks up `id` on `file` (`ucma_get_ctx`): `ENOENT`, `EINVAL` for
    /// another file's id, `ENXIO` for a zombie.
    pub(crate) fn lookup(file: &UcmaFile, id: u32) -> Result<Arc<Self>> {
        let table = file.device.contexts.lock();
        let ctx = table.get(id).ok_or(ENOENT)?;
        if !ctx.belongs_to(file) {
            return Err(EINVAL);
        }
        if ctx.closed.load(Relaxed) {
            return Err(ENXIO);
        }
        Ok(ctx.into())
    }

    /// DESTROY_ID's first step: hides `id` of `file` from every lookup. Only
    /// one destroyer wins; the others get `ENOENT`.
    pub(crate) fn unpublish_id(
        file: &UcmaFile,
        id: u32,
    ) -> Result<(Arc<Self>, Reservation<'_, Arc<Context>>)> {
        file.device.contexts.lock().unpublish_checked(id, |ctx| {
            if ctx.belongs_to(file) {
                Ok(())
            } else {
                Err(EINVAL)
            }
        })
    }

    /// Hides this context of `device` from lookups; `None` if someone else
    /// already did.
    pub(crate) fn unpublish<'a>(
        &self,
        device: &'a UcmaDevice,
    ) -> Option<Reservation<'a, Arc<Context>>> {
        let taken = device
            .contexts
            .lock()
            .unpublish(self.id, |c| core::ptr::eq(&*c, self));
        // The table's reference is dropped outside its lock.
        taken.map(|(_, r)| r)
    }

    /// Destroys the rdma_cm id, if still there; afterwards (whoever of
    /// several callers destroyed it) no handler runs and its multicast
    /// groups are left. With `take_joins` (the context's destruction),
    /// returns the joins of the id, whenever it was closed; without, keeps
    /// them in [`ContextState::Closed`] for that and returns none.
    fn close(&self, take_joins: bool) -> Joins<Multicast> {
        let (held, joins) = {
            let mut st = self.state.lock();
            self.closed.store(true, Release);
            // Destroyed under M, so that a second caller (DESTROY_ID racing
            // the device-removal work) waits until it is gone, as C's
            // cancel_work_sync() does. Handlers never take M.
            // The id is closed once: the joins of this close, or those an
            // earlier close kept.
            let (held, joins) =
                match core::mem::replace(&mut *st, ContextState::Closed(Joins::default())) {
                    ContextState::Live(cm) => cm.destroy(),
                    ContextState::Closed(kept) => (None, kept),
                };
            if take_joins {
                (held, joins)
            } else {
                *st = ContextState::Closed(joins);
                (held, Joins::default())
            }
        };
        // The context reference the id held is dropped outside M.
        drop(held);
        joins
    }

    /// Tears down an unpublished context: closes its id, drops its queued
    /// events (destroying the children of unfetched connect requests),
    /// takes it off its file's list and frees its id `r`. Returns the
    /// number of its events already delivered. O(1) unless events of the
    /// context are still queued.
    ///
    /// `file` is the file the caller expects the context on (the file of a
    /// DESTROY_ID, a CREATE_ID that failed, a release, a destroyed
    /// listener's children); the context's own is taken when it is another
    /// (a child of a migrated listener). After the close the context's file
    /// is final, so the check is exact (see [`Self::belongs_to`]).
    pub(crate) fn destroy(
        self: &Arc<Self>,
        file: &UcmaFile,
        r: Reservation<'_, Arc<Context>>,
    ) -> u32 {
        // Waits for a command in progress on the context (MIGRATE_ID
        // included: afterwards `file` is final). One section of M: the
        // joins come back with the close.
        let joins = self.close(true);
        if self.belongs_to(file) {
            self.destroy_closed(file, joins, r)
        } else {
            self.destroy_closed(&self.file(), joins, r)
        }
    }

    /// [`Self::destroy`] in a file's release, of a context the release took
    /// off `file`'s list after it closed `file` to new events and took its
    /// queued ones: there is nothing of the context left on `file` to take,
    /// so the file's lock is not taken again. (A context on another file
    /// than `file` by then, which the release cannot meet, would be
    /// destroyed as by [`Self::destroy`].)
    pub(crate) fn destroy_released(
        self: &Arc<Self>,
        file: &UcmaFile,
        r: Reservation<'_, Arc<Context>>,
    ) {
        let joins = self.close(true);
        if !self.belongs_to(file) {
            self.destroy_closed(&self.file(), joins, r);
            return;
        }
        // rdma_destroy_id() left the groups; free the joins' ids.
        Multicast::forget_all(&file.device, joins);
        r.release();
    }

    /// [`Self::destroy`] once closed, on the context's final `file`.
    fn destroy_closed(
        self: &Arc<Self>,
        file: &UcmaFile,
        joins: Joins<Multicast>,
        r: Reservation<'_, Arc<Context>>,
    ) -> u32 {
        let mut dropped = EventList::new();
        let (listed, reported) = {
            let mut inner = file.lock();
            inner.take_events_of(self, &mut dropped);
            (
                inner.unlist_context(self),
                self.events_reported.load(Relaxed),
            )
        };
        drop(listed);
        // Children of connect requests not yet fetched die with the listener.
        // Their events are off the queue, so GET_EVENT cannot hand them out
        // any more; a DESTROY_ID of a guessed id or the file's release may
        // still race for them, and whoever unpublishes a child destroys it.
        for ev in dropped.iter() {
            if let Some(child) = ev.child() {
                if let Some(cr) = child.unpublish(&file.device) {
                    child.destroy(file, cr);
                }
            }
        }
        drop(dropped);
        // rdma_destroy_id() left the groups; free the joins' ids.
        Multicast::forget_all(&file.device, joins);
        r.release();
        reported
    }

    fn try_connect_request<'a>(
        listener: &Arc<Context>,
        req: ConnectRequest<'a, Context>,
        ev: &CmEvent<'_, Context>,
    ) -> ConnectOutcome<'a> {
        // Read under the per-device listener's handler lock, not the
        // listener's own: MIGRATE_ID may move it meanwhile (checked below).
        let file = listener.file();
        // What is allocated for the request is charged to the listener's
        // file's opener (this runs in a kernel worker).
        file.charged(|gfp| Self::queue_connect_request(listener, req, ev, &file, gfp))
    }

    /// [`Self::try_connect_request`] once `file`, the listener's file, is
    /// read.
    fn queue_connect_request<'a>(
        listener: &Arc<Context>,
        req: ConnectRequest<'a, Context>,
        ev: &CmEvent<'_, Context>,
        file: &Arc<UcmaFile>,
        gfp: HandlerGfp,
    ) -> ConnectOutcome<'a> {
        let r = match file.device.contexts.lock().reserve(gfp.raw) {
            Ok(r) => r,
            Err(_) => return req.refuse(ENOMEM),
        };
        // The event carries the listener's uid and the child's id; its param
        // branch follows the listener's QP type, as in C (the child's may
        // differ: a UD request on an RC listener of the IB port space).
        let resp = event_resp(ev, listener.uid(), r.id(), listener.qp_type);
        let qp_type = req.id().qp_type();
        // From here on the child's `CmId` owns the new id; dropped before
        // the handler returns, it makes the request refused (rdma_cm
        // destroys the id), so every failure below is just a return.
        let (cm_id, pending) = req.take();
        let built = Arc::pin_init(
            Context::new(r.id(), file.clone(), 0, qp_type, cm_id, IdState::Connecting),
            gfp.flags,
        )
        .and_then(|child| {
            Ok((
                Event::new(
                    listener.clone(),
                    EventKind::ConnectRequest(child.clone()),
                    resp,
                    gfp.flags,
                )?,
                child,
            ))
        });
        let (ev, child) = match built {
            Ok(built) => built,
            Err(_) => {
                r.release();
                return pending.refuse(ENOMEM);
            }
        };
        let outcome = {
            let mut inner = file.lock();
            // Listed and queued in the critical section that checks that the
            // listener is still on `file` and `file` is not being released: a
            // wildcard listener's requests run under another id's handler
            // lock, so MIGRATE_ID may have moved the listener since `file`
            // was read, and the old file may be gone. (MIGRATE_ID switches
            // files before it takes the old file's lock, so a request queued
            // here while the listener is still on `file` is moved with it.)
            // The file's caps: a request beyond them is dropped, as one
            // beyond the backlog.
            if !listener.belongs_to(file)
                || !inner.event_room()
                || inner.list_context(&child).is_err()
            {
                drop(inner);
                r.release();
                // `ev` and `child` (its `CmId` with it) are dropped on return.
                return pending.refuse(ENOMEM);
            }
            // From here on nothing fails: the child owns the id.
            let outcome = pending.attach(child.clone());
            r.publish(child);
            if let Some(l) = listener.listener() {
                l.requests_queued.add(1, Relaxed);
            }
            inner.push_event(ev);
            (outcome, inner.to_wake())
        };
        file.wake_reader(outcome.1);
        outcome.0
    }

    /// MIGRATE_ID: moves this context of `from` (with its queued events) to
    /// the tail of `to`'s lists. Returns its delivered-event count. As in C,
    /// migrating onto the context's own file moves its queued events to the
    /// tail of the queue.
    pub(crate) fn migrate(
        self: &Arc<Self>,
        from: &Arc<UcmaFile>,
        to: &Arc<UcmaFile>,
    ) -> Result<u32> {
        // `to`'s cap (checked once: concurrent MIGRATE_IDs into one file may
        // each pass it, so the file may end up over it by their number).
        if !Arc::ptr_eq(from, to) && !to.lock().id_room() {
            return Err(EMFILE);
        }
        let st = self.lock_state();
        let cm = st.cm_id()?;
        // No event of this context is queued while it moves.
        let _handler = cm.lock_handler();
        let old = {
            let table = from.device.contexts.lock();
            // Destruction may have begun since the lookup.
            let live = table
                .get(self.id)
                .is_some_and(|c| core::ptr::eq(&*c, &**self));
            if !live || !self.belongs_to(from) {
                return Err(ENOENT);
            }
            let mut p = self.file.lock();
            // The state and joins cannot change meanwhile (M and H are
            // held): the context's share of the counts moves with it.
            if p.counted {
                p.file.counts.remove(self.id_state(), self.joins());
                to.counts.add(self.id_state(), self.joins());
            }
            // INVARIANT: the mirror changes with `file`, under the table's
            // lock.
            self.file_addr.store(Arc::as_ptr(to).addr(), Relaxed);
            core::mem::replace(&mut p.file, to.clone())
        };
        drop(old);
        let mut moved = EventList::new();
        let (taken, reported) = {
            let mut inner = from.lock();
            inner.take_events_of(self, &mut moved);
            (
                inner.take_migrating(self),
                self.events_reported.load(Relaxed),
            )
        };
        let wake = {
            let mut inner = to.lock();
            match taken {
                Some(taken) => inner.put_migrating(taken),
                // Not listed on `from`: `from` is held open by the caller, so
                // its release cannot have taken it; list it anew (`to`'s cap
                // was checked above).
                None => {
                    let _ = inner.list_context(self);
                }
            }
            inner.put_events(&mut moved);
            inner.to_wake()
        };
        to.wake_readers(wake);
        Ok(reported)
    }

    /// WRITE_CM_EVENT on `file`, where [`Self::lookup`] found the context:
    /// queues a user-made event; `EINVAL` while the context has no uid.
    ///
    /// Without the command lock M and the handler lock H (C takes H only):
    /// the event is queued under `file`'s lock only if the context is on
    /// `file`'s list there, so it cannot be left behind by a DESTROY_ID or
    /// MIGRATE_ID that took the context off that list, with its queued
    /// events, before. A context off the list is being destroyed, or moved
    /// by a MIGRATE_ID, which holds M throughout: then M is taken, which
    /// waits the move out, and the event is queued (the context is back on
    /// `file`), or refused as a later lookup would have refused it.
    pub(crate) fn write_event(self: &Arc<Self>, file: &UcmaFile, ev: UserEvent) -> Result {
        // Set once, under H, by ACCEPT: a uid read non-zero stays.
        let uid = self.uid();
        if uid == 0 {
            return Err(EINVAL);
        }
        if self.queue_user_event(file, uid, ev)? == Queued::Yes {
            return Ok(());
        }
        self.write_event_off_list(file, uid, ev)
    }

    /// [`Self::write_event`] for a context found off `file`'s list.
    #[cold]
    fn write_event_off_list(self: &Arc<Self>, file: &UcmaFile, uid: u64, ev: UserEvent) -> Result {
        let st = self.lock_state();
        st.cm_id()?;
        if !self.belongs_to(file) {
            return Err(EINVAL);
        }
        match self.queue_user_event(file, uid, ev)? {
            Queued::Yes => Ok(()),
            // Off every list under M with a live id: DESTROY_ID closes the
            // id first, so only the file's release, which no command outlives.
            Queued::NotListed => Err(ENOENT),
        }
    }

    /// Queues WRITE_CM_EVENT's event on `file`, its image written in the
    /// event.
    fn queue_user_event(
        self: &Arc<Self>,
        file: &UcmaFile,
        uid: u64,
        ev: UserEvent,
    ) -> Result<Queued> {
        let image = |resp: &mut EventResp| {
            resp.zero();
            resp.uid = uid;
            resp.id = self.id;
            resp.event = ev.event;
            resp.status = ev.status;
            // `param.arg32[0..1]` = the 8 bytes of `param.arg`.
            resp.param[..8].copy_from_slice(&ev.arg);
        };
        file.queue_new_event(
            EventOrigin::User,
            self.clone(),
            EventKind::Plain,
            image,
            |ctx, kind, image| Event::new_with(ctx, kind, image, GFP_ACCOUNTED),
        )
    }

    /// SET_OPTION IB_PATH: sets the route from a user path record, then
    /// reports ROUTE_RESOLVED as rdma_cm would have.
    pub(crate) fn set_ib_path(self: &Arc<Self>, wire: &[u8; 64]) -> Result {
        let st = self.lock_state();
        let cm = st.cm_id_dev()?;
        // The event first: once rdma_cm has the route, a failed allocation
        // could neither report it nor let the command be retried (the id is
        // past ADDR_RESOLVED). C drops the event then and answers 0. The uid
        // changes only under M, which is held.
        let uid = self.uid();
        let ev = if uid != 0 {
            let mut resp = EventResp::new_zeroed();
            resp.uid = uid;
            resp.id = self.id;
            resp.event = EventType::ROUTE_RESOLVED.as_raw();
            Some(Event::new(
                self.clone(),
                EventKind::Plain,
                resp,
                GFP_ACCOUNTED,
            )?)
        } else {
            None
        };
        cm.set_ib_path(wire)?;
        let _handler = cm.lock_handler();
        self.set_state(IdState::RouteResolved);
        if let Some(ev) = ev {
            self.file().queue_event(ev);
        }
        Ok(())
    }
}

impl CmHandler for Context {
    type Join = Multicast;

    /// The handler's coverage goes to the collector of the file's opener.
    fn enter_handler(ctx: ArcBorrow<'_, Context>) -> impl Sized {
        ctx.kcov.section()
    }

    /// The event handler (not for connect requests), under the id's handler lock.
    fn event(ctx: ArcBorrow<'_, Context>, ev: &CmEvent<'_, Context>) {
        let ctx: Arc<Context> = ctx.into();
        if let Some(s) = IdState::after(ev.kind()) {
            ctx.set_state(s);
        }
        // Events of a connect request's child are dropped until ACCEPT sets
        // its uid; accept will just fail later.
        let uid = ctx.uid();
        if uid != 0 {
            let (kind, uid, id) = match ev.join() {
                Some(mc) => (EventKind::Multicast(mc.into()), mc.uid, mc.id),
                None if ev.is_multicast() => return,
                None => (EventKind::Plain, uid, ctx.id),
            };
            // Charged to the file's opener: this runs in a kernel worker.
            let file = ctx.file();
            // The image is written into the event in place, a spare's or a
            // new one's.
            let qp_type = ctx.qp_type;
            let image = |r: &mut EventResp| write_event_resp(ev, uid, id, qp_type, r);
            let _ = file.queue_new_event(
                EventOrigin::Handler,
                ctx.clone(),
                kind,
                image,
                |ctx, kind, image| file.charged(|gfp| Event::new_with(ctx, kind, image, gfp.flags)),
            );
        }
        if ev.kind() == EventType::DEVICE_REMOVAL {
            // rdma_cm waits for the id to be destroyed, which the handler
            // cannot do itself: hand it to the close workqueue, unless
            // userspace is destroying the context already (closing twice
            // is harmless; the check saves the work).
            let file = ctx.file();
            if is_live(&file.device, &ctx) {
                file.device.queue_close(ctx.clone());
            }
        }
    }

    /// A connect request on listener `listener`: creates the child context
    /// and queues the request. Refused, rdma_cm destroys the new id, and
    /// ib_cm drops the request without a reject (the peer retries), as
    /// C's `-ENOMEM` does.
    fn connect_request<'a>(
        listener: ArcBorrow<'_, Context>,
        req: ConnectRequest<'a, Context>,
        ev: &CmEvent<'_, Context>,
    ) -> ConnectOutcome<'a> {
        let listener: Arc<Context> = listener.into();
        // A context LISTEN did not reach has no backlog at all.
        let Some(part) = listener.listener().filter(|l| l.backlog_take()) else {
            return req.refuse(ENOMEM);
        };
        let outcome = Self::try_connect_request(&listener, req, ev);
        if outcome.is_refused() {
            part.backlog_put();
        }
        outcome
    }
}
