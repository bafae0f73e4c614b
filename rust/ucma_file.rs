// SPDX-License-Identifier: GPL-2.0

//! Per-open-file state of the uCMA device and the commands written to it.
//!
//! One [`UcmaFile`] exists per `open()` of `/dev/infiniband/rdma_cm`; librdmacm
//! calls it an event channel. It holds the file's event queue and the list
//! of its contexts, and executes the commands written to it. The errnos and
//! their order follow the C module (see `Documentation/abi.rst`).

#![forbid(unsafe_code)]

use core::ops::{
    Deref,
    DerefMut, //
};

use kernel::{
    fs::File,
    list::ListArc,
    new_mutex,
    prelude::*,
    seq_file::{
        seq_print,
        SeqFile, //
    },
    sync::{
        atomic::{
            ordering::{
                Acquire,
                Relaxed,
                Release, //
            },
            Atomic, //
        },
        lock::{
            mutex::MutexBackend,
            Guard, //
        },
        new_condvar,
        poll::{
            PollCondVar,
            PollCondVarBox,
            PollTable, //
        },
        Arc,
        ArcBorrow,
        CondVar,
        Mutex,
        SetOnce, //
    },
    uaccess::UserPtr,
};
use zerocopy::{
    FromBytes,
    FromZeros,
    Immutable,
    IntoBytes, //
};

use crate::{
    context::{
        Context,
        IdCounts,
        IdState,
        Listener,
        UserEvent, //
    },
    device::{
        Limits,
        UcmaDevice, //
    },
    event::{
        Event,
        EventKind,
        EventList,
        SpareEvents, //
    },
    kcov::KcovHandle,
    marshal,
    memcg::{
        HandlerGfp,
        MemCgroup,
        GFP_ACCOUNTED, //
    },
    misc_device::FileRef,
    multicast::Multicast,
    rdma_cm::{
        CmId,
        EventType,
        JoinState,
        PortSpace,
        QpState,
        QpType,
        RdmaCmId,
        RejectReason,
        SockAddr, //
    },
    tagged_list::TaggedList,
    tunables,
    ucma_core::{
        abi::{
            check_write_len,
            CmdHeader,
            Command,
            Request,
            CMD_HDR_SIZE, //
        },
        addr::{
            addr_size as addr_size_of,
            addr_size_in6,
            addr_size_kss,
            family, //
        },
        uapi::*,
    },
    user_input::{
        self,
        index_nospec,
        kmalloc_max_size,
        UserBuffer, //
    },
};

/// A context MIGRATE_ID took off its old file's lists, to list on the new.
pub(crate) struct Migrating {
    listed: ListArc<Context>,
    listener: Option<ListArc<Listener>>,
}

/// The fields of a [`UcmaFile`] protected by its lock (F).
pub(crate) struct FileInner {
    /// Events waiting for GET_EVENT, oldest first.
    events: EventList,
    /// How many events `events` holds.
    queued: usize,
    /// The file's contexts, in the order they were listed (children of a
    /// listener always after it).
    contexts: TaggedList<Context>,
    /// How many contexts `contexts` holds.
    listed: usize,
    /// The listener parts of the contexts of `contexts` that LISTEN made
    /// listeners (some may have left the listening state since), for
    /// fdinfo.
    listeners: TaggedList<Listener>,
    /// CREATE_IDs and MIGRATE_IDs refused, and connect requests dropped, for
    /// the `max_ids_per_file` cap (fdinfo).
    ids_refused: u64,
    /// WRITE_CM_EVENTs refused, and connect requests dropped, for the
    /// `max_events_per_file` cap (fdinfo).
    events_refused: u64,
    /// Set when `release()` begins: nothing is listed or queued any more.
    closed: bool,
    /// The device's caps.
    limits: Limits,
    /// GET_EVENTs asleep on `event_wait` now (at most the number of tasks,
    /// which `PID_MAX_LIMIT` keeps below 2^22).
    sleepers: u32,
    /// Whether `poll()` ever ran on the file: from then on `poll_wait` is
    /// chosen and may hold waiters (an epoll entry stays), and every event
    /// wakes it.
    polled: bool,
    /// Events GET_EVENT emptied, for the next events to reuse.
    spares: SpareEvents,
}

/// Whom an event just queued is to wake, decided under the file's lock
/// ([`FileInner::to_wake`]).
#[must_use = "hand it to UcmaFile::wake_reader or wake_readers"]
pub(crate) struct Wake {
    readers: bool,
    pollers: bool,
}

impl FileInner {
    /// Whom an event queued in this critical section is to wake: the
    /// GET_EVENT sleepers if any sleeps, and `poll()`'s waiters once the
    /// file was polled. A GET_EVENT or `poll()` that begins after this
    /// critical section takes the lock after it and finds the event, so
    /// no wake-up is owed to it (`poll()` marks the file polled under the
    /// lock before it registers, and reads `state_mirror`, which this
    /// critical section's unlock stores, after).
    pub(crate) fn to_wake(&self) -> Wake {
        Wake {
            readers: self.sleepers > 0,
            pollers: self.polled,
        }
    }
}

impl FileInner {
    /// Whether one more context may be listed (`max_ids_per_file`). Counts a
    /// refusal when not.
    pub(crate) fn id_room(&mut self) -> bool {
        let room = self.listed < self.limits.max_ids_per_file();
        if !room {
            self.ids_refused += 1;
        }
        room
    }

    /// Whether one more event may be queued by a user's request (a connect
    /// request, WRITE_CM_EVENT; `max_events_per_file`). Counts a refusal when
    /// not. The events rdma_cm reports on existing ids are always queued, as
    /// C queues them: most answer a command (and the commands that start
    /// them check this cap), but ADDR_CHANGE and MULTICAST_ERROR come
    /// without one and may repeat, so only the memory cgroup bounds them.
    pub(crate) fn event_room(&mut self) -> bool {
        let room = self.queued < self.limits.max_events_per_file();
        if !room {
            self.events_refused += 1;
        }
        room
    }

    /// Why an event of `origin` about `ctx` cannot be queued now, if it
    /// cannot (see [`UcmaFile::queue_new_event`]).
    fn refuses(&mut self, origin: EventOrigin, ctx: &Context) -> Option<Result<Queued>> {
        match origin {
            EventOrigin::Handler => None,
            EventOrigin::User if !self.event_room() => Some(Err(ENOBUFS)),
            EventOrigin::User if !self.contexts.contains(ctx) => Some(Ok(Queued::NotListed)),
            EventOrigin::User => None,
        }
    }

    /// Lists `ctx` at the tail of the file's contexts: `EBADF` if the file is
    /// being released, `EMFILE` if it holds `max_ids_per_file` contexts
    /// (`EINVAL`, which cannot happen, if `ctx` is listed already).
    pub(crate) fn list_context(&mut self, ctx: &Arc<Context>) -> Result {
        if self.closed {
            return Err(EBADF);
        }
        if !self.id_room() {
            return Err(EMFILE);
        }
        let listed = ListArc::try_from_arc(ctx.clone()).map_err(|_| EINVAL)?;
        self.contexts.push_back(listed);
        self.listed += 1;
        ctx.count_in();
        Ok(())
    }

