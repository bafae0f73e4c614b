// SPDX-License-Identifier: GPL-2.0

//! Rust abstraction over the in-kernel RDMA connection manager (`rdma_cm`).
//!
//! C header: [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h)
//!
//! The user implements [`CmHandler`] for the object an id's events go to,
//! creates ids with [`CmId::new`] (in a network namespace, as an in-kernel
//! user such as nvmet-rdma or rds does) and attaches them to such an object
//! (an [`Arc`]); the generic handler [`cm_event_handler`] hands every event
//! to it. A [`CmId`] owns its id: dropping it destroys the id.
//!
//! What only the userspace bridge (uCMA) needs lives in [`user`]: ids of
//! users (`rdma_create_user_id()`), their handler lock, IB service
//! resolution from its uAPI struct, and the uverbs images of QP attributes,
//! address handles and path records. This file and [`user`] import nothing
//! from the rest of the module but the bindings, and every `unsafe`
//! operation on rdma_cm objects lives in them.
//!
//! # Examples
//!
//! An in-kernel listener that refuses every connect request:
//!
//! ```ignore
//! // The handler object's address is tagged in the id's `context` word,
//! // which needs an alignment of at least 8.
//! struct Listener {
//!     requests: Atomic<u64>,
//! }
//!
//! impl CmHandler for Listener {
//!     type Join = ();
//!
//!     fn event(_this: ArcBorrow<'_, Self>, ev: &CmEvent<'_, Self>) {
//!         pr_info!("event {}\n", ev.kind().as_raw());
//!     }
//!
//!     fn connect_request<'a>(
//!         this: ArcBorrow<'_, Self>,
//!         req: ConnectRequest<'a, Self>,
//!         _ev: &CmEvent<'_, Self>,
//!     ) -> ConnectOutcome<'a> {
//!         this.requests.add(1, Relaxed);
//!         req.refuse(ENOMEM)
//!     }
//! }
//!
//! let id = CmId::<Listener>::new(Net::init(), PortSpace::TCP, QpType::RC)?;
//! let listener = Listener { requests: Atomic::new(0) };
//! id.attach(Arc::new(listener, GFP_KERNEL)?).map_err(|_| EBUSY)?;
//! id.bind_addr(&addr)?;
//! id.listen(16)?;
//! // Dropping `id` destroys it, once its running handler has returned.
//! ```
//!
//! The rules of the C API, as this abstraction relies on them:
//! - An id's event handler runs in process context, serialised per id by the
//!   id's handler mutex, which [`CmId::lock_handler`] takes too.
//! - `rdma_destroy_id()` cancels the id's work and waits for a running
//!   handler; afterwards no handler runs for that id. A handler must not
//!   destroy its own id.
//! - On `RDMA_CM_EVENT_CONNECT_REQUEST` the handler is given a *new* id whose
//!   `context` is still the listener's, under the new id's handler lock and
//!   the listening id's (for a wildcard listener, the per-device id's that
//!   `rdma_destroy_id()` of the listener destroys and so waits for). A
//!   non-zero return makes rdma_cm destroy the new id;
//!   `-ENOMEM` in particular makes ib_cm drop the request silently (the
//!   peer retries). So the abstraction, not the user, picks the return:
//!   non-zero only when no [`CmId`] owns the new id.
//! - Multicast events carry the join's `context` in `param.ud.private_data`;
//!   after `rdma_leave_multicast()` or `rdma_destroy_id()` has returned, no
//!   handler runs with it.
//! - `rdma_accept()` requires the id's handler lock, which an in-kernel C
//!   user holds by calling it from the id's handler. Here it is called
//!   through the guard of [`CmId::lock_handler`] (in [`user`]), outside any
//!   handler; a connect request's handler only refuses or keeps the new id
//!   ([`ConnectRequest`]), to be answered later.
//! - An id answers a connect once: the new id of a request with
//!   `rdma_accept()` or `rdma_reject()`, the active side after the peer's
//!   reply with its RTU (`rdma_accept()`) or `rdma_reject()`. rdma_cm does
//!   not enforce it, and what its providers do with another answer ranges
//!   from a stalled destroy to a use-after-free ([`ANSWERABLE`]): the
//!   abstraction keeps count in the id's `context` word, and answers under
//!   the id's handler lock ([`HandlerGuard`]).
//! - What takes an id's handler lock (`rdma_destroy_id()`, `rdma_connect()`,
//!   `rdma_lock_handler()`, `rdma_leave_multicast()`, which waits for the
//!   join's handler) deadlocks inside that id's own handler. Dropping a
//!   [`CmId`] or calling those of its methods from its own handler does;
//!   that is not undefined behaviour, and the abstraction does not prevent
//!   it (the one exception it handles: a connect request's new id, whose
//!   `CmId` may be dropped inside the request's handler).

use core::{
    cell::Cell,
    marker::PhantomData,
    ops::Deref,
    ptr::NonNull, //
};

use kernel::{
    alloc::Flags,
    bindings,
    error::{
        from_err_ptr,
        to_result, //
    },
    ffi::{
        c_int,
        c_ulong,
        c_void, //
    },
    prelude::*,
    sync::{
        atomic::{
            ordering::{
                Acquire,
                Full,
                Release, //
            },
            Atomic, //
        },
        Arc,
        ArcBorrow, //
    },
    types::Opaque,
};

use super::rdma_sys as sys;

pub mod user;

/// An `enum rdma_cm_event_type` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventType(u32);

impl EventType {
    /// `RDMA_CM_EVENT_ADDR_RESOLVED`.
    pub const ADDR_RESOLVED: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED);
    /// `RDMA_CM_EVENT_ADDR_ERROR`.
    pub const ADDR_ERROR: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR);
    /// `RDMA_CM_EVENT_ROUTE_RESOLVED`.
    pub const ROUTE_RESOLVED: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED);
    /// `RDMA_CM_EVENT_ROUTE_ERROR`.
    pub const ROUTE_ERROR: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR);
    /// `RDMA_CM_EVENT_CONNECT_RESPONSE`.
    pub const CONNECT_RESPONSE: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_RESPONSE);
    /// `RDMA_CM_EVENT_CONNECT_ERROR`.
    pub const CONNECT_ERROR: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR);
    /// `RDMA_CM_EVENT_UNREACHABLE`.
    pub const UNREACHABLE: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE);
    /// `RDMA_CM_EVENT_REJECTED`.
    pub const REJECTED: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED);
    /// `RDMA_CM_EVENT_ESTABLISHED`.
    pub const ESTABLISHED: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED);
    /// `RDMA_CM_EVENT_DISCONNECTED`.
    pub const DISCONNECTED: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED);
    /// `RDMA_CM_EVENT_CONNECT_REQUEST`.
    pub const CONNECT_REQUEST: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST);
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL`.
    pub const DEVICE_REMOVAL: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL);
    /// `RDMA_CM_EVENT_MULTICAST_JOIN`.
    pub const MULTICAST_JOIN: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_MULTICAST_JOIN);
    /// `RDMA_CM_EVENT_MULTICAST_ERROR`.
    pub const MULTICAST_ERROR: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_MULTICAST_ERROR);
    /// `RDMA_CM_EVENT_ADDRINFO_RESOLVED`.
    pub const ADDRINFO_RESOLVED: Self =
        Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_ADDRINFO_RESOLVED);
    /// `RDMA_CM_EVENT_USER`.
    pub const USER: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_USER);
    /// `RDMA_CM_EVENT_INTERNAL`.
    pub const INTERNAL: Self = Self(sys::rdma_cm_event_type_RDMA_CM_EVENT_INTERNAL);

    /// The C value.
    pub const fn as_raw(self) -> u32 {
        self.0
    }
}

/// An `enum ib_qp_type` value, as an id carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpType(u32);

impl QpType {
    /// The type numbered `raw`, unchecked, as C passes the user's.
    pub const fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    /// `IB_QPT_RC`.
    pub const RC: Self = Self(sys::ib_qp_type_IB_QPT_RC);
    /// `IB_QPT_UD`.
    pub const UD: Self = Self(sys::ib_qp_type_IB_QPT_UD);
}

/// An `enum rdma_ucm_port_space` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortSpace(u32);

impl PortSpace {
    /// `RDMA_PS_IPOIB`.
    pub const IPOIB: Self = Self(sys::rdma_ucm_port_space_RDMA_PS_IPOIB);
    /// `RDMA_PS_IB`.
    pub const IB: Self = Self(sys::rdma_ucm_port_space_RDMA_PS_IB);
    /// `RDMA_PS_TCP`.
    pub const TCP: Self = Self(sys::rdma_ucm_port_space_RDMA_PS_TCP);
    /// `RDMA_PS_UDP`.
    pub const UDP: Self = Self(sys::rdma_ucm_port_space_RDMA_PS_UDP);

    /// The port space numbered `raw`, if it is one.
    pub fn from_raw(raw: u32) -> Option<Self> {
        [Self::IPOIB, Self::IB, Self::TCP, Self::UDP]
            .into_iter()
            .find(|ps| ps.0 == raw)
    }
}

/// An `enum ib_cm_rej_reason` value, as `rdma_reject()` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RejectReason(u8);

impl RejectReason {
    /// `IB_CM_REJ_CONSUMER_DEFINED`.
    pub const CONSUMER_DEFINED: Self = Self::new(sys::ib_cm_rej_reason_IB_CM_REJ_CONSUMER_DEFINED);
    /// `IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED`.
    pub const VENDOR_OPTION_NOT_SUPPORTED: Self =
        Self::new(sys::ib_cm_rej_reason_IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED);

    const fn new(raw: u32) -> Self {
        assert!(raw <= u8::MAX as u32);
        // CAST: checked above, at compile time.
        Self(raw as u8)
    }

    /// The C value.
    pub const fn as_raw(self) -> u8 {
        self.0
    }
}

/// The join state of a multicast join: a bit of `enum ib_sa_mc_join_states`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinState(u8);

impl JoinState {
    /// `BIT(FULLMEMBER_JOIN)`.
    pub const FULL_MEMBER: Self = Self(1 << sys::ib_sa_mc_join_states_FULLMEMBER_JOIN);
    /// `BIT(SENDONLY_FULLMEMBER_JOIN)`.
    pub const SEND_ONLY_FULL_MEMBER: Self =
        Self(1 << sys::ib_sa_mc_join_states_SENDONLY_FULLMEMBER_JOIN);
}

/// An `enum ib_qp_state` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpState(u32);

impl QpState {
    /// The state numbered `raw`, if it is one (`IB_QPS_RESET` to `IB_QPS_ERR`).
    pub fn from_raw(raw: u32) -> Option<Self> {
        (raw <= sys::ib_qp_state_IB_QPS_ERR).then_some(Self(raw))
    }
}

/// A socket address in a `struct __kernel_sockaddr_storage`, as rdma_cm
/// takes it: the address's own bytes, zero-padded.
#[derive(Clone, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct SockAddr([u8; SockAddr::SIZE]);

const _: () = {
    assert!(core::mem::align_of::<SockAddr>() >= core::mem::align_of::<bindings::sockaddr>());
    assert!(
        core::mem::align_of::<SockAddr>()
            >= core::mem::align_of::<bindings::__kernel_sockaddr_storage>()
    );
};

impl SockAddr {
    /// Size of the storage.
    pub const SIZE: usize = core::mem::size_of::<bindings::__kernel_sockaddr_storage>();

    /// An address made of `bytes` (at most [`Self::SIZE`] are used), zero-padded.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let mut ss = SockAddr([0; Self::SIZE]);
        let n = bytes.len().min(Self::SIZE);
        ss.0[..n].copy_from_slice(&bytes[..n]);
        ss
    }

    /// The storage's bytes.
    pub fn as_bytes(&self) -> &[u8; Self::SIZE] {
        &self.0
    }

    /// `rdma_addr_size()`: how many bytes of the storage rdma_cm reads and
    /// compares (by the family: 0 for one it does not know).
    pub fn rdma_size(&self) -> usize {
        let mut a = self.clone();
        // The size is read from the family; the address is only read.
        // SAFETY: `a` is a valid sockaddr_storage.
        let n = unsafe { sys::rdma_addr_size(a.as_mut_ptr()) };
        usize::try_from(n).unwrap_or(0).min(Self::SIZE)
    }

    /// The address as rdma_cm sees it: its first [`Self::rdma_size`] bytes,
    /// the rest zeroed.
    fn rdma_normalized(&self) -> Self {
        Self::from_bytes(&self.0[..self.rdma_size()])
    }

    /// The address family.
    pub fn family(&self) -> u16 {
        u16::from_ne_bytes([self.0[0], self.0[1]])
    }

    fn as_mut_ptr(&mut self) -> *mut bindings::sockaddr {
        self.0.as_mut_ptr().cast()
    }
}

/// A GID, as its 16 bytes.
pub type Gid = [u8; 16];

/// A path record in the 64-byte wire format.
pub type PathRecWire = [u8; 64];

/// Size of a `struct sa_service_rec`, an IB service record as rdma_cm
/// keeps it ([`RdmaCmId::read_service_recs`]).
pub const SERVICE_REC_SIZE: usize = core::mem::size_of::<sys::sa_service_rec>();

/// The object an id's events are delivered to.
///
/// `'static`, like its joins: rdma_cm holds the object for as long as the
/// id lives, and a [`CmId`] that is leaked (`mem::forget`, a reference
/// cycle; both safe) keeps its id alive, and its events coming, forever.
pub trait CmHandler: Send + Sync + Sized + 'static {
    /// What a multicast join of the id is known by; its events carry it.
    type Join: Send + Sync + 'static;

    /// An event of an id whose object is `this` (every kind but a connect
    /// request). Runs under the id's handler lock, in process context.
    fn event(this: ArcBorrow<'_, Self>, ev: &CmEvent<'_, Self>);

    /// A connect request on the listener `this`; the new id is `req`'s.
    /// Runs under the new id's handler lock (and the listening id's: see
    /// this file's header). The
    /// outcome says whether the id was taken into an owner or refused; see
    /// [`ConnectRequest`].
    fn connect_request<'a>(
        this: ArcBorrow<'_, Self>,
        req: ConnectRequest<'a, Self>,
        ev: &CmEvent<'_, Self>,
    ) -> ConnectOutcome<'a>;

    /// Called first in the event handler of an id whose object is `this`
    /// (for a connect request: the listener's), before [`Self::event`] or
    /// [`Self::connect_request`]; what it returns is dropped when the
    /// handler returns. For what spans the whole handler (a coverage
    /// section, for instance). Runs where those two run.
    fn enter_handler(this: ArcBorrow<'_, Self>) -> impl Sized {
        let _ = this;
    }
}

/// An `rdma_cm_id`: memory that rdma_cm writes while its user reads it (its
/// work items resolve addresses and routes, unlocked), so it is only ever
/// read field by field through raw pointers, never through a reference to
/// the whole struct, and with volatile loads (C's `READ_ONCE()`), which a
/// concurrent write may tear but not make undefined. Such a read may see a
/// field mid-update (as C's `ucma.c` reads them, unlocked); nothing read is
/// followed as a pointer but the device, set when the id is bound and kept
/// until it is destroyed, and the path records, allocated and freed only by
/// calls that the id's user makes.
///
/// # Invariants
///
/// A `&RdmaCmId` points to a live `rdma_cm_id` for the reference's lifetime.
#[repr(transparent)]
pub struct RdmaCmId(Opaque<sys::rdma_cm_id>);

/// Which of an id's two addresses.
#[derive(Clone, Copy)]
pub enum Side {
    /// `route.addr.src_addr`.
    Src,
    /// `route.addr.dst_addr`.
    Dst,
}

/// How a bound id's port reaches its peer, for QUERY_ROUTE.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PortProtocol {
    /// An InfiniBand port with a subnet administrator.
    IbSa,
    /// RoCE.
    Roce,
    /// iWARP.
    Iwarp,
    /// Anything else.
    Other,
}

/// Device facts of a bound id.
pub struct DeviceInfo {
    /// Node GUID, as stored (network byte order).
    pub node_guid: u64,
    /// `ib_device->index`.
    pub index: u32,
    /// Port number.
    pub port_num: u32,
    /// P_Key, network byte order.
    pub pkey: u16,
}