    /// Lists `listener`, the listener part of `ctx`, a context that LISTEN
    /// made a listener, on the file's listeners (once), if `ctx` is on the
    /// file's contexts.
    pub(crate) fn list_listener(&mut self, ctx: &Context, listener: &Arc<Listener>) {
        if !self.contexts.contains(ctx) {
            return;
        }
        if let Ok(listed) = ListArc::try_from_arc(listener.clone()) {
            self.listeners.push_back(listed);
        }
    }

    /// Takes `ctx`'s listener part, if any, off the file's listeners.
    fn unlist_listener(&mut self, ctx: &Context) -> Option<ListArc<Listener>> {
        self.listeners.remove(ctx.listener()?)
    }

    /// Takes `ctx` off the file's contexts (and listeners), if it is listed
    /// here.
    pub(crate) fn unlist_context(&mut self, ctx: &Context) -> Option<ListArc<Context>> {
        let listed = self.contexts.remove(ctx)?;
        self.listed -= 1;
        ctx.count_out();
        drop(self.unlist_listener(ctx));
        Some(listed)
    }

    /// Takes the oldest listed context off the file's contexts (and
    /// listeners).
    fn pop_context(&mut self) -> Option<ListArc<Context>> {
        let listed = self.contexts.pop_front()?;
        self.listed -= 1;
        listed.count_out();
        drop(self.unlist_listener(&listed));
        Some(listed)
    }

    /// MIGRATE_ID's half on the file `ctx` leaves: takes it off the
    /// file's lists; its share of the counts has moved already.
    pub(crate) fn take_migrating(&mut self, ctx: &Context) -> Option<Migrating> {
        let listed = self.contexts.remove(ctx)?;
        self.listed -= 1;
        Some(Migrating {
            listed,
            listener: self.unlist_listener(ctx),
        })
    }

    /// MIGRATE_ID's half on the file `ctx` joins (which checked the cap
    /// first): lists it at the tail of its lists.
    pub(crate) fn put_migrating(&mut self, m: Migrating) {
        self.contexts.push_back(m.listed);
        self.listed += 1;
        if let Some(listener) = m.listener {
            self.listeners.push_back(listener);
        }
    }

    /// Queues `ev`; gives it back if the file is being released (the caller
    /// drops it outside the lock).
    pub(crate) fn push_event(&mut self, ev: ListArc<Event>) -> Option<ListArc<Event>> {
        if self.closed {
            return Some(ev);
        }
        if let Some(ctx) = ev.ctx() {
            ctx.queued.add(1, Relaxed);
        }
        self.events.push_back(ev);
        self.queued += 1;
        None
    }

    /// Appends the events of `list` (taken with [`Self::take_events`]).
    pub(crate) fn put_events(&mut self, list: &mut EventList) {
        for ev in list.iter() {
            if let Some(ctx) = ev.ctx() {
                ctx.queued.add(1, Relaxed);
            }
            self.queued += 1;
        }
        self.events.push_all_back(list);
    }

    /// Moves every queued event matching `pred` to the end of `out`, in order.
    pub(crate) fn take_events(&mut self, out: &mut EventList, pred: impl Fn(&Event) -> bool) {
        let mut cursor = self.events.cursor_front();
        while let Some(next) = cursor.peek_next() {
            if pred(&next.arc()) {
                let ev = next.remove();
                if let Some(ctx) = ev.ctx() {
                    ctx.queued.fetch_sub(1, Relaxed);
                }
                self.queued -= 1;
                out.push_back(ev);
            } else {
                cursor.move_next();
            }
        }
    }

    /// Moves the queued events of `ctx` to the end of `out`; O(1) when it
    /// has none.
    pub(crate) fn take_events_of(&mut self, ctx: &Context, out: &mut EventList) {
        if ctx.queued.load(Relaxed) != 0 {
            self.take_events(out, |ev| ev.ctx().is_some_and(|c| core::ptr::eq(&**c, ctx)));
        }
    }

    fn pop_event(&mut self) -> Option<ListArc<Event>> {
        let ev = self.events.pop_front()?;
        if let Some(ctx) = ev.ctx() {
            ctx.queued.fetch_sub(1, Relaxed);
        }
        self.queued -= 1;
        Some(ev)
    }

    fn unpop_event(&mut self, ev: ListArc<Event>) {
        if let Some(ctx) = ev.ctx() {
            ctx.queued.add(1, Relaxed);
        }
        self.events.push_front(ev);
        self.queued += 1;
    }
}

/// Who makes an event that [`UcmaFile::queue_new_event`] queues.
#[derive(Clone, Copy)]
pub(crate) enum EventOrigin {
    /// rdma_cm's event handler, for a context whose file this is.
    Handler,
    /// WRITE_CM_EVENT, written to this file.
    User,
}

/// What [`UcmaFile::queue_new_event`] did.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queued {
    /// Queued (or dropped with the file being released).
    Yes,
    /// Nothing: a user event about a context not on this file's list (its
    /// DESTROY_ID or MIGRATE_ID took it off, with its queued events).
    NotListed,
}

/// [`UcmaFile::state_mirror`]: events are queued.
const QUEUED: i32 = 1;
/// [`UcmaFile::state_mirror`]: `max_events_per_file` events are queued.
const AT_EVENT_CAP: i32 = 2;
/// [`UcmaFile::state_mirror`]: `max_ids_per_file` contexts are listed.
const AT_ID_CAP: i32 = 4;