impl RdmaCmId {
    /// # Safety
    ///
    /// `ptr` must point to a live `rdma_cm_id` for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut sys::rdma_cm_id) -> &'a Self {
        // SAFETY: `RdmaCmId` is a transparent `Opaque<rdma_cm_id>`, and the
        // id is live for `'a`, as guaranteed by the caller.
        unsafe { &*ptr.cast::<Self>() }
    }

    fn raw(&self) -> *mut sys::rdma_cm_id {
        self.0.get()
    }

    /// The id's device; null while unbound.
    fn device(&self) -> *mut sys::ib_device {
        // One field is read, with a volatile load (see the type's comment).
        // SAFETY: by the invariant the id is live.
        unsafe { (&raw const (*self.raw()).device).read_volatile() }
    }

    /// The id's port number.
    fn port_num(&self) -> u32 {
        // SAFETY: by the invariant the id is live (a volatile load, as in `device`).
        unsafe { (&raw const (*self.raw()).port_num).read_volatile() }
    }

    /// Whether the id is bound to a device.
    pub fn has_device(&self) -> bool {
        !self.device().is_null()
    }

    /// The id's QP type.
    pub fn qp_type(&self) -> QpType {
        // SAFETY: by the invariant the id is live (a volatile load, as in `device`).
        QpType(unsafe { (&raw const (*self.raw()).qp_type).read_volatile() })
    }

    fn addr_ptr(&self, side: Side) -> *mut bindings::__kernel_sockaddr_storage {
        let id = self.raw();
        // SAFETY: the id is live; the field's address is taken without
        // making a reference.
        unsafe {
            match side {
                Side::Src => (&raw mut (*id).route.addr.src_addr).cast(),
                Side::Dst => (&raw mut (*id).route.addr.dst_addr).cast(),
            }
        }
    }

    /// The family of one of the id's addresses.
    pub fn family(&self, side: Side) -> u16 {
        let mut fam = [0u8; 2];
        self.read_addr(side, &mut fam);
        u16::from_ne_bytes(fam)
    }

    /// Copies the first `out.len()` bytes (at most the storage's) of one of
    /// the id's addresses.
    pub fn read_addr(&self, side: Side, out: &mut [u8]) {
        let src = self.addr_ptr(side).cast::<u8>();
        for (i, b) in out.iter_mut().take(SockAddr::SIZE).enumerate() {
            // The address is a whole `__kernel_sockaddr_storage`, `SIZE`
            // bytes; a volatile load, as in `device`.
            // SAFETY: the id is live and `i` is below `SIZE`.
            *b = unsafe { src.add(i).read_volatile() };
        }
    }

    /// A copy of one of the id's addresses.
    pub fn addr(&self, side: Side) -> SockAddr {
        let mut ss = SockAddr([0; SockAddr::SIZE]);
        self.read_addr(side, &mut ss.0);
        ss
    }

    /// A copy of the id's device address.
    fn dev_addr(&self) -> sys::rdma_dev_addr {
        // Copied through a raw pointer, with a volatile load, as in `device`.
        // SAFETY: the id is live.
        unsafe { (&raw const (*self.raw()).route.addr.dev_addr).read_volatile() }
    }

    /// `route.num_pri_alt_paths`, as stored.
    pub fn num_pri_alt_paths(&self) -> i32 {
        // SAFETY: by the invariant the id is live (a volatile load, as in `device`).
        unsafe { (&raw const (*self.raw()).route.num_pri_alt_paths).read_volatile() }
    }

    /// The number of path records the id has, at most 2
    /// (`RDMA_PRIMARY_PATH_MAX_REC_NUM`).
    pub fn num_paths(&self) -> usize {
        usize::try_from(self.num_pri_alt_paths())
            .unwrap_or(0)
            .min(2)
    }

    /// A copy of path record `i`, which must be below [`Self::num_paths`].
    fn path_rec(&self, i: usize) -> Option<sys::sa_path_rec> {
        if i >= self.num_paths() {
            return None;
        }
        // SAFETY: the id is live; the pointer is read once, volatile
        // (rdma_cm writes it unlocked), as in `device`.
        let recs = unsafe { (&raw const (*self.raw()).route.path_rec).read_volatile() };
        // rdma_cm's error paths clear the pointer without the count.
        if recs.is_null() {
            return None;
        }
        // The record is copied with a volatile load (rdma_cm's SA callback
        // writes it unlocked).
        // SAFETY: a non-null `path_rec` holds `num_pri_alt_paths` records,
        // `i` is below.
        Some(unsafe { recs.add(i).read_volatile() })
    }

    /// Path record `i` in wire format (an OPA record converted to IB first).
    pub fn path_rec_wire(&self, i: usize) -> Option<PathRecWire> {
        let mut rec = self.path_rec(i)?;
        if rec.rec_type == sys::sa_path_rec_type_SA_PATH_REC_TYPE_OPA {
            let mut ib: sys::sa_path_rec = Default::default();
            // SAFETY: both records are valid.
            unsafe { sys::sa_convert_path_opa_to_ib(&mut ib, &mut rec) };
            rec = ib;
        }
        let mut wire = [0u8; 64];
        // SAFETY: `rec` is valid; `wire` has room for the 64-byte wire format.
        unsafe { sys::ib_sa_pack_path(&mut rec, wire.as_mut_ptr().cast()) };
        Some(wire)
    }

    /// Device facts for QUERY replies; `None` without a device.
    pub fn device_info(&self) -> Option<DeviceInfo> {
        let device = self.device();
        if device.is_null() {
            return None;
        }
        // SAFETY: `device` is a live ib_device while the id is bound to it.
        let (node_guid, index) = unsafe {
            (
                sys::ib_device_node_guid(device),
                sys::ib_device_index(device),
            )
        };
        Some(DeviceInfo {
            node_guid,
            index,
            port_num: self.port_num(),
            pkey: self.dev_addr_pkey(),
        })
    }

    /// `ib_addr_get_pkey()` of the id's device address, network byte order.
    pub fn dev_addr_pkey(&self) -> u16 {
        let mut dev_addr = self.dev_addr();
        // SAFETY: `dev_addr` is a valid copy of the id's.
        unsafe { sys::ib_addr_get_pkey(&mut dev_addr) }.to_be()
    }

    /// `rdma_addr_get_dgid()` and `rdma_addr_get_sgid()` of the id's device
    /// address, as `(destination, source)`.
    pub fn dev_addr_gids(&self) -> (Gid, Gid) {
        let mut dev_addr = self.dev_addr();
        let mut dgid: sys::ib_gid = Default::default();
        let mut sgid: sys::ib_gid = Default::default();
        // SAFETY: `dev_addr` is a valid copy; the GIDs are valid locals.
        unsafe {
            sys::rdma_addr_get_dgid(&mut dev_addr, &mut dgid);
            sys::rdma_addr_get_sgid(&mut dev_addr, &mut sgid);
        }
        (gid_bytes(&dgid), gid_bytes(&sgid))
    }

    /// `rdma_read_gids()`: `(source, destination)`.
    pub fn read_gids(&self) -> (Gid, Gid) {
        let mut sgid: sys::ib_gid = Default::default();
        let mut dgid: sys::ib_gid = Default::default();
        // SAFETY: the id is live; both GIDs are valid for writes.
        unsafe { sys::rdma_read_gids(self.raw(), &mut sgid, &mut dgid) };
        (gid_bytes(&sgid), gid_bytes(&dgid))
    }

    /// `rdma_get_service_id()` of one of the id's addresses.
    pub fn service_id(&self, side: Side) -> u64 {
        // SAFETY: the id is live; the address is its own, passed as a raw
        // pointer (rdma_get_service_id only reads it).
        unsafe { sys::rdma_get_service_id(self.raw(), self.addr_ptr(side).cast()) }
    }

    /// How the bound id's port reaches its peer; `None` without a device.
    pub fn port_protocol(&self) -> Option<PortProtocol> {
        let (device, port) = (self.device(), self.port_num());
        if device.is_null() {
            return None;
        }
        // SAFETY: the device is live while the id is bound to it.
        let p = unsafe {
            if sys::rdma_cap_ib_sa(device, port) {
                PortProtocol::IbSa
            } else if sys::rdma_protocol_roce(device, port) {
                PortProtocol::Roce
            } else if sys::rdma_protocol_iwarp(device, port) {
                PortProtocol::Iwarp
            } else {
                PortProtocol::Other
            }
        };
        Some(p)
    }

    /// Copies the resolved service records into `out`, as many whole ones
    /// as fit; returns how many the id has, or `None` when none was
    /// resolved. (7.3's `cma_query_ib_service_handler()` publishes the
    /// records' pointer and count before it copies them in: a read racing
    /// a resolution on an InfiniBand port may copy bytes not yet written,
    /// as C's QUERY does. Soft-RoCE and iWARP ids have no records.)
    pub fn read_service_recs(&self, out: &mut [u8]) -> Option<u32> {
        // The copy, which may race the SA callback's (see above), is made by
        // the helper, in C; it copies at most `out.len() / SERVICE_REC_SIZE`.
        // SAFETY: the id is live; `out` has room for that many records.
        let num = unsafe {
            sys::rdma_copy_service_recs(
                self.raw(),
                out.as_mut_ptr().cast(),
                out.len() / SERVICE_REC_SIZE,
            )
        };
        u32::try_from(num).ok()
    }
}

/// `rdma_ip2gid()`.
pub fn ip_to_gid(addr: &SockAddr) -> Gid {
    let mut a = addr.clone();
    let mut gid: sys::ib_gid = Default::default();
    // SAFETY: `a` is a valid sockaddr_storage copy; `gid` is valid.
    unsafe { sys::rdma_ip2gid(a.as_mut_ptr(), &mut gid) };
    gid_bytes(&gid)
}

fn gid_bytes(g: &sys::ib_gid) -> Gid {
    const _: () = assert!(core::mem::size_of::<sys::ib_gid>() == core::mem::size_of::<Gid>());
    // SAFETY: `union ib_gid` is 16 plain bytes (its `raw` branch; checked
    // above), readable through `g`, and `Gid` has no alignment above 1.
    // (Read through a cast: bindgen makes the union a Rust union or a
    // struct of `__BindgenUnionField`s depending on what else it binds.)
    unsafe { core::ptr::from_ref(g).cast::<Gid>().read() }
}

/// Connection parameters: for connect and accept, and as an event reports
/// them.
pub struct ConnParams<'a> {
    /// Private data (at most 255 bytes are sent).
    pub private_data: &'a [u8],
    /// QP number.
    pub qp_num: u32,
    /// Q_Key.
    pub qkey: u32,
    /// Whether the QP uses an SRQ.
    pub srq: u8,
    /// Responder resources.
    pub responder_resources: u8,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Flow control.
    pub flow_control: u8,
    /// Retry count.
    pub retry_count: u8,
    /// RNR retry count.
    pub rnr_retry_count: u8,
}

impl ConnParams<'_> {
    /// The C struct; it points into `self.private_data`.
    fn to_c(&self) -> sys::rdma_conn_param {
        sys::rdma_conn_param {
            private_data: self.private_data.as_ptr().cast(),
            private_data_len: u8::try_from(self.private_data.len()).unwrap_or(u8::MAX),
            responder_resources: self.responder_resources,
            initiator_depth: self.initiator_depth,
            flow_control: self.flow_control,
            retry_count: self.retry_count,
            rnr_retry_count: self.rnr_retry_count,
            srq: self.srq,
            qp_num: self.qp_num,
            qkey: self.qkey,
        }
    }
}

/// Enhanced connection establishment data.
#[derive(Clone, Copy, Default)]
pub struct Ece {
    /// Vendor id.
    pub vendor_id: u32,
    /// Attribute modifier.
    pub attr_mod: u32,
}

impl Ece {
    fn to_c(self) -> sys::rdma_ucm_ece {
        sys::rdma_ucm_ece {
            vendor_id: self.vendor_id,
            attr_mod: self.attr_mod,
        }
    }
}

/// A multicast join of a [`CmId`], kept alive by the id while joined.
struct Joined<J> {
    addr: SockAddr,
    join: Arc<J>,
}

/// The multicast joins of a [`CmId`], each with its group address.
pub struct Joins<J> {
    /// Boxed, made by the first join: most ids join nothing, and carry one
    /// word for it rather than a vector's three.
    list: Option<KBox<KVec<Joined<J>>>>,
}

impl<J> Default for Joins<J> {
    fn default() -> Self {
        Joins { list: None }
    }
}

impl<J> Joins<J> {
    /// Each join and its group address, in the order they were made.
    pub fn iter(&self) -> impl Iterator<Item = (&SockAddr, &Arc<J>)> {
        self.list
            .iter()
            .flat_map(|list| list.iter())
            .map(|j| (&j.addr, &j.join))
    }

    /// Whether no join was ever made (none kept and none left).
    pub fn never_joined(&self) -> bool {
        self.list.is_none()
    }

    /// The joins, without their addresses.
    pub fn into_joins(self) -> impl Iterator<Item = Arc<J>> {
        self.list
            .into_iter()
            .flat_map(|list| KBox::into_inner(list).into_iter())
            .map(|j| j.join)
    }

    /// Makes the vector if there is none yet, with room for one more join.
    fn room_for_one(&mut self, gfp: Flags) -> Result {
        let list = match &mut self.list {
            Some(list) => list,
            none => none.insert(KBox::new(KVec::new(), gfp)?),
        };
        list.reserve(1, gfp)?;
        Ok(())
    }
}

/// What an id's `context` word holds. This file accesses the word only
/// atomically. rdma_cm itself reads the word of a listening id (to copy it
/// into a connect request's new id): the word of a used id changes only
/// while it is a connect request's new id, which listens to nothing then,
/// or by [`ANSWERABLE`], set and cleared only on ids that rdma_cm has in
/// `RDMA_CM_CONNECT`, from which no id goes back to listening (and a copy
/// with the bit would be harmless: decoding masks it, and the new id's
/// word is replaced before it is read).
///
/// - null: no handler object yet; events are ignored.
/// - an `Arc<H>` pointer: the handler object; the id owns that reference.
/// - an `Arc<H>` pointer, or null, with bit 0 set ([`PENDING`]): the new
///   id of a connect request, owned by a [`CmId`] while the request's
///   handler still runs. The handler's return makes it the plain word
///   (rdma_cm keeps the id), or sees [`REFUSED`].
/// - [`REFUSED`]: the [`CmId`] of such a new id was dropped before the
///   request's handler returned; the handler returns an error and rdma_cm
///   destroys the id.
///
/// A null or `Arc<H>` word may also carry [`ANSWERABLE`].
///
/// An `Arc<H>` pointer points at the `H`, aligned to `align_of::<H>()`,
/// which is at least 8 ([`word_of`] checks it at build time), so none of
/// the tags is one.
const PENDING: usize = 1;
/// See [`PENDING`].
const REFUSED: usize = 2;
/// The private data an InfiniBand REJ carries (`IB_CM_REJ_PRIVATE_DATA_SIZE`,
/// the IBTA's 148 bytes).
const IB_REJ_PRIVATE_DATA_MAX: usize = 148;
/// The private data a SIDR reply carries
/// (`IB_CM_SIDR_REP_PRIVATE_DATA_SIZE`, 136 bytes).
const IB_SIDR_REP_PRIVATE_DATA_MAX: usize = 136;

/// The id may answer a connect once ([`HandlerGuard::accept`],
/// [`HandlerGuard::reject`]): set when a connect request's new id is kept
/// (the passive side) and, before the event is delivered, when rdma_cm
/// reports `RDMA_CM_EVENT_CONNECT_RESPONSE` (the peer's reply to the
/// active side); the answer clears it. Without it rdma_cm has nothing to
/// answer, and C's attempt leaves the connection half torn down: ib_cm
/// resets a connecting id to idle with its REQ still posted (the destroy
/// then waits out the REQ's retries), iw_cm stops a connecting id's destroy
/// from waiting for the MPA reply (the destroy then hits `BUG()` in
/// `destroy_cm_id()`), and a second answer on iWARP, before iw_cm's
/// ESTABLISHED work, reaches siw, which drops its endpoint's reference
/// again (a use-after-free).
const ANSWERABLE: usize = 4;

/// `handler` as a `context` word that owns the reference.
fn word_of<H>(handler: Arc<H>) -> *mut c_void {
    const { assert!(core::mem::align_of::<H>() >= 8) };
    Arc::into_raw(handler).cast_mut().cast::<c_void>()
}

/// A decoded `context` word.
enum Word<H> {
    Unattached,
    Attached(*const H),
    Pending(*const H),
    Refused,
}

impl<H> Word<H> {
    fn decode(raw: *mut c_void) -> Self {
        let bits = raw as usize & !ANSWERABLE;
        if bits == REFUSED {
            Word::Refused
        } else if bits & PENDING != 0 {
            Word::Pending((bits & !PENDING) as *const H)
        } else if bits == 0 {
            Word::Unattached
        } else {
            // CAST: the `Arc<H>` pointer without the tag; see `ANSWERABLE`.
            Word::Attached(bits as *const H)
        }
    }
}

/// Sets [`ANSWERABLE`] on a null or `Arc<H>` word (not on a pending or
/// refused one).
fn mark_answerable<H>(word: &Atomic<*mut c_void>) {
    let mut cur = word.load(Acquire);
    while let Word::Attached(_) | Word::Unattached = Word::<H>::decode(cur) {
        // CAST: the same word with the tag; see `ANSWERABLE`.
        let marked = (cur as usize | ANSWERABLE) as *mut c_void;
        match word.cmpxchg(cur, marked, Full) {
            Ok(_) => return,
            Err(now) => cur = now,
        }
    }
}

/// Clears [`ANSWERABLE`]: whether it was set.
fn take_answer(word: &Atomic<*mut c_void>) -> bool {
    let mut cur = word.load(Acquire);
    while cur as usize & ANSWERABLE != 0 {
        // CAST: the same word without the tag; see `ANSWERABLE`.
        let cleared = (cur as usize & !ANSWERABLE) as *mut c_void;
        match word.cmpxchg(cur, cleared, Full) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
    false
}

/// The `context` word of the live id `id`, as an atomic.
///
/// # Safety
///
/// `id` points to a live `rdma_cm_id` for `'a`, made with
/// `cm_event_handler` as handler (so that its word is accessed as
/// [`PENDING`] describes: never written by anyone while rdma_cm reads it).
unsafe fn context_word<'a>(id: *mut sys::rdma_cm_id) -> &'a Atomic<*mut c_void> {
    // SAFETY: the field is valid and aligned for `'a`; every concurrent
    // access to it is one of this file's atomic ones, as guaranteed by the
    // caller.
    unsafe { Atomic::from_ptr(&raw mut (*id).context) }
}

/// A network namespace (`struct net`), borrowed: an id created in it takes a
/// reference of its own, which it keeps until it is destroyed.
///
/// # Invariants
///
/// A `&Net` points to a live `struct net` for the reference's lifetime.
#[repr(transparent)]
pub struct Net(Opaque<bindings::net>);

impl Net {
    /// The initial network namespace, which lives as long as the kernel.
    // Unused by ucma_rs (dead code out of tree), the kernel crate's API in a tree.
    #[allow(
        dead_code,
        reason = "for in-kernel users; ucma_rs creates ids of users"
    )]
    pub fn init() -> &'static Net {
        // SAFETY: `init_net` is a static, live for the kernel's lifetime;
        // `Net` is a transparent `Opaque<net>`, which may alias what C writes.
        unsafe { &*(&raw const bindings::init_net).cast::<Net>() }
    }

    /// Borrows a live network namespace.
    ///
    /// # Safety
    ///
    /// `ptr` points to a `struct net` that stays live for `'a` (its caller
    /// holds a reference to it, or it is the caller's own namespace).
    // Unused by ucma_rs (dead code out of tree), the kernel crate's API in a tree.
    #[allow(
        dead_code,
        reason = "for in-kernel users; ucma_rs creates ids of users"
    )]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::net) -> &'a Net {
        // SAFETY: live for `'a`, as guaranteed by the caller; `Net` is a
        // transparent `Opaque<net>`.
        unsafe { &*ptr.cast::<Net>() }
    }

    fn as_ptr(&self) -> *mut bindings::net {
        self.0.get()
    }
}