/// State of one open file of the uCMA device.
///
/// # Invariants
///
/// Whenever `inner` is unlocked, `state_mirror` has [`QUEUED`] set if and
/// only if `inner.events` is non-empty, [`AT_EVENT_CAP`] if and only if
/// it holds `max_events_per_file` events or more, and [`AT_ID_CAP`] if and
/// only if `inner.listed` is `max_ids_per_file` or more: it is updated
/// only by [`FileGuard`]'s drop, before the lock is released.
#[pin_data]
pub(crate) struct UcmaFile {
    /// The device the file is of.
    pub(crate) device: Arc<UcmaDevice>,
    /// The event queue and context list (F). Locked through
    /// [`UcmaFile::lock`] only.
    #[pin]
    inner: Mutex<FileInner>,
    /// Whether events are queued ([`QUEUED`]), for `poll()` to read
    /// without the lock (as C's `ucma_poll()` reads `list_empty()`):
    /// pollers then never wait for the lock that every event's writer
    /// takes. Whether the queue is at its cap ([`AT_EVENT_CAP`]), for the
    /// commands that report events to check without the lock, and the
    /// context list at its own ([`AT_ID_CAP`]), for CREATE_ID's.
    state_mirror: Atomic<i32>,
    /// Whether `poll()` marked `FileInner::polled` already (so that it
    /// takes the lock once, not at every call), after it chose `poll_wait`.
    polled: Atomic<bool>,
    /// The listed contexts by state, and their joins (fdinfo).
    pub(crate) counts: IdCounts,
    /// Events GET_EVENT handed out on this file (fdinfo).
    events_delivered: Atomic<u64>,
    /// The opener's memory cgroup: what the event handler allocates for
    /// this file is charged to it.
    memcg: MemCgroup,
    /// The opener's KCOV handle: the coverage of what runs for this file's
    /// ids in rdma_cm's workers goes to the opener's collector, if any.
    pub(crate) kcov: KcovHandle,
    /// GET_EVENT's sleepers, each exclusive: woken one per event queued.
    #[pin]
    event_wait: CondVar,
    /// `poll()`'s waiters: woken whenever an event is queued. Apart from
    /// `event_wait`, so that an `EPOLLEXCLUSIVE` entry (an exclusive waiter
    /// too) never takes the wake-up an event owes a GET_EVENT sleeper.
    /// Boxed: its drop frees it after an RCU grace period (`kfree_rcu`), where
    /// an inline `PollCondVar`'s drop waits one out (`synchronize_rcu()`),
    /// which made every close of the file wait milliseconds. Chosen by the
    /// first `poll()`, under the lock (most files are never polled: their
    /// open and close then allocate, wake and free no queue): the file's
    /// own, or the device's shared one when there is no memory for it.
    poll_wait: SetOnce<PollQueue>,
}

/// The lock of a [`UcmaFile`]'s [`FileInner`]; on drop it records whether
/// events are queued, whether they are at their cap and whether the
/// contexts are at theirs ([`UcmaFile::state_mirror`]), then unlocks.
pub(crate) struct FileGuard<'a> {
    file: &'a UcmaFile,
    guard: Guard<'a, FileInner, MutexBackend>,
}

impl Deref for FileGuard<'_> {
    type Target = FileInner;

    fn deref(&self) -> &FileInner {
        &self.guard
    }
}

impl DerefMut for FileGuard<'_> {
    fn deref_mut(&mut self) -> &mut FileInner {
        &mut self.guard
    }
}

impl Drop for FileGuard<'_> {
    fn drop(&mut self) {
        let inner = &*self.guard;
        let mut state = 0;
        if !inner.events.is_empty() {
            state |= QUEUED;
        }
        if inner.queued >= inner.limits.max_events_per_file() {
            state |= AT_EVENT_CAP;
        }
        if inner.listed >= inner.limits.max_ids_per_file() {
            state |= AT_ID_CAP;
        }
        // INVARIANT: stored under the lock, which `guard` releases after this.
        // Release: a poller that sees `QUEUED` sees the queued event.
        self.file.state_mirror.store(state, Release);
    }
}

/// Reads a fixed-size command struct from the payload, as the C module:
/// `size_of::<T>()` bytes whatever `in` says.
fn read_cmd<T: FromBytes>(payload: UserPtr) -> Result<T> {
    user_input::read_user(payload)
}

/// Reads the first `min(in_len, size_of::<T>())` bytes of the payload; the
/// rest stays zero (CONNECT and ACCEPT, which honour `in`).
fn read_cmd_partial<T: FromBytes + IntoBytes>(payload: UserPtr, in_len: usize) -> Result<T> {
    user_input::read_user_prefix(payload, in_len)
}

/// Copies `data` to the user address `response`.
fn write_resp(response: u64, data: &[u8]) -> Result {
    let addr = usize::try_from(response).map_err(|_| EFAULT)?;
    user_input::write_user(UserPtr::from_addr(addr), data)
}

/// Copies a reply struct, whole, to `response`.
fn write_struct<T: IntoBytes + Immutable>(response: u64, v: &T) -> Result {
    write_resp(response, v.as_bytes())
}

/// Copies the first `min(out, size_of::<T>())` bytes of a reply.
fn write_struct_min<T: IntoBytes + Immutable>(response: u64, v: &T, out: usize) -> Result {
    let addr = usize::try_from(response).map_err(|_| EFAULT)?;
    user_input::write_user_prefix(UserPtr::from_addr(addr), v, out)
}

impl UcmaFile {
    /// Allocates the state of a newly opened file, in `open()`: the
    /// calling process is the opener.
    pub(crate) fn new(device: &Arc<UcmaDevice>) -> Result<Arc<Self>> {
        let _coverage = KcovHandle::of_current().section();
        Arc::pin_init(
            pin_init!(Self {
                device: device.clone(),
                inner <- new_mutex!(
                    FileInner {
                        events: EventList::new(),
                        queued: 0,
                        contexts: TaggedList::new(),
                        listed: 0,
                        listeners: TaggedList::new(),
                        ids_refused: 0,
                        events_refused: 0,
                        closed: false,
                        limits: device.limits,
                        sleepers: 0,
                        polled: false,
                        spares: SpareEvents::new(),
                    },
                    "UcmaFile::inner"
                ),
                state_mirror: Atomic::new(0),
                polled: Atomic::new(false),
                counts: IdCounts::new(),
                events_delivered: Atomic::new(0),
                memcg: MemCgroup::of_current(),
                kcov: KcovHandle::of_current(),
                event_wait <- new_condvar!("UcmaFile::event_wait"),
                poll_wait: SetOnce::new(),
            }),
            GFP_ACCOUNTED,
        )
    }

    /// Runs `f` with what the calling task allocates with `__GFP_ACCOUNT`
    /// charged to the opener's memory cgroup, and the flags to allocate
    /// with: for the event handler, which runs in a kernel worker.
    pub(crate) fn charged<R>(&self, f: impl FnOnce(HandlerGfp) -> R) -> R {
        self.memcg.charged(f)
    }