/// An rdma_cm id whose events go to an `H`: it owns the id, and destroys it
/// when dropped (or by [`CmId::destroy`]).
///
/// # Invariants
///
/// `ptr` is a live `rdma_cm_id`, made by `rdma_create_id()`,
/// `rdma_create_user_id()` or by rdma_cm for a connect request, with
/// `cm_event_handler::<H>` as handler,
/// that nothing but this `CmId` destroys. Its `context` word (see
/// [`PENDING`]) is null or an `Arc<H>` this `CmId` owns a reference of
/// (either perhaps tagged [`ANSWERABLE`]), or, while the connect request
/// that made the id is handled, one of those tagged [`PENDING`]; never
/// [`REFUSED`]. Every join in `joins` was given
/// to `rdma_join_multicast()` as the context of its address and not left;
/// `joins` owns a reference to each.
pub struct CmId<H: CmHandler> {
    ptr: NonNull<sys::rdma_cm_id>,
    joins: Joins<H::Join>,
    /// Whether the id was given to rdma_cm for anything (a connect
    /// request's new id always was): from then on rdma_cm may read its
    /// `context` word, and [`CmId::attach`] refuses.
    used: Cell<bool>,
    /// Whether the id has its handler object from [`CmId::attach`], or is
    /// a connect request's new id, which gets one through [`PendingAttach`]
    /// or none (refused): either way `attach` is not for it.
    attached: Cell<bool>,
    _handler: PhantomData<Arc<H>>,
}

// SAFETY: rdma_cm ids may be used and destroyed from any process context;
// the `Arc`s it owns are `Send` because `H` and `H::Join` are `Send + Sync`.
// `CmId` is not `Sync`: its user serialises the calls (it keeps the id
// behind a lock).
unsafe impl<H: CmHandler> Send for CmId<H> {}

impl<H: CmHandler> Drop for CmId<H> {
    fn drop(&mut self) {
        let (handler, joins) = self.close();
        drop(handler);
        drop(joins);
    }
}

impl<H: CmHandler> Deref for CmId<H> {
    type Target = RdmaCmId;

    fn deref(&self) -> &RdmaCmId {
        // SAFETY: by the invariant the id is live while `self` is.
        unsafe { RdmaCmId::from_raw(self.ptr.as_ptr()) }
    }
}

/// A timeout in milliseconds as rdma_cm takes it.
fn to_ulong(ms: u32) -> c_ulong {
    c_ulong::try_from(ms).unwrap_or(c_ulong::MAX)
}

impl<H: CmHandler> CmId<H> {
    /// `rdma_create_id()`: a new kernel id in the network namespace `net`,
    /// without a handler object: its events are ignored until
    /// [`CmId::attach`] gives it one (an id is quiet until it is used).
    // Unused by ucma_rs (dead code out of tree), the kernel crate's API in a tree.
    #[allow(
        dead_code,
        reason = "for in-kernel users; ucma_rs creates ids of users"
    )]
    pub fn new(net: &Net, ps: PortSpace, qp_type: QpType) -> Result<Self> {
        // SAFETY: `net` is live for the call (the id takes its own
        // reference); the handler is a valid `rdma_cm_event_handler`; a
        // null context is allowed and handled by it.
        let raw = unsafe {
            sys::rdma_create_id(
                net.as_ptr(),
                Some(cm_event_handler::<H>),
                core::ptr::null_mut(),
                ps.0,
                qp_type.0,
            )
        };
        // SAFETY: `raw` is what rdma_create_id() returned for our handler
        // and a null context.
        unsafe { Self::from_created(raw) }
    }

    /// Takes ownership of a new id.
    ///
    /// # Safety
    ///
    /// `raw` is an error pointer, or an id just created (by
    /// `rdma_create_id()` or `rdma_create_user_id()`) with
    /// `cm_event_handler::<H>` as handler and a null context, given to
    /// rdma_cm for nothing yet and owned by nothing else.
    unsafe fn from_created(raw: *mut sys::rdma_cm_id) -> Result<Self> {
        let ptr = NonNull::new(from_err_ptr(raw)?).ok_or(ENOMEM)?;
        // INVARIANT: created with our handler and a null context, no joins;
        // only this `CmId` destroys it, as guaranteed by the caller.
        Ok(CmId {
            ptr,
            joins: Joins::default(),
            used: Cell::new(false),
            attached: Cell::new(false),
            _handler: PhantomData,
        })
    }

    fn word(&self) -> &Atomic<*mut c_void> {
        // SAFETY: by the invariant the id is live while `self` is, with our
        // handler.
        unsafe { context_word(self.ptr.as_ptr()) }
    }

    /// The id, for a call that hands it to rdma_cm.
    fn used_raw(&self) -> *mut sys::rdma_cm_id {
        self.used.set(true);
        self.raw()
    }

    /// Whether the id has its handler object from [`Self::attach`], or is
    /// the new id of a connect request (which gets one through
    /// [`PendingAttach`], or none): for a caller that attaches lazily,
    /// before the id's first use, without taking a reference each time to
    /// be refused.
    #[inline]
    pub fn is_attached(&self) -> bool {
        self.attached.get()
    }

    /// Makes `handler` the object the id's events are delivered to; the id
    /// keeps that reference until it is destroyed. Only before the id is
    /// used (before any other call on it; a connect request's new id gets
    /// its object through [`PendingAttach`]), when nothing else reads its
    /// `context`: `Err(handler)` after that, or if it has one already.
    ///
    /// The id keeps the object alive: an object that owns its `CmId` is
    /// freed only once the id is destroyed ([`CmId::destroy`], or the
    /// `CmId` taken out of it and dropped).
    pub fn attach(&self, handler: Arc<H>) -> Result<(), Arc<H>> {
        if self.used.get() {
            return Err(handler);
        }
        let raw = word_of(handler);
        // INVARIANT: an unused id's word is null until set here, once.
        match self.word().cmpxchg(core::ptr::null_mut(), raw, Full) {
            Ok(_) => {
                self.attached.set(true);
                Ok(())
            }
            // SAFETY: `raw` came from `Arc::into_raw` above and was not stored.
            Err(_) => Err(unsafe { Arc::from_raw(raw.cast_const().cast()) }),
        }
    }

    /// Destroys the id (`rdma_destroy_id()`: afterwards no handler runs for
    /// it and its groups are left), unless it is the new id of a connect
    /// request whose handler still runs: then that handler's return makes
    /// rdma_cm destroy it. Returns the handler reference the id held and
    /// its joins, for the caller to drop outside its locks. Leaves `self`
    /// without either; called once, by `destroy` or `drop`.
    fn close(&mut self) -> (Option<Arc<H>>, Joins<H::Join>) {
        let joins = core::mem::take(&mut self.joins);
        let word = self.word();
        let mut cur = word.load(Acquire);
        let held = loop {
            match Word::<H>::decode(cur) {
                Word::Pending(p) => {
                    // The request's handler runs (here or on another
                    // thread): refuse, so that it returns an error and
                    // rdma_cm destroys the id. No other handler can run
                    // for it meanwhile, and a pending id has no joins.
                    match word.cmpxchg(cur, REFUSED as *mut c_void, Full) {
                        Ok(_) => {
                            // SAFETY: the reference the word held (if any)
                            // is no longer reachable through it.
                            let held = (!p.is_null()).then(|| unsafe { Arc::from_raw(p) });
                            return (held, joins);
                        }
                        Err(now) => cur = now,
                    }
                }
                Word::Attached(p) => break Some(p),
                Word::Unattached => break None,
                // Not reachable: by the invariant only this `CmId` refuses.
                Word::Refused => return (None, joins),
            }
        };
        // SAFETY: by the invariant the id is live and only this `CmId`
        // destroys it; `close` runs once.
        unsafe { sys::rdma_destroy_id(self.ptr.as_ptr()) };
        // SAFETY: the reference the word held came from `Arc::into_raw`;
        // the id is destroyed, so no handler can use it any more.
        let held = held.map(|p| unsafe { Arc::from_raw(p) });
        // The groups are left: the references to the joins are free to go.
        (held, joins)
    }

    /// Destroys the id now (see [`CmId`]'s `Drop`); returns the handler
    /// reference the id held and its joins, for the caller to drop outside
    /// its locks.
    pub fn destroy(self) -> (Option<Arc<H>>, Joins<H::Join>) {
        let mut this = core::mem::ManuallyDrop::new(self);
        // `this` is not dropped: `close` runs once. Its `joins` are left
        // empty (no allocation to leak).
        this.close()
    }

    /// `rdma_bind_addr()`.
    pub fn bind_addr(&self, addr: &SockAddr) -> Result {
        let mut addr = addr.clone();
        // SAFETY: `ptr` is live; `addr` is a valid sockaddr_storage.
        to_result(unsafe { sys::rdma_bind_addr(self.used_raw(), addr.as_mut_ptr()) })
    }

    /// `rdma_resolve_addr()`.
    pub fn resolve_addr(&self, src: &SockAddr, dst: &SockAddr, timeout_ms: u32) -> Result {
        let (mut src, mut dst) = (src.clone(), dst.clone());
        // SAFETY: `ptr` is live; both addresses are valid sockaddr_storage.
        to_result(unsafe {
            sys::rdma_resolve_addr(
                self.used_raw(),
                src.as_mut_ptr(),
                dst.as_mut_ptr(),
                to_ulong(timeout_ms),
            )
        })
    }

    /// `rdma_resolve_route()`.
    pub fn resolve_route(&self, timeout_ms: u32) -> Result {
        // SAFETY: `ptr` is live.
        to_result(unsafe { sys::rdma_resolve_route(self.used_raw(), to_ulong(timeout_ms)) })
    }

    /// `rdma_listen()`.
    pub fn listen(&self, backlog: i32) -> Result {
        // SAFETY: `ptr` is live.
        to_result(unsafe { sys::rdma_listen(self.used_raw(), backlog) })
    }

    /// `rdma_connect_ece()`.
    pub fn connect(&self, param: &ConnParams<'_>, ece: Ece) -> Result {
        let mut p = param.to_c();
        let mut e = ece.to_c();
        // SAFETY: `ptr` is live; `p` points into `param`, which outlives the call.
        to_result(unsafe { sys::rdma_connect_ece(self.used_raw(), &mut p, &mut e) })
    }

    /// `rdma_disconnect()`.
    pub fn disconnect(&self) -> Result {
        // SAFETY: `ptr` is live.
        to_result(unsafe { sys::rdma_disconnect(self.used_raw()) })
    }

    /// `rdma_notify()`.
    pub fn notify(&self, event: u32) -> Result {
        // SAFETY: `ptr` is live.
        to_result(unsafe { sys::rdma_notify(self.used_raw(), event) })
    }

    /// `rdma_init_qp_attr()`: the attributes for moving a QP to
    /// `qp_state`. `EINVAL` for an id without a device.
    pub fn init_qp_attr(&self, qp_state: QpState) -> Result<QpAttr<'_>> {
        // rdma_init_qp_attr() reads the id's device unchecked.
        if !self.has_device() {
            return Err(EINVAL);
        }
        let mut attr = sys::ib_qp_attr {
            qp_state: qp_state.0,
            ..Default::default()
        };
        let mut mask: c_int = 0;
        // SAFETY: `ptr` is live and has a device (checked above); `attr` and
        // `mask` are valid for writes.
        to_result(unsafe { sys::rdma_init_qp_attr(self.used_raw(), &mut attr, &mut mask) })?;
        // INVARIANT: rdma_init_qp_attr() succeeded, so the id has a device,
        // which it keeps while it lives.
        Ok(QpAttr {
            id: self,
            attr,
            mask,
        })
    }

    /// `rdma_set_service_type()`.
    pub fn set_service_type(&self, tos: u8) {
        // SAFETY: `ptr` is live.
        unsafe { sys::rdma_set_service_type(self.used_raw(), tos.into()) }
    }

    /// `rdma_set_reuseaddr()`.
    pub fn set_reuseaddr(&self, on: bool) -> Result {
        // SAFETY: `ptr` is live.
        to_result(unsafe { sys::rdma_set_reuseaddr(self.used_raw(), on.into()) })
    }

    /// `rdma_set_afonly()`.
    pub fn set_afonly(&self, on: bool) -> Result {
        // SAFETY: `ptr` is live.
        to_result(unsafe { sys::rdma_set_afonly(self.used_raw(), on.into()) })
    }

    /// `rdma_set_ack_timeout()`.
    pub fn set_ack_timeout(&self, timeout: u8) -> Result {
        // SAFETY: `ptr` is live.
        to_result(unsafe { sys::rdma_set_ack_timeout(self.used_raw(), timeout) })
    }

    /// `rdma_set_ib_path()` with a path record in wire format (converted to
    /// OPA when the port wants OPA AHs). The id must be bound (`EINVAL`).
    pub fn set_ib_path(&self, wire: &PathRecWire) -> Result {
        let device = self.device();
        if device.is_null() {
            return Err(EINVAL);
        }
        let mut rec = sys::sa_path_rec {
            rec_type: sys::sa_path_rec_type_SA_PATH_REC_TYPE_IB,
            ..Default::default()
        };
        let mut wire = *wire;
        // SAFETY: `wire` holds the 64-byte packed record; `rec` is valid.
        unsafe { sys::ib_sa_unpack_path(wire.as_mut_ptr().cast(), &mut rec) };
        // SAFETY: the id is bound, so its device is live.
        if unsafe { sys::rdma_cap_opa_ah(device, self.port_num()) } {
            let mut opa: sys::sa_path_rec = Default::default();
            // SAFETY: both records are valid.
            unsafe { sys::sa_convert_path_ib_to_opa(&mut opa, &mut rec) };
            rec = opa;
        }
        // SAFETY: `ptr` is live; `rec` is valid for the call.
        to_result(unsafe { sys::rdma_set_ib_path(self.used_raw(), &mut rec) })
    }

    /// `rdma_join_multicast()` of `addr`, with `join` as the context its
    /// events carry; the id keeps `join` until it is left or the id is
    /// destroyed. `EINVAL` for an address of a family rdma_cm does not size
    /// (it would match any join); `EADDRINUSE` if the id has joined `addr`
    /// already: `rdma_leave_multicast()` names a join by its address and
    /// tears down the first match, so a second join of one address could
    /// not be left safely.
    pub fn join_multicast(
        &mut self,
        addr: &SockAddr,
        join_state: JoinState,
        join: Arc<H::Join>,
        gfp: Flags,
    ) -> Result {
        // rdma_cm copies and compares only the address's `rdma_addr_size()`
        // bytes (`rdma_leave_multicast()` leaves the first join whose that
        // many bytes match): the joins are kept, and told apart, by those.
        if addr.rdma_size() == 0 {
            return Err(EINVAL);
        }
        let addr = &addr.rdma_normalized();
        if self.joins.iter().any(|(a, _)| a == addr) {
            return Err(EADDRINUSE);
        }
        // A connect request's new id joins nothing before its request is
        // handled (see `CmId::close`).
        if matches!(
            Word::<H>::decode(self.word().load(Acquire)),
            Word::Pending(_)
        ) {
            return Err(EBUSY);
        }
        // Room first: once joined, the reference must be kept.
        self.joins.room_for_one(gfp)?;
        let mut a = addr.clone();
        let ctx = Arc::as_ptr(&join).cast_mut().cast::<c_void>();
        // SAFETY: `ptr` is live; `a` is valid; `ctx` stays alive while
        // joined, `joins` owning a reference to it.
        to_result(unsafe {
            sys::rdma_join_multicast(self.used_raw(), a.as_mut_ptr(), join_state.0, ctx)
        })?;
        // INVARIANT: the joined context is kept in `joins`. The vector and
        // its room were made above, so the push succeeds; were it to fail,
        // the reference is leaked rather than dropped while rdma_cm holds it.
        let joined = Joined {
            addr: addr.clone(),
            join,
        };
        match &mut self.joins.list {
            Some(list) => {
                if let Err(e) = list.push_within_capacity(joined) {
                    core::mem::forget(e);
                }
            }
            None => core::mem::forget(joined),
        }
        Ok(())
    }

    /// `rdma_leave_multicast()` of `join`: afterwards no handler runs with
    /// it. Returns the id's reference to it; `None` if it is not a join of
    /// this id.
    pub fn leave_multicast(&mut self, join: &Arc<H::Join>) -> Option<Arc<H::Join>> {
        let raw = self.used_raw();
        let list = self.joins.list.as_mut()?;
        let i = list.iter().position(|j| Arc::ptr_eq(&j.join, join))?;
        let mut addr = list[i].addr.clone();
        // SAFETY: `ptr` is live; `addr` is valid.
        unsafe { sys::rdma_leave_multicast(raw, addr.as_mut_ptr()) };
        // INVARIANT: left, so no longer kept.
        list.remove(i).ok().map(|j| j.join)
    }
}

/// The attributes for moving a QP to a state, from
/// [`CmId::init_qp_attr`]: a `struct ib_qp_attr` and the mask of its fields
/// that rdma_cm set.
///
/// # Invariants
///
/// `id` has a device (it had one when rdma_cm filled `attr`, and a bound id
/// keeps its device while it lives).
pub struct QpAttr<'a> {
    id: &'a RdmaCmId,
    attr: sys::ib_qp_attr,
    mask: c_int,
}

impl QpAttr<'_> {
    /// The mask of the attributes set (`enum ib_qp_attr_mask` bits).
    pub fn mask(&self) -> u32 {
        // CAST: the mask is a bit set; its u32 image, as the uAPI's.
        self.mask as u32
    }

    /// The attributes, for `ib_modify_qp()`.
    // Unused by ucma_rs (dead code out of tree), the kernel crate's API in a tree.
    #[allow(
        dead_code,
        reason = "for in-kernel users; ucma_rs hands the uverbs image on"
    )]
    pub fn attr(&self) -> &sys::ib_qp_attr {
        &self.attr
    }
}

/// The handler lock of a [`CmId`], held until dropped: the calls that
/// rdma_cm makes under it (`rdma_accept()`). Made by [`CmId::lock_handler`].
///
/// # Invariants
///
/// The handler lock of `id` is held, by this guard, until it is dropped.
pub struct HandlerGuard<'a, H: CmHandler> {
    id: &'a CmId<H>,
}