    /// Locks the file's event queue and context list (F).
    pub(crate) fn lock(&self) -> FileGuard<'_> {
        FileGuard {
            file: self,
            guard: self.inner.lock(),
        }
    }

    /// Appends an event to the queue and wakes a reader; the event is
    /// dropped if the file is being released.
    pub(crate) fn queue_event(&self, ev: ListArc<Event>) {
        self.push_and_wake(self.lock(), ev);
    }

    /// Queues `ev` under `inner`, this file's lock, unlocks, then wakes a
    /// reader; `ev` is dropped after the unlock if the file is being
    /// released.
    fn push_and_wake(&self, mut inner: FileGuard<'_>, ev: ListArc<Event>) {
        let rejected = inner.push_event(ev);
        let wake = inner.to_wake();
        drop(inner);
        if rejected.is_none() {
            self.wake_reader(wake);
        }
        drop(rejected);
    }

    /// Queues the event about `ctx` and `kind` whose image `image` writes
    /// (all of it), made from a spare when the file keeps one, else
    /// allocated by `alloc`; wakes a reader. For [`EventOrigin::User`]
    /// (WRITE_CM_EVENT), refused with `ENOBUFS` while the file has
    /// `max_events_per_file` events queued, and not queued
    /// ([`Queued::NotListed`]) unless `ctx` is on the file's list. Dropped,
    /// as by [`Self::queue_event`], if the file is being released.
    ///
    /// The image is written in place, into the event: passed by value,
    /// its 336 bytes were copied on the way (`memcpy`, about 130
    /// instructions).
    pub(crate) fn queue_new_event<F: FnOnce(&mut EventResp)>(
        &self,
        origin: EventOrigin,
        ctx: Arc<Context>,
        kind: EventKind,
        image: F,
        alloc: impl FnOnce(Arc<Context>, EventKind, F) -> Result<ListArc<Event>>,
    ) -> Result<Queued> {
        let mut inner = self.lock();
        if let Some(refused) = inner.refuses(origin, &ctx) {
            drop(inner);
            return refused;
        }
        let ev = match inner.spares.take() {
            Some(spare) => Event::refill(spare, ctx, kind, image),
            None => {
                drop(inner);
                let ev = alloc(ctx, kind, image)?;
                inner = self.lock();
                // `alloc` made an event about `ctx` (it has no other).
                let refused = match ev.ctx() {
                    Some(ctx) => inner.refuses(origin, ctx),
                    None => None,
                };
                if let Some(refused) = refused {
                    drop(inner);
                    drop(ev);
                    return refused;
                }
                ev
            }
        };
        self.push_and_wake(inner, ev);
        Ok(Queued::Yes)
    }

    /// Wakes every GET_EVENT sleeper and poller (as `wake` says there are):
    /// after several events were queued at once (MIGRATE_ID).
    pub(crate) fn wake_readers(&self, wake: Wake) {
        if wake.readers {
            self.event_wait.notify_all();
        }
        if wake.pollers {
            self.poll_queue().notify_all();
        }
    }

    /// Wakes one GET_EVENT sleeper and the pollers (every one but all
    /// `EPOLLEXCLUSIVE` entries after the first, as C's
    /// `wake_up_interruptible()`), for one event queued: GET_EVENT sleeps
    /// as an exclusive waiter, and one event can satisfy one GET_EVENT.
    /// Waking them all (C's non-exclusive wait) sends every sleeper to the
    /// file lock, the writer's lock, only for all but one to sleep again.
    /// Each wake-up is skipped when `wake` (taken under the lock that
    /// queued the event) says nobody waits: an empty wait queue's wake-up
    /// still takes its lock.
    pub(crate) fn wake_reader(&self, wake: Wake) {
        if wake.readers {
            self.event_wait.notify_one();
        }
        if wake.pollers {
            match self.poll_wait.as_ref() {
                Some(PollQueue::Own(queue)) => queue.notify_one(),
                // The device's queue is shared: every waiter on it is woken.
                _ => self.device.poll_shared.notify_all(),
            }
        }
    }

    /// Passes a wake-up on to the next GET_EVENT sleeper: from one woken
    /// that leaves without the event (signal, faulting reply buffer).
    fn pass_wake_up(&self) {
        self.event_wait.notify_one();
    }

    /// `release()`: closes the file to new contexts and events, drops the
    /// queued events (destroying the children of connect requests among
    /// them), then destroys every other context, in the order they were
    /// listed (a listener before the children it spawned on this file).
    /// O(contexts + events).
    pub(crate) fn release(&self) {
        let mut events = EventList::new();
        // The first context is taken off the list here already: one lock
        // section fewer (an empty file's release takes the lock once).
        let (spares, mut next) = {
            let mut inner = self.lock();
            inner.closed = true;
            inner.take_events(&mut events, |_| true);
            (inner.spares.take_all(), inner.pop_context())
        };
        // The children of unfetched connect requests die with them, now: a
        // listener migrated here brought its queued requests along, but
        // their children are listed on the file it came from (C destroys
        // them with the listener's events too; the peer is rejected at once).
        for ev in events.iter() {
            if let Some(child) = ev.child() {
                if let Some(cr) = child.unpublish(&self.device) {
                    child.destroy(self, cr);
                }
            }
        }
        drop(events);
        drop(spares);
        // A context destroyed above as a request's child is no longer
        // published: `unpublish` finds it gone.
        while let Some(listed) = next {
            let ctx = listed.into_arc();
            if let Some(r) = ctx.unpublish(&self.device) {
                ctx.destroy_released(self, r);
            }
            next = self.lock().pop_context();
        }
    }

    /// Runs `f` on the rdma_cm id of context `id` under its command lock
    /// (`ucma_get_ctx` semantics).
    fn on_cm<R>(&self, id: u32, f: impl FnOnce(&CmId<Context>) -> Result<R>) -> Result<R> {
        let ctx = Context::lookup(self, id)?;
        let st = ctx.lock_state();
        f(st.cm_id()?)
    }

    /// As [`Self::on_cm`], for an id bound to a device (`ucma_get_ctx_dev`).
    fn on_cm_dev<R>(&self, id: u32, f: impl FnOnce(&CmId<Context>) -> Result<R>) -> Result<R> {
        let ctx = Context::lookup(self, id)?;
        let st = ctx.lock_state();
        f(st.cm_id_dev()?)
    }

    /// As [`Self::on_cm`] (or [`Self::on_cm_dev`] when `dev`), for a
    /// command that, done, moves the id from state `from` to `to(from)`
    /// when that is `Some` (fdinfo).
    fn on_cm_to(
        &self,
        id: u32,
        dev: bool,
        to: impl FnOnce(IdState) -> Option<IdState>,
        f: impl FnOnce(&CmId<Context>) -> Result,
    ) -> Result {
        let ctx = Context::lookup(self, id)?;
        let st = ctx.lock_state();
        let cm = if dev { st.cm_id_dev()? } else { st.cm_id()? };
        let from = ctx.id_state();
        f(cm)?;
        if let Some(to) = to(from) {
            ctx.command_done(from, to);
        }
        Ok(())
    }

    /// RESOLVE_IP and RESOLVE_ADDR, once their addresses are validated.
    fn resolve(&self, id: u32, src: &[u8], dst: &[u8], timeout_ms: u32) -> Result {
        self.on_cm_to(
            id,
            false,
            |_| Some(IdState::Bound),
            |cm| {
                cm.resolve_addr(
                    &SockAddr::from_bytes(src),
                    &SockAddr::from_bytes(dst),
                    timeout_ms,
                )
            },
        )
    }

    /// Runs a command. The file's reference count is taken only by the
    /// commands that keep a reference (CREATE_ID, MIGRATE_ID): not one
    /// atomic increment and decrement per command.
    fn execute(this: ArcBorrow<'_, Self>, nonblocking: bool, req: Request, p: UserPtr) -> Result {
        let in_len = usize::from(req.in_len);
        let out = usize::from(req.out_len);
        let this_ref: &Self = &this;
        // At the event cap, the commands after which rdma_cm reports events
        // wait for room (max_events_per_file): repeated on ids whose events
        // are never fetched (RESOLVE_ADDR after each ADDR_ERROR, say), they
        // would grow the queue without bound.
        // The file's lock is taken only when the lock-free state says the
        // cap was reached (a racing GET_EVENT may have made room since):
        // below the cap, these commands never wait for the lock the event
        // handler takes to queue.
        if req.command.reports_events()
            && this_ref.state_mirror.load(Relaxed) & AT_EVENT_CAP != 0
            && !this_ref.lock().event_room()
        {
            return Err(ENOBUFS);
        }
        match req.command {
            Command::CreateId => Self::create_id(this, p, out),
            Command::DestroyId => this_ref.destroy_id(p, out),
            Command::BindIp => this_ref.bind_ip(p),
            Command::Bind => this_ref.bind(p),
            Command::ResolveIp => this_ref.resolve_ip(p),
            Command::ResolveAddr => this_ref.resolve_addr(p),
            Command::ResolveRoute => this_ref.resolve_route(p),
            Command::QueryRoute => this_ref.query_route(p, out),
            Command::Query => this_ref.query(p, out),
            Command::Connect => this_ref.connect(p, in_len),
            Command::Listen => this_ref.listen(p),
            Command::Accept => this_ref.accept(p, in_len),
            Command::Reject => this_ref.reject(p),
            Command::Disconnect => this_ref.disconnect(p),
            Command::InitQpAttr => this_ref.init_qp_attr(p, out),
            Command::GetEvent => this_ref.get_event(nonblocking, p, out),
            Command::SetOption => this_ref.set_option(p),
            Command::Notify => this_ref.notify(p),
            Command::MigrateId => Arc::from(this).migrate_id(p),
            Command::WriteCmEvent => this_ref.write_cm_event(p),
            // Framing already answered ENOSYS for GET_OPTION.
            Command::GetOption => Err(ENOSYS),
            Command::JoinIpMcast => this_ref.join_ip_mcast(p, out),
            Command::JoinMcast => this_ref.join_mcast(p, out),
            Command::LeaveMcast => this_ref.leave_mcast(p, out),
            Command::ResolveIbService => this_ref.resolve_ib_service(p),
        }
    }

    fn create_id(this: ArcBorrow<'_, Self>, p: UserPtr, out: usize) -> Result {
        let file: &Self = &this;
        if out < core::mem::size_of::<CreateIdResp>() {
            return Err(ENOSPC);
        }
        let cmd: CreateId = read_cmd(p)?;
        let ps = PortSpace::from_raw(cmd.ps.into()).ok_or(EINVAL)?;
        let qp_type = match ps {
            PortSpace::TCP => QpType::RC,
            PortSpace::UDP | PortSpace::IPOIB => QpType::UD,
            _ => QpType::from_raw(cmd.qp_type.into()),
        };
        // The cap first, before rdma_cm allocates; publish() checks it again
        // (concurrent CREATE_IDs may fill the file meanwhile). The lock only
        // when the lock-free state says the cap was reached (a DESTROY_ID
        // may have made room since).
        if file.state_mirror.load(Relaxed) & AT_ID_CAP != 0 && !file.lock().id_room() {
            return Err(EMFILE);
        }
        let (ctx, r) = Context::create(this, &file.device, cmd.uid, ps, qp_type)?;
        // The id stays invisible until the reply is out.
        if let Err(e) = write_struct(cmd.response, &CreateIdResp { id: ctx.id }) {
            ctx.destroy(file, r);
            return Err(e);
        }
        // The file being written is not released, so this lists it unless it
        // is full.
        Context::publish(ctx, file, r).map_err(|(ctx, r, e)| {
            ctx.destroy(file, r);
            e
        })
    }

    fn destroy_id(&self, p: UserPtr, out: usize) -> Result {
        if out < core::mem::size_of::<DestroyIdResp>() {
            return Err(ENOSPC);
        }
        let cmd: DestroyId = read_cmd(p)?;
        let (ctx, r) = Context::unpublish_id(self, cmd.id)?;
        let events_reported = ctx.destroy(self, r);
        write_struct(cmd.response, &DestroyIdResp { events_reported })
    }

    fn bind_ip(&self, p: UserPtr) -> Result {
        let cmd: BindIp = read_cmd(p)?;
        if addr_size_in6(&cmd.addr) == 0 {
            return Err(EINVAL);
        }
        self.on_cm_to(
            cmd.id,
            false,
            |_| Some(IdState::Bound),
            |cm| cm.bind_addr(&SockAddr::from_bytes(&cmd.addr)),
        )
    }

    fn bind(&self, p: UserPtr) -> Result {
        let cmd: Bind = read_cmd(p)?;
        if cmd.reserved != 0
            || cmd.addr_size == 0
            || usize::from(cmd.addr_size) != addr_size_kss(&cmd.addr)
        {
            return Err(EINVAL);
        }
        self.on_cm_to(
            cmd.id,
            false,
            |_| Some(IdState::Bound),
            |cm| cm.bind_addr(&SockAddr::from_bytes(&cmd.addr)),
        )
    }

    fn resolve_ip(&self, p: UserPtr) -> Result {
        let cmd: ResolveIp = read_cmd(p)?;
        if (family(&cmd.src_addr) != 0 && addr_size_in6(&cmd.src_addr) == 0)
            || addr_size_in6(&cmd.dst_addr) == 0
        {
            return Err(EINVAL);
        }
        self.resolve(cmd.id, &cmd.src_addr, &cmd.dst_addr, cmd.timeout_ms)
    }

    fn resolve_addr(&self, p: UserPtr) -> Result {
        let cmd: ResolveAddr = read_cmd(p)?;
        if cmd.reserved != 0
            || (cmd.src_size != 0 && usize::from(cmd.src_size) != addr_size_kss(&cmd.src_addr))
            || cmd.dst_size == 0
            || usize::from(cmd.dst_size) != addr_size_kss(&cmd.dst_addr)
        {
            return Err(EINVAL);
        }
        self.resolve(cmd.id, &cmd.src_addr, &cmd.dst_addr, cmd.timeout_ms)
    }

    fn resolve_route(&self, p: UserPtr) -> Result {
        let cmd: ResolveRoute = read_cmd(p)?;
        self.on_cm_dev(cmd.id, |cm| cm.resolve_route(cmd.timeout_ms))
    }

    fn resolve_ib_service(&self, p: UserPtr) -> Result {
        let cmd: ResolveIbService = read_cmd(p)?;
        self.on_cm(cmd.id, |cm| cm.resolve_ib_service(&cmd.ibs))
    }

    fn query_route(&self, p: UserPtr, out: usize) -> Result {
        if out < QueryRouteResp::MIN_OUT {
            return Err(ENOSPC);
        }
        let cmd: Query = read_cmd(p)?;
        let resp = self.on_cm(cmd.id, |cm| Ok(marshal::query_route(cm)))?;
        write_struct_min(cmd.response, &resp, out)
    }

    fn query(&self, p: UserPtr, out: usize) -> Result {
        let cmd: Query = read_cmd(p)?;
        let ctx = Context::lookup(self, cmd.id)?;
        let st = ctx.lock_state();
        let cm: &RdmaCmId = st.cm_id()?;
        match cmd.option {
            QUERY_ADDR | QUERY_GID => {
                if out < QueryAddrResp::MIN_OUT {
                    return Err(ENOSPC);
                }
                // Filled in place (a reply returned by value is copied).
                let mut resp = QueryAddrResp::new_zeroed();
                if cmd.option == QUERY_ADDR {
                    marshal::query_addr(cm, &mut resp);
                } else {
                    marshal::query_gid(cm, &mut resp);
                }
                write_struct_min(cmd.response, &resp, out)
            }
            QUERY_PATH => {
                if out < 8 {
                    return Err(ENOSPC);
                }
                let resp = marshal::query_path(cm, out)?;
                write_resp(cmd.response, &resp)
            }
            QUERY_IB_SERVICE => {
                if out < QUERY_IB_SERVICE_RESP_SIZE {
                    return Err(ENOSPC);
                }
                let resp = marshal::query_ib_service(cm, out)?;
                write_resp(cmd.response, &resp)
            }
            _ => Err(ENOSYS),
        }
    }

    fn connect(&self, p: UserPtr, in_len: usize) -> Result {
        // Up to `reserved`: the pre-ECE struct.
        if in_len < core::mem::offset_of!(Connect, ece) {
            return Err(EINVAL);
        }
        let mut cmd: Connect = read_cmd_partial(p, in_len)?;
        // As in C, the ECE counts only when `in` covers all of it.
        if in_len < core::mem::offset_of!(Connect, ece) + core::mem::size_of::<Ece>() {
            cmd.ece = Ece::new_zeroed();
        }
        if cmd.conn_param.valid == 0 {
            return Err(EINVAL);
        }
        self.on_cm_to(
            cmd.id,
            true,
            |_| Some(IdState::Connecting),
            |cm| {
                cm.connect(
                    &marshal::conn_params(cm, &cmd.conn_param),
                    marshal::ece(&cmd.ece),
                )
            },
        )
    }

    fn listen(&self, p: UserPtr) -> Result {
        let cmd: Listen = read_cmd(p)?;
        let ctx = Context::lookup(self, cmd.id)?;
        let max = tunables::max_backlog();
        let backlog = if cmd.backlog <= 0 || cmd.backlog > max {
            max
        } else {
            cmd.backlog
        };
        let st = ctx.lock_state();
        let cm = st.cm_id()?;
        let listener = ctx.set_backlog(&st, backlog)?;
        let from = ctx.id_state();
        cm.listen(backlog)?;
        ctx.command_done(from, IdState::Listening);
        // M is held, so MIGRATE_ID cannot move the context now; but it may
        // have since the lookup (as in C, LISTEN goes on): the listener is
        // listed on the file the context is on, if it is still listed there
        // (not if that file's release took it).
        ctx.file().lock().list_listener(&ctx, listener);
        Ok(())
    }

    fn accept(&self, p: UserPtr, in_len: usize) -> Result {
        if in_len < core::mem::offset_of!(Accept, ece) {
            return Err(EINVAL);
        }
        let mut cmd: Accept = read_cmd_partial(p, in_len)?;
        if in_len < core::mem::offset_of!(Accept, ece) + core::mem::size_of::<Ece>() {
            cmd.ece = Ece::new_zeroed();
        }
        let ctx = Context::lookup(self, cmd.id)?;
        let st = ctx.lock_state();
        let cm = st.cm_id_dev()?;
        let ece = marshal::ece(&cmd.ece);
        // The id's one answer to a connect, as REJECT's.
        let handler = cm.lock_handler();
        if cmd.conn_param.valid != 0 {
            let param = marshal::conn_params(cm, &cmd.conn_param);
            handler.accept(Some(&param), ece)?;
            // Under the handler lock: the child's events are delivered from
            // the first one after the accept.
            ctx.set_uid(cmd.uid);
        } else {
            handler.accept(None, ece)?;
        }
        // fdinfo: no event follows the active side's RTU (ACCEPT without
        // parameters: rdma_cm reported CONNECT_RESPONSE, the id has no
        // kernel QP) nor a UD id's SIDR reply; a passive RC id waits for
        // ESTABLISHED. No event moves the state meanwhile (H is held).
        if cmd.conn_param.valid == 0 || cm.qp_type() == QpType::UD {
            ctx.command_done(IdState::Connecting, IdState::Connected);
        }
        Ok(())
    }

    fn reject(&self, p: UserPtr) -> Result {
        let cmd: Reject = read_cmd(p)?;
        let reason = match cmd.reason {
            0 => RejectReason::CONSUMER_DEFINED,
            r if r == RejectReason::CONSUMER_DEFINED.as_raw() => RejectReason::CONSUMER_DEFINED,
            r if r == RejectReason::VENDOR_OPTION_NOT_SUPPORTED.as_raw() => {
                RejectReason::VENDOR_OPTION_NOT_SUPPORTED
            }
            _ => return Err(EINVAL),
        };
        let len = usize::from(cmd.private_data_len).min(cmd.private_data.len());
        // The id's one answer to a connect: EINVAL from the abstraction
        // without one, where C passes the call on (Documentation/abi.rst).
        let rejected = |s| (s == IdState::Connecting).then_some(IdState::Disconnected);
        self.on_cm_to(cmd.id, true, rejected, |cm| {
            cm.lock_handler().reject(&cmd.private_data[..len], reason)
        })
    }

    fn disconnect(&self, p: UserPtr) -> Result {
        let cmd: Disconnect = read_cmd(p)?;
        // Only a connection is disconnected: rdma_cm also answers 0 for a
        // listener, or a request not accepted yet, on an IB/RoCE port.
        let ended = |s| {
            matches!(s, IdState::Connecting | IdState::Connected).then_some(IdState::Disconnected)
        };
        self.on_cm_to(cmd.id, true, ended, |cm| cm.disconnect())
    }

    fn init_qp_attr(&self, p: UserPtr, out: usize) -> Result {
        if out < QP_ATTR_SIZE {
            return Err(ENOSPC);
        }
        let cmd: InitQpAttr = read_cmd(p)?;
        let qp_state = QpState::from_raw(cmd.qp_state).ok_or(EINVAL)?;
        let resp = self.on_cm_dev(cmd.id, |cm| {
            cm.init_qp_attr(qp_state).map(|attr| attr.to_uverbs())
        })?;
        write_resp(cmd.response, &resp)
    }

    /// GET_EVENT; `nonblocking`: the file's `O_NONBLOCK` at the write.
    fn get_event(&self, nonblocking: bool, p: UserPtr, out: usize) -> Result {
        if out < EventResp::MIN_OUT {
            return Err(ENOSPC);
        }
        let cmd: GetEvent = read_cmd(p)?;
        let mut inner = self.lock();
        while inner.events.is_empty() {
            if nonblocking {
                return Err(EAGAIN);
            }
            inner.sleepers += 1;
            let interrupted = self.event_wait.wait_interruptible(&mut inner.guard);
            inner.sleepers -= 1;
            if interrupted {
                // A wake-up meant for this sleeper goes to the next one.
                let queued = !inner.events.is_empty();
                drop(inner);
                if queued {
                    self.pass_wake_up();
                }
                return Err(ERESTARTSYS);
            }
        }
        let Some(ev) = inner.pop_event() else {
            return Err(EAGAIN);
        };
        // A faulting reply buffer leaves the event queued, for another
        // sleeper if there is one.
        if let Err(e) = write_struct_min(cmd.response, &ev.resp, out) {
            inner.unpop_event(ev);
            drop(inner);
            self.pass_wake_up();
            return Err(e);
        }
        self.events_delivered.add(1, Relaxed);
        if let Some(mc) = ev.join() {
            mc.events_reported.add(1, Relaxed);
        }
        if let Some(ctx) = ev.ctx() {
            ctx.events_reported.add(1, Relaxed);
            if ev.child().is_some() {
                ctx.request_fetched();
            }
        }
        // The event's allocation is kept for the next; what it was about
        // goes after the unlock.
        let (about, spare) = Event::into_spare(ev);
        let unkept = spare.and_then(|spare| inner.spares.put(spare));
        drop(inner);
        drop(about);
        drop(unkept);
        Ok(())
    }

    fn set_option(&self, p: UserPtr) -> Result {
        let cmd: SetOption = read_cmd(p)?;
        let optlen = usize::try_from(cmd.optlen).map_err(|_| EINVAL)?;
        if optlen > kmalloc_max_size() {
            return Err(EINVAL);
        }
        let ctx = Context::lookup(self, cmd.id)?;
        let addr = usize::try_from(cmd.optval).map_err(|_| EFAULT)?;
        let optval = UserBuffer::memdup(UserPtr::from_addr(addr), optlen)?;
        let optval = optval.as_slice();
        match cmd.level {
            OPTION_ID => {
                let st = ctx.lock_state();
                let cm = st.cm_id()?;
                let int_opt = || -> Result<bool> {
                    let b: [u8; 4] = optval.try_into().map_err(|_| EINVAL)?;
                    Ok(i32::from_ne_bytes(b) != 0)
                };
                match cmd.optname {
                    OPTION_ID_TOS => match optval {
                        [tos] => {
                            cm.set_service_type(*tos);
                            Ok(())
                        }
                        _ => Err(EINVAL),
                    },
                    OPTION_ID_REUSEADDR => cm.set_reuseaddr(int_opt()?),
                    OPTION_ID_AFONLY => cm.set_afonly(int_opt()?),
                    OPTION_ID_ACK_TIMEOUT => match optval {
                        [t] => cm.set_ack_timeout(*t),
                        _ => Err(EINVAL),
                    },
                    _ => Err(ENOSYS),
                }
            }
            OPTION_IB => match cmd.optname {
                // Paths from userspace (ibacm) are an IB-only path; the ports
                // here never take it and librdmacm falls back to RESOLVE_ROUTE
                // on any error.
                OPTION_IB_PATH => {
                    if optlen % PATH_REC_DATA_SIZE != 0 {
                        return Err(EINVAL);
                    }
                    // The first record flagged GMP | PRIMARY | BIDIRECTIONAL.
                    let wire = optval
                        .chunks_exact(PATH_REC_DATA_SIZE)
                        .find(|rec| rec[..4] == PATH_FLAGS_PRIMARY.to_ne_bytes())
                        .and_then(|rec| <[u8; 64]>::try_from(&rec[8..]).ok())
                        .ok_or(EINVAL)?;
                    ctx.set_ib_path(&wire)
                }
                _ => Err(ENOSYS),
            },
            _ => Err(ENOSYS),
        }
    }

    fn notify(&self, p: UserPtr) -> Result {
        let cmd: Notify = read_cmd(p)?;
        // C checks the device under the lock, after the lookup: as
        // `on_cm_dev` does.
        self.on_cm_dev(cmd.id, |cm| cm.notify(cmd.event))
    }

    /// JOIN_IP_MCAST: converted to the JOIN_MCAST it is, as in C.
    fn join_ip_mcast(&self, p: UserPtr, out: usize) -> Result {
        let cmd: JoinIpMcast = read_cmd(p)?;
        let addr_size = addr_size_in6(&cmd.addr);
        if addr_size == 0 {
            return Err(EINVAL);
        }
        let mut join = JoinMcast::new_zeroed();
        join.response = cmd.response;
        join.uid = cmd.uid;
        join.id = cmd.id;
        // CAST: at most 28.
        join.addr_size = addr_size as u16;
        join.join_flags = MC_JOIN_FLAG_FULLMEMBER;
        join.addr[..addr_size].copy_from_slice(&cmd.addr[..addr_size]);
        self.process_join(&join, out)
    }

    fn join_mcast(&self, p: UserPtr, out: usize) -> Result {
        let cmd: JoinMcast = read_cmd(p)?;
        if addr_size_kss(&cmd.addr) == 0 {
            return Err(EINVAL);
        }
        self.process_join(&cmd, out)
    }

    /// `ucma_process_join`.
    fn process_join(&self, cmd: &JoinMcast, out: usize) -> Result {
        if out < core::mem::size_of::<CreateIdResp>() {
            return Err(ENOSPC);
        }
        let addr_size = usize::from(cmd.addr_size);
        if addr_size != addr_size_of(&cmd.addr) {
            return Err(EINVAL);
        }
        let join_state = match cmd.join_flags {
            MC_JOIN_FLAG_FULLMEMBER => JoinState::FULL_MEMBER,
            MC_JOIN_FLAG_SENDONLY_FULLMEMBER => JoinState::SEND_ONLY_FULL_MEMBER,
            _ => return Err(EINVAL),
        };
        let ctx = Context::lookup(self, cmd.id)?;
        Multicast::join(
            &self.device,
            &ctx,
            cmd.uid,
            &cmd.addr[..addr_size],
            join_state,
            |mc_id| write_struct(cmd.response, &CreateIdResp { id: mc_id }),
        )
    }

    fn leave_mcast(&self, p: UserPtr, out: usize) -> Result {
        if out < core::mem::size_of::<DestroyIdResp>() {
            return Err(ENOSPC);
        }
        let cmd: DestroyId = read_cmd(p)?;
        let events_reported = Multicast::leave(self, cmd.id)?;
        write_struct(cmd.response, &DestroyIdResp { events_reported })
    }

    fn migrate_id(self: &Arc<Self>, p: UserPtr) -> Result {
        let cmd: MigrateId = read_cmd(p)?;
        // The source file stays open (its release() cannot run) until the
        // command ends, as C's fdget() guarantees.
        let src = FileRef::<UcmaFile>::get(cmd.fd)?;
        let from: Arc<UcmaFile> = src.state().into();
        let ctx = Context::lookup(&from, cmd.id)?;
        let events_reported = ctx.migrate(&from, self)?;
        write_struct(cmd.response, &DestroyIdResp { events_reported })
    }

    fn write_cm_event(&self, p: UserPtr) -> Result {
        let cmd: WriteCmEvent = read_cmd(p)?;
        if cmd.event != EventType::USER.as_raw() && cmd.event != EventType::INTERNAL.as_raw() {
            return Err(EINVAL);
        }
        let ctx = Context::lookup(self, cmd.id)?;
        let mut arg = [0; 8];
        arg.copy_from_slice(&cmd.param[..8]);
        let ev = UserEvent {
            event: cmd.event,
            status: cmd.status,
            arg,
        };
        ctx.write_event(self, ev)
    }

    /// `poll()`: readable when an event is queued. Never writable, as in C.
    pub(crate) fn poll(&self, file: &File, table: PollTable<'_>) -> u32 {
        if !self.polled.load(Acquire) {
            self.first_poll();
        }
        table.register_wait(file, self.poll_queue());
        // Acquire: pairs with the guard's store; a wake-up after an event
        // queued later finds this poller registered.
        if self.state_mirror.load(Acquire) & QUEUED == 0 {
            0
        } else {
            kernel::bindings::POLLIN | kernel::bindings::POLLRDNORM
        }
    }

    /// The file's first `poll()`: makes the file's wait queue (the device's
    /// shared one if there is no memory for it) and marks the file polled,
    /// under the lock, before the registration (see `FileInner::to_wake`).
    /// `polled` then says it is done (Release: a poll that reads it with
    /// Acquire sees the queue chosen).
    fn first_poll(&self) {
        let queue = match PollCondVarBox::new(
            kernel::c_str!("UcmaFile::poll_wait"),
            kernel::static_lock_class!(),
        ) {
            Ok(own) => PollQueue::Own(own),
            Err(_) => PollQueue::Shared,
        };
        let mut inner = self.lock();
        // A concurrent first poll may have chosen one: `queue` is dropped
        // then (no one waits on it).
        self.poll_wait.populate(queue);
        inner.polled = true;
        self.polled.store(true, Release);
    }

    /// The queue `poll()` registers on and an event wakes: the file's own,
    /// or the device's shared one, also before the first poll chose (when
    /// no one waits on any).
    fn poll_queue(&self) -> &PollCondVar {
        match self.poll_wait.as_ref() {
            Some(PollQueue::Own(queue)) => queue,
            _ => &self.device.poll_shared,
        }
    }
}