impl<H: CmHandler> Drop for HandlerGuard<'_, H> {
    fn drop(&mut self) {
        // SAFETY: by the invariant this guard holds the lock of this live id.
        unsafe { sys::rdma_unlock_handler(self.id.raw()) };
    }
}

impl<H: CmHandler> HandlerGuard<'_, H> {
    /// `rdma_accept_ece()` of the locked id, as rdma_cm requires of an id
    /// made by `rdma_create_user_id()`: the id's one answer to a connect,
    /// the new id of a connect request accepting it, or the active side
    /// after the peer's reply (`RDMA_CM_EVENT_CONNECT_RESPONSE`) sending
    /// its RTU. `EINVAL` without calling rdma_cm when the id has no answer
    /// to give (before that reply, or after an answer: a failed
    /// `rdma_accept()` rejects); see [`ANSWERABLE`].
    pub fn accept(&self, param: Option<&ConnParams<'_>>, ece: Ece) -> Result {
        if !take_answer(self.id.word()) {
            return Err(EINVAL);
        }
        let mut p = param.map(ConnParams::to_c);
        let mut e = ece.to_c();
        let pp = p
            .as_mut()
            .map_or(core::ptr::null_mut(), core::ptr::from_mut);
        // SAFETY: the id is live while borrowed; `pp` is null or valid; its
        // handler lock is held (`self`).
        to_result(unsafe { sys::rdma_accept_ece(self.id.raw(), pp, &mut e) })
    }

    /// `rdma_reject()` of the locked id: its one answer to a connect, as
    /// [`Self::accept`]'s (`EINVAL` without calling rdma_cm when it has
    /// none). Under the handler lock, so that a connect request's new id,
    /// published to its user by the request's handler, has its answer by
    /// the time this can run. Private data longer than ib_cm takes (the
    /// InfiniBand REJ's 148 bytes; a UD id's SIDR reply's 136) is refused
    /// before the answer is taken, as ib_cm refuses it before answering.
    pub fn reject(&self, private_data: &[u8], reason: RejectReason) -> Result {
        let len = u8::try_from(private_data.len()).map_err(|_| EINVAL)?;
        if let Some(PortProtocol::IbSa | PortProtocol::Roce) = self.id.port_protocol() {
            let max = if self.id.qp_type() == QpType::UD {
                IB_SIDR_REP_PRIVATE_DATA_MAX
            } else {
                IB_REJ_PRIVATE_DATA_MAX
            };
            if private_data.len() > max {
                return Err(EINVAL);
            }
        }
        if !take_answer(self.id.word()) {
            return Err(EINVAL);
        }
        // SAFETY: the id is live while borrowed; the private data outlives
        // the call.
        to_result(unsafe {
            sys::rdma_reject(
                self.id.used_raw(),
                private_data.as_ptr().cast(),
                len,
                reason.0,
            )
        })
    }
}

/// The new id of a connect request, inside the request's handler
/// ([`CmHandler::connect_request`]), which holds the id's handler lock.
///
/// The handler either refuses the request ([`ConnectRequest::refuse`]: its
/// error makes rdma_cm destroy the new id) or takes the id
/// ([`ConnectRequest::take`]) into a [`CmId`]: then the request is
/// accepted if that `CmId` is still alive when the handler returns, and
/// refused (rdma_cm destroys the id, `ENOMEM`) if it was dropped before.
/// Either way nothing that owns the id meets rdma_cm's destruction.
///
/// # Invariants
///
/// `ptr` is the live id rdma_cm created for the request, with
/// `cm_event_handler::<H>` as handler, whose connect-request handler runs
/// for `'a`; its `context` word is still the listener's.
pub struct ConnectRequest<'a, H: CmHandler> {
    ptr: NonNull<sys::rdma_cm_id>,
    _handler: PhantomData<Arc<H>>,
    _request: PhantomData<fn(&'a ()) -> &'a ()>,
}

/// What a connect request's handler did with the request; made only by
/// [`ConnectRequest::refuse`], [`PendingAttach::attach`] and
/// [`PendingAttach::refuse`]; advisory (the handler's return follows the
/// id's `context` word, see [`ConnectRequest`]).
#[must_use = "return it from CmHandler::connect_request"]
pub struct ConnectOutcome<'a> {
    refused: Option<Error>,
    _request: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl ConnectOutcome<'_> {
    /// Whether the handler refused the request (or could not take it):
    /// rdma_cm destroys the new id.
    pub fn is_refused(&self) -> bool {
        self.refused.is_some()
    }
}

impl<'a, H: CmHandler> ConnectRequest<'a, H> {
    /// The new id.
    pub fn id(&self) -> &RdmaCmId {
        // SAFETY: the new id is live while its handler runs, and `self`
        // lives no longer than the handler.
        unsafe { RdmaCmId::from_raw(self.ptr.as_ptr()) }
    }

    /// Refuses the request: the handler returns `err` and rdma_cm destroys
    /// the new id (`ENOMEM` makes ib_cm drop the request without a reject).
    pub fn refuse(self, err: Error) -> ConnectOutcome<'a> {
        ConnectOutcome {
            refused: Some(err),
            _request: PhantomData,
        }
    }

    /// Takes the new id into a [`CmId`], without a handler object until
    /// the returned [`PendingAttach`] gives it one.
    pub fn take(self) -> (CmId<H>, PendingAttach<'a, H>) {
        // SAFETY: by the invariant the id is live and has our handler.
        let word = unsafe { context_word(self.ptr.as_ptr()) };
        // The listener's borrowed pointer goes: the id is pending, without
        // a handler object. Its handler (the caller) holds the id's handler
        // lock, so no other handler reads the word meanwhile.
        word.store(PENDING as *mut c_void, Release);
        // INVARIANT: a live id with our handler, pending while its request
        // is handled, no joins; rdma_cm destroys it only on an error return,
        // which `cm_event_handler` makes only for a refused word.
        let id = CmId {
            ptr: self.ptr,
            joins: Joins::default(),
            used: Cell::new(true),
            attached: Cell::new(true),
            _handler: PhantomData,
        };
        (
            id,
            PendingAttach {
                ptr: self.ptr,
                _handler: PhantomData,
                _request: PhantomData,
            },
        )
    }
}

/// The right to give the taken new id of a connect request its handler
/// object, inside the request's handler.
///
/// # Invariants
///
/// `ptr` is the id a [`ConnectRequest`] for `'a` took, with
/// `cm_event_handler::<H>` as handler; it stays live for `'a` (while the
/// request's handler runs, rdma_cm destroys it only after that handler
/// returns, and its `CmId` does not destroy a pending id).
pub struct PendingAttach<'a, H: CmHandler> {
    ptr: NonNull<sys::rdma_cm_id>,
    _handler: PhantomData<Arc<H>>,
    _request: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl<'a, H: CmHandler> PendingAttach<'a, H> {
    /// Makes `handler` the object the id's events go to once the request's
    /// handler has returned (the id keeps the reference until destroyed).
    /// Refused if the id's `CmId` was dropped meanwhile.
    pub fn attach(self, handler: Arc<H>) -> ConnectOutcome<'a> {
        // SAFETY: by the invariant the id is live for `'a`, with our handler.
        let word = unsafe { context_word(self.ptr.as_ptr()) };
        let raw = word_of(handler);
        // CAST: the tag of a pending id; see `PENDING`.
        let tagged = (raw as usize | PENDING) as *mut c_void;
        // INVARIANT: the word takes the reference made above, if it was
        // pending without one.
        match word.cmpxchg(PENDING as *mut c_void, tagged, Full) {
            Ok(_) => ConnectOutcome {
                refused: None,
                _request: PhantomData,
            },
            Err(_) => {
                // SAFETY: `raw` came from `Arc::into_raw` above, not stored.
                drop(unsafe { Arc::from_raw(raw.cast_const().cast::<H>()) });
                ConnectOutcome {
                    refused: Some(ENOMEM),
                    _request: PhantomData,
                }
            }
        }
    }

    /// Gives the id no handler object. If its `CmId` is still alive when
    /// the request's handler returns, rdma_cm keeps the id, whose events
    /// are then ignored (a used id cannot be attached); if not, the handler
    /// returns `err`.
    pub fn refuse(self, err: Error) -> ConnectOutcome<'a> {
        ConnectOutcome {
            refused: Some(err),
            _request: PhantomData,
        }
    }
}

/// The connected-mode parameters of an event.
pub struct ConnEventParam<'a> {
    /// The parameters (the private data empty when rdma_cm gave none).
    pub params: ConnParams<'a>,
    /// `private_data_len` as rdma_cm reports it.
    pub private_data_len: u8,
}

/// The address handle of a datagram event, borrowed from the event.
///
/// # Invariants
///
/// `attr` is the address handle of an event rdma_cm is delivering for
/// `id`, and `id` is that event's own id.
pub struct AhAttr<'a> {
    attr: &'a sys::rdma_ah_attr,
    /// The id the event is for, whose device the address handle came
    /// through (if it is bound).
    id: &'a RdmaCmId,
}

/// The datagram parameters of an event.
pub struct UdEventParam<'a> {
    /// QP number.
    pub qp_num: u32,
    /// Q_Key.
    pub qkey: u32,
    /// The address handle.
    pub ah_attr: AhAttr<'a>,
    /// `private_data_len` as rdma_cm reports it.
    pub private_data_len: u8,
    /// The private data (empty when rdma_cm gave none).
    pub private_data: &'a [u8],
}

/// An rdma_cm event, borrowed for the duration of the handler.
///
/// # Invariants
///
/// `ev` is an event rdma_cm is delivering to `cm_event_handler::<H>` for
/// `id` (its own id; for a connect request, the new id), so a multicast
/// event's context is an `Arc<H::Join>` given by [`CmId::join_multicast`].
pub struct CmEvent<'a, H: CmHandler> {
    ev: &'a sys::rdma_cm_event,
    /// The id the event is for (for a connect request, the new id).
    id: &'a RdmaCmId,
    _handler: PhantomData<Arc<H>>,
}

impl<H: CmHandler> CmEvent<'_, H> {
    /// The event's kind.
    pub fn kind(&self) -> EventType {
        EventType(self.ev.event)
    }

    /// The event's status: a negative errno, or a reject reason.
    pub fn status(&self) -> i32 {
        self.ev.status
    }

    /// The event's ECE.
    pub fn ece(&self) -> Ece {
        Ece {
            vendor_id: self.ev.ece.vendor_id,
            attr_mod: self.ev.ece.attr_mod,
        }
    }

    /// Whether this is a multicast join event.
    pub fn is_multicast(&self) -> bool {
        matches!(
            self.kind(),
            EventType::MULTICAST_JOIN | EventType::MULTICAST_ERROR
        )
    }

    /// For a multicast event: the join it belongs to.
    pub fn join(&self) -> Option<ArcBorrow<'_, H::Join>> {
        if !self.is_multicast() {
            return None;
        }
        // SAFETY: for multicast events rdma_cm fills the `ud` branch.
        let ptr = unsafe { self.ud_param() }.private_data;
        if ptr.is_null() {
            return None;
        }
        // SAFETY: multicast events carry the context given to
        // `rdma_join_multicast()` by `CmId::join_multicast`: an
        // `Arc<H::Join>` the id keeps until leave or destroy has returned,
        // and those wait for this handler.
        Some(unsafe { ArcBorrow::from_raw(ptr.cast()) })
    }

    /// The `conn` branch of the event's parameter union.
    ///
    /// # Safety
    ///
    /// The branch must be initialised (see [`Self::conn`]).
    unsafe fn conn_param(&self) -> &sys::rdma_conn_param {
        // SAFETY: a union's branches begin at its start; the caller
        // guarantees this one is initialised. (Through a cast: bindgen
        // makes the union a Rust union or a struct of
        // `__BindgenUnionField`s depending on what else it binds.)
        unsafe { &*core::ptr::from_ref(&self.ev.param).cast::<sys::rdma_conn_param>() }
    }

    /// The `ud` branch of the event's parameter union.
    ///
    /// # Safety
    ///
    /// The branch must be initialised (see [`Self::conn`]).
    unsafe fn ud_param(&self) -> &sys::rdma_ud_param {
        // SAFETY: as in `conn_param`.
        unsafe { &*core::ptr::from_ref(&self.ev.param).cast::<sys::rdma_ud_param>() }
    }

    fn private_data(&self, ptr: *const c_void, len: u8) -> &[u8] {
        if ptr.is_null() || len == 0 {
            return &[];
        }
        // SAFETY: rdma_cm gives `len` readable bytes at `ptr` for the event's lifetime.
        unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), len.into()) }
    }

    /// The `conn` branch of the parameters (meaningful for ids of a
    /// connected QP type).
    pub fn conn(&self) -> ConnEventParam<'_> {
        // SAFETY: both branches of the union are plain data, and every
        // event starts zeroed before rdma_cm fills one (in 7.3's cma.c each
        // is a `= {}` local or lives in `kzalloc`ed memory), so either may
        // be read; both begin with the same private data pointer and length.
        let c = unsafe { self.conn_param() };
        ConnEventParam {
            params: ConnParams {
                private_data: self.private_data(c.private_data, c.private_data_len),
                qp_num: c.qp_num,
                qkey: c.qkey,
                srq: c.srq,
                responder_resources: c.responder_resources,
                initiator_depth: c.initiator_depth,
                flow_control: c.flow_control,
                retry_count: c.retry_count,
                rnr_retry_count: c.rnr_retry_count,
            },
            private_data_len: c.private_data_len,
        }
    }

    /// The `ud` branch of the parameters (meaningful for UD ids).
    pub fn ud(&self) -> UdEventParam<'_> {
        // SAFETY: as in `conn`.
        let u = unsafe { self.ud_param() };
        UdEventParam {
            qp_num: u.qp_num,
            qkey: u.qkey,
            // INVARIANT: by `CmEvent`'s, the event's and its id's.
            ah_attr: AhAttr {
                attr: &u.ah_attr,
                id: self.id,
            },
            private_data_len: u.private_data_len,
            private_data: self.private_data(u.private_data, u.private_data_len),
        }
    }
}

/// The event handler of every id made by [`CmId::new`] or
/// [`CmId::new_user`] for an `H`, and of their connect requests' new ids.
///
/// # Safety
///
/// Called by rdma_cm with a live id created with this handler and a valid
/// event, under the id's handler lock, in process context.
unsafe extern "C" fn cm_event_handler<H: CmHandler>(
    id: *mut sys::rdma_cm_id,
    event: *mut sys::rdma_cm_event,
) -> c_int {
    // SAFETY: `id` is live for the duration of the handler, with this
    // handler.
    let word = unsafe { context_word(id) }.load(Acquire);
    // SAFETY: `event` is valid for the duration of the handler.
    let is_request = unsafe { (*event).event } == EventType::CONNECT_REQUEST.0;
    let Word::Attached(this) = Word::<H>::decode(word) else {
        // No handler object (not attached yet, or a listener that never
        // was): nothing can be delivered, and a connect request's new id
        // would be nobody's; rdma_cm destroys it on an error.
        return if is_request { ENOMEM.to_errno() } else { 0 };
    };
    // SAFETY: an attached word is an `Arc<H>` the id owns (the listener's,
    // for a connect request's new id: the listening id's handler lock is held
    // while that runs, so the listener is not destroyed meanwhile), alive
    // while the handler runs.
    let this: ArcBorrow<'_, H> = unsafe { ArcBorrow::from_raw(this) };
    let _entered = H::enter_handler(this);
    // SAFETY: as guaranteed by the caller.
    unsafe { handle_event(this, id, event) }
}

/// The work of [`cm_event_handler`] once `H::enter_handler` ran: out of
/// line, so that what it allocates can be told from what `enter_handler`
/// does (a fault-injection filter on its address range, for instance).
///
/// # Safety
///
/// As [`cm_event_handler`]'s, and `this` is the object of the id (the
/// listener's, for a connect request's new id).
#[inline(never)]
unsafe fn handle_event<H: CmHandler>(
    this: ArcBorrow<'_, H>,
    id: *mut sys::rdma_cm_id,
    event: *mut sys::rdma_cm_event,
) -> c_int {
    // SAFETY: `event` is valid for the duration of the handler.
    let ev = unsafe { &*event };
    // SAFETY: `id` is live for the handler's duration, which the borrow
    // does not outlive.
    let idref = unsafe { RdmaCmId::from_raw(id) };
    // INVARIANT: rdma_cm is delivering `event` for `id` to this handler,
    // the one `CmId::<H>` installed.
    let ev = CmEvent {
        ev,
        id: idref,
        _handler: PhantomData,
    };
    if ev.kind() != EventType::CONNECT_REQUEST {
        if ev.kind() == EventType::CONNECT_RESPONSE {
            // SAFETY: as above.
            mark_answerable::<H>(unsafe { context_word(id) });
        }
        H::event(this, &ev);
        return 0;
    }
    // SAFETY: `id` is non-null (a live id, as guaranteed by the caller).
    let ptr = unsafe { NonNull::new_unchecked(id) };
    // INVARIANT: the new id, inside its handler, its word the listener's.
    let req = ConnectRequest {
        ptr,
        _handler: PhantomData,
        _request: PhantomData,
    };
    let outcome = H::connect_request(this, req, &ev);
    // SAFETY: as above.
    let word = unsafe { context_word(id) };
    let cur = word.load(Acquire);
    if let Word::Pending(p) = Word::<H>::decode(cur) {
        // Taken, and its `CmId` alive: rdma_cm keeps the id, which from now
        // on delivers to `p` (or nothing, if null), and may answer the
        // request. A `CmId` dropped meanwhile (on another thread) made it
        // `REFUSED` instead.
        // CAST: the word with the tag; see `ANSWERABLE`.
        let kept = (p as usize | ANSWERABLE) as *mut c_void;
        if word.cmpxchg(cur, kept, Full).is_ok() {
            return 0;
        }
    }
    // Refused, never taken, or its `CmId` dropped: rdma_cm destroys the id,
    // which nothing owns.
    outcome.refused.unwrap_or(ENOMEM).to_errno()
}