/// Where a file's `poll()` waiters wait, chosen by its first poll.
enum PollQueue {
    /// The file's own queue.
    Own(PollCondVarBox),
    /// The device's shared queue ([`UcmaDevice::poll_shared`]): the first
    /// poll found no memory for one of the file's own. A poll must register
    /// on some queue: epoll registers once, in `EPOLL_CTL_ADD`, so a poll
    /// that registered nowhere would leave its entry asleep for good.
    Shared,
}

impl UcmaFile {
    /// `release()` of the file: its last reference is gone.
    pub(crate) fn release_file(state: Arc<Self>) {
        let _coverage = KcovHandle::of_current().section();
        state.release();
        // Inside the section: when this is the last reference (no context
        // holds one), the file's state is freed here.
        drop(state);
    }

    /// One `write()` of `len` bytes at `buf`: a command header and its
    /// payload. Returns `len` on success, as the C module does.
    pub(crate) fn write_command(
        state: ArcBorrow<'_, Self>,
        nonblocking: bool,
        buf: UserPtr,
        len: usize,
    ) -> Result<usize> {
        check_write_len(len)?;
        let hdr: [u8; CMD_HDR_SIZE] = user_input::read_user(buf)?;
        let mut hdr = CmdHeader::from_bytes(hdr);
        if hdr.cmd < Command::COUNT {
            // The table index stays in bounds under speculation too.
            hdr.cmd = index_nospec(hdr.cmd, Command::COUNT);
        }
        let req = Request::parse(len, hdr)?;
        let payload = buf.wrapping_byte_add(CMD_HDR_SIZE);
        Self::execute(state, nonblocking, req, payload)?;
        Ok(len)
    }

    /// `/proc/<pid>/fdinfo/<fd>`: the file's ids by state, its queued and
    /// delivered events, its multicast joins, and each listener's backlog
    /// (format: Documentation/usage.rst). O(listeners), under the file's
    /// lock: the counts are kept as the ids change.
    pub(crate) fn show_fdinfo(state: ArcBorrow<'_, Self>, m: &SeqFile) {
        let _coverage = KcovHandle::of_current().section();
        let inner = state.lock();
        seq_print!(m, "rdma_cm_ids:\t{}\n", inner.listed);
        // `listed` changes under the lock held here, with the counts of the
        // contexts it lists (see `IdCounts`).
        let listed = u64::try_from(inner.listed).unwrap_or(u64::MAX);
        for s in IdState::ALL {
            let n = state.counts.in_state(s, listed);
            seq_print!(m, "rdma_cm_ids_{}:\t{n}\n", s.name());
        }
        // The caps as loaded (0: none), and what they refused on this file.
        let (max_ids, max_events) = (
            state.device.limits.max_ids_per_file_param(),
            state.device.limits.max_events_per_file_param(),
        );
        seq_print!(m, "rdma_cm_ids_max:\t{max_ids}\n");
        seq_print!(m, "rdma_cm_ids_refused:\t{}\n", inner.ids_refused);
        seq_print!(m, "rdma_cm_events_queued:\t{}\n", inner.queued);
        seq_print!(
            m,
            "rdma_cm_events_delivered:\t{}\n",
            state.events_delivered.load(Relaxed)
        );
        seq_print!(m, "rdma_cm_events_max:\t{max_events}\n");
        seq_print!(m, "rdma_cm_events_refused:\t{}\n", inner.events_refused);
        seq_print!(m, "rdma_cm_mcast_joins:\t{}\n", state.counts.joins());
        for l in inner.listeners.iter() {
            if let Some((used, limit)) = l.backlog_use() {
                seq_print!(m, "rdma_cm_listener:\t{} backlog {used}/{limit}\n", l.id);
            }
        }
    }
}
