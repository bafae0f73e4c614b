// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over the in-kernel RDMA connection manager (`rdma_cm`).
//!
//! C header: [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h)
//!
//! The rules of that API, as this module relies on them:
//! - An id's event handler runs in process context, serialised per id by the
//!   id's handler mutex, which [`CmId::lock_handler`] takes too.
//! - `rdma_destroy_id()` cancels the id's work and waits for a running
//!   handler; afterwards no handler runs for that id. A handler must not
//!   destroy its own id.
//! - On `RDMA_CM_EVENT_CONNECT_REQUEST` the handler is given a *new* id whose
//!   `context` is still the listener's. A non-zero return makes rdma_cm
//!   destroy the new id; `-ENOMEM` in particular makes ib_cm drop the request
//!   silently (the peer retries).
//! - Multicast events carry the join's `context` in `param.ud.private_data`.
//!
//! Every `unsafe` operation on rdma_cm objects of the module lives here.

use core::ptr::NonNull;

use zerocopy::FromZeros;

use kernel::{
    bindings,
    error::{
        from_err_ptr,
        to_result, //
    },
    ffi::{
        c_int,
        c_void, //
    },
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
};

use crate::{
    context::Context,
    multicast::Multicast,
    rdma_sys as sys,
    ucma_core::{
        addr::{
            addr_size,
            family,
            AF_IB,
            AF_INET, //
        },
        uapi::{
            ConnParam,
            Ece,
            EventResp,
            QueryAddrResp,
            QueryRouteResp,
            PATH_FLAGS_PRIMARY,
            PATH_REC_DATA_SIZE,
            QP_ATTR_SIZE,
            QUERY_IB_SERVICE_RESP_SIZE,
            SOCKADDR_IN6_SIZE,
            USER_PATH_REC_SIZE, //
        },
    },
};

/// `RDMA_CM_EVENT_CONNECT_REQUEST`.
pub(crate) const EVENT_CONNECT_REQUEST: u32 = sys::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST;
/// `RDMA_CM_EVENT_DEVICE_REMOVAL`.
pub(crate) const EVENT_DEVICE_REMOVAL: u32 = sys::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL;
/// `RDMA_CM_EVENT_MULTICAST_JOIN`.
pub(crate) const EVENT_MULTICAST_JOIN: u32 = sys::rdma_cm_event_type_RDMA_CM_EVENT_MULTICAST_JOIN;
/// `RDMA_CM_EVENT_MULTICAST_ERROR`.
pub(crate) const EVENT_MULTICAST_ERROR: u32 = sys::rdma_cm_event_type_RDMA_CM_EVENT_MULTICAST_ERROR;
/// `RDMA_CM_EVENT_ROUTE_RESOLVED`.
pub(crate) const EVENT_ROUTE_RESOLVED: u32 = sys::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED;
/// `RDMA_CM_EVENT_ADDRINFO_RESOLVED`.
pub(crate) const EVENT_ADDRINFO_RESOLVED: u32 =
    sys::rdma_cm_event_type_RDMA_CM_EVENT_ADDRINFO_RESOLVED;
/// `IB_QPT_UD`.
const QPT_UD: u32 = sys::ib_qp_type_IB_QPT_UD;

/// A socket address in a `struct __kernel_sockaddr_storage`, as rdma_cm takes it.
pub(crate) struct SockAddr(bindings::__kernel_sockaddr_storage);

impl SockAddr {
    /// Size of the storage.
    pub(crate) const SIZE: usize = core::mem::size_of::<bindings::__kernel_sockaddr_storage>();

    /// An address made of `bytes` (at most [`Self::SIZE`] are used), zero-padded.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Self {
        let mut ss = SockAddr(pin_init::zeroed());
        let n = bytes.len().min(Self::SIZE);
        // SAFETY: `ss.0` is a plain C struct of `SIZE` bytes, and `n <= SIZE`.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), ss.as_mut_ptr().cast::<u8>(), n) };
        ss
    }

    fn as_mut_ptr(&mut self) -> *mut bindings::sockaddr {
        core::ptr::from_mut(&mut self.0).cast()
    }
}

/// Copies a kernel socket address into `out` (at most `out.len()` bytes).
///
/// # Safety
///
/// `ss` points to a live `struct __kernel_sockaddr_storage`.
unsafe fn sockaddr_bytes(ss: *const bindings::__kernel_sockaddr_storage, out: &mut [u8]) {
    let n = out.len().min(SockAddr::SIZE);
    // SAFETY: `ss` is valid for `SIZE` bytes, as guaranteed by the caller;
    // `n` is within both buffers.
    unsafe { core::ptr::copy_nonoverlapping(ss.cast::<u8>(), out.as_mut_ptr(), n) };
}

/// Copies the `rdma_addr_size()` bytes of the socket address at `ss` (its
/// family read first) to the start of `out`; returns that size (0 for an
/// unknown family, nothing copied).
///
/// # Safety
///
/// `ss` must be valid for reads of a whole `__kernel_sockaddr_storage`.
unsafe fn sockaddr_bytes_sized(
    ss: *const bindings::__kernel_sockaddr_storage,
    out: &mut [u8],
) -> usize {
    let mut fam = [0u8; 2];
    // SAFETY: `ss` is valid, as guaranteed by the caller.
    unsafe { sockaddr_bytes(ss, &mut fam) };
    let n = addr_size(&fam).min(out.len());
    // SAFETY: as above.
    unsafe { sockaddr_bytes(ss, &mut out[..n]) };
    n
}

/// Views a plain C struct of the uAPI as bytes.
///
/// # Safety
///
/// `T` must be a `repr(C)` struct without padding bytes.
unsafe fn c_bytes<T>(v: &T) -> &[u8] {
    // SAFETY: the caller guarantees every byte of `T` is initialised.
    unsafe { core::slice::from_raw_parts(core::ptr::from_ref(v).cast(), core::mem::size_of::<T>()) }
}

/// An rdma_cm id owned by a [`Context`].
///
/// # Invariants
///
/// `ptr` is a live `rdma_cm_id` created by `rdma_create_user_id()` (or
/// handed over by a connect request) with [`cm_event_handler`] as handler.
/// Its `context` is null or the pointer of an `Arc<Context>` reference that
/// this `CmId` owns. The id is destroyed only by [`CmId::destroy`].
pub(crate) struct CmId {
    ptr: NonNull<sys::rdma_cm_id>,
}

// SAFETY: rdma_cm ids may be used and destroyed from any process context.
unsafe impl Send for CmId {}
// SAFETY: the rdma_cm calls made through `&CmId` are serialised by the
// owning context's command mutex; rdma_cm locks internally where it needs to.
unsafe impl Sync for CmId {}

/// A timeout in milliseconds as rdma_cm takes it.
fn to_ulong(ms: u32) -> kernel::ffi::c_ulong {
    kernel::ffi::c_ulong::try_from(ms).unwrap_or(kernel::ffi::c_ulong::MAX)
}

/// Converts an rdma_cm return value.
fn check(ret: c_int) -> Result {
    to_result(ret)
}

impl CmId {
    /// `rdma_create_user_id()`: a new id in the caller's network namespace.
    /// Events are ignored until the returned [`Unattached`] is attached,
    /// which must happen before the id is used.
    pub(crate) fn create(ps: u32, qp_type: u32) -> Result<(Self, Unattached)> {
        // SAFETY: the handler is a valid `rdma_cm_event_handler`; a null
        // context is allowed and handled by it.
        let raw = unsafe {
            sys::rdma_create_user_id(Some(cm_event_handler), core::ptr::null_mut(), ps, qp_type)
        };
        let ptr = NonNull::new(from_err_ptr(raw)?).ok_or(ENOMEM)?;
        // INVARIANT: created with our handler, null context.
        Ok((CmId { ptr }, Unattached { ptr }))
    }

    fn raw(&self) -> *mut sys::rdma_cm_id {
        self.ptr.as_ptr()
    }

    /// `rdma_destroy_id()`: afterwards no handler runs for the id. Returns the
    /// context reference the id held, for the caller to drop outside its locks.
    pub(crate) fn destroy(self) -> Option<Arc<Context>> {
        // SAFETY: `ptr` is live until the destroy below.
        let ctx = unsafe { (*self.raw()).context };
        // SAFETY: `ptr` is live and, `self` being consumed, destroyed once.
        unsafe { sys::rdma_destroy_id(self.raw()) };
        if ctx.is_null() {
            return None;
        }
        // SAFETY: by the invariant the context was an `Arc<Context>` this id
        // owned; the id is destroyed, so no handler can use it any more.
        Some(unsafe { Arc::from_raw(ctx.cast_const().cast::<Context>()) })
    }

    /// A borrowed view for queries.
    pub(crate) fn as_ref(&self) -> CmIdRef<'_> {
        CmIdRef {
            ptr: self.ptr,
            _p: core::marker::PhantomData,
        }
    }

    /// `rdma_bind_addr()`.
    pub(crate) fn bind_addr(&self, addr: &mut SockAddr) -> Result {
        // SAFETY: `ptr` is live; `addr` is a valid sockaddr_storage.
        check(unsafe { sys::rdma_bind_addr(self.raw(), addr.as_mut_ptr()) })
    }

    /// `rdma_resolve_addr()`.
    pub(crate) fn resolve_addr(
        &self,
        src: &mut SockAddr,
        dst: &mut SockAddr,
        timeout_ms: u32,
    ) -> Result {
        // SAFETY: `ptr` is live; both addresses are valid sockaddr_storage.
        check(unsafe {
            sys::rdma_resolve_addr(
                self.raw(),
                src.as_mut_ptr(),
                dst.as_mut_ptr(),
                to_ulong(timeout_ms),
            )
        })
    }

    /// `rdma_resolve_route()`.
    pub(crate) fn resolve_route(&self, timeout_ms: u32) -> Result {
        // SAFETY: `ptr` is live.
        check(unsafe { sys::rdma_resolve_route(self.raw(), to_ulong(timeout_ms)) })
    }

    /// `rdma_listen()`.
    pub(crate) fn listen(&self, backlog: i32) -> Result {
        // SAFETY: `ptr` is live.
        check(unsafe { sys::rdma_listen(self.raw(), backlog) })
    }

    /// Builds the kernel connection parameters from the user's.
    fn conn_param(&self, src: &ConnParam) -> sys::rdma_conn_param {
        sys::rdma_conn_param {
            private_data: src.private_data.as_ptr().cast(),
            private_data_len: src.private_data_len,
            responder_resources: src.responder_resources,
            initiator_depth: src.initiator_depth,
            flow_control: src.flow_control,
            retry_count: src.retry_count,
            rnr_retry_count: src.rnr_retry_count,
            srq: src.srq,
            qp_num: src.qp_num & 0xff_ffff,
            // The Q_Key is the user's only for AF_IB ids.
            qkey: if self.as_ref().src_family() == AF_IB {
                src.qkey
            } else {
                0
            },
        }
    }

    /// `rdma_connect_ece()`.
    pub(crate) fn connect(&self, param: &ConnParam, ece: Ece) -> Result {
        let mut p = self.conn_param(param);
        let mut e = sys::rdma_ucm_ece {
            vendor_id: ece.vendor_id,
            attr_mod: ece.attr_mod,
        };
        // SAFETY: `ptr` is live; `p` points into `param`, which outlives the call.
        check(unsafe { sys::rdma_connect_ece(self.raw(), &mut p, &mut e) })
    }

    /// `rdma_accept_ece()` under the handler lock; `on_success` runs with the
    /// lock still held (to publish the uid atomically with the handler).
    pub(crate) fn accept(
        &self,
        param: Option<&ConnParam>,
        ece: Ece,
        on_success: impl FnOnce(),
    ) -> Result {
        let mut p = param.map(|param| self.conn_param(param));
        let mut e = sys::rdma_ucm_ece {
            vendor_id: ece.vendor_id,
            attr_mod: ece.attr_mod,
        };
        let pp = p
            .as_mut()
            .map_or(core::ptr::null_mut(), core::ptr::from_mut);
        let _h = self.lock_handler();
        // SAFETY: `ptr` is live; `pp` is null or valid; the handler lock is held
        // as rdma_accept requires for user ids.
        let ret = check(unsafe { sys::rdma_accept_ece(self.raw(), pp, &mut e) });
        if ret.is_ok() {
            on_success();
        }
        ret
    }

    /// `rdma_reject()`.
    pub(crate) fn reject(&self, private_data: &[u8], reason: u8) -> Result {
        let len = u8::try_from(private_data.len()).map_err(|_| EINVAL)?;
        // SAFETY: `ptr` is live; the private data outlives the call.
        check(unsafe { sys::rdma_reject(self.raw(), private_data.as_ptr().cast(), len, reason) })
    }

    /// `rdma_disconnect()`.
    pub(crate) fn disconnect(&self) -> Result {
        // SAFETY: `ptr` is live.
        check(unsafe { sys::rdma_disconnect(self.raw()) })
    }

    /// `rdma_notify()`.
    pub(crate) fn notify(&self, event: u32) -> Result {
        // SAFETY: `ptr` is live.
        check(unsafe { sys::rdma_notify(self.raw(), event) })
    }

    /// `rdma_init_qp_attr()` then `ib_copy_qp_attr_to_user()`: the
    /// `struct ib_uverbs_qp_attr` for moving a QP to `qp_state`.
    pub(crate) fn init_qp_attr(&self, qp_state: u32) -> Result<[u8; QP_ATTR_SIZE]> {
        let mut attr = sys::ib_qp_attr {
            qp_state,
            ..Default::default()
        };
        let mut mask: c_int = 0;
        // SAFETY: `ptr` is live; `attr` and `mask` are valid for writes.
        check(unsafe { sys::rdma_init_qp_attr(self.raw(), &mut attr, &mut mask) })?;
        let mut resp = sys::ib_uverbs_qp_attr {
            // CAST: the mask is a bit set; the uAPI field is its u32 image.
            qp_attr_mask: mask as u32,
            ..Default::default()
        };
        // SAFETY: `ptr` is live and has a device (rdma_init_qp_attr succeeded);
        // `resp` and `attr` are valid.
        unsafe { sys::ib_copy_qp_attr_to_user((*self.raw()).device, &mut resp, &mut attr) };
        let mut out = [0u8; QP_ATTR_SIZE];
        // SAFETY: `ib_uverbs_qp_attr` is a uAPI struct without padding.
        let bytes = unsafe { c_bytes(&resp) };
        let n = out.len().min(bytes.len());
        out[..n].copy_from_slice(&bytes[..n]);
        Ok(out)
    }

    /// `rdma_set_service_type()`.
    pub(crate) fn set_service_type(&self, tos: u8) {
        // SAFETY: `ptr` is live.
        unsafe { sys::rdma_set_service_type(self.raw(), tos.into()) }
    }

    /// `rdma_set_reuseaddr()`.
    pub(crate) fn set_reuseaddr(&self, on: bool) -> Result {
        // SAFETY: `ptr` is live.
        check(unsafe { sys::rdma_set_reuseaddr(self.raw(), on.into()) })
    }

    /// `rdma_set_afonly()`.
    pub(crate) fn set_afonly(&self, on: bool) -> Result {
        // SAFETY: `ptr` is live.
        check(unsafe { sys::rdma_set_afonly(self.raw(), on.into()) })
    }

    /// `rdma_set_ack_timeout()`.
    pub(crate) fn set_ack_timeout(&self, timeout: u8) -> Result {
        // SAFETY: `ptr` is live.
        check(unsafe { sys::rdma_set_ack_timeout(self.raw(), timeout) })
    }

    /// `rdma_resolve_ib_service()` with the user's `struct rdma_ucm_ib_service`.
    pub(crate) fn resolve_ib_service(&self, ibs: &[u8; 80]) -> Result {
        let mut svc: sys::rdma_ucm_ib_service = Default::default();
        let n = core::mem::size_of::<sys::rdma_ucm_ib_service>().min(ibs.len());
        // SAFETY: `svc` is a plain uAPI struct of at least `n` bytes.
        unsafe {
            core::ptr::copy_nonoverlapping(
                ibs.as_ptr(),
                core::ptr::from_mut(&mut svc).cast::<u8>(),
                n,
            )
        };
        // SAFETY: `ptr` is live; `svc` is valid for the call.
        check(unsafe { sys::rdma_resolve_ib_service(self.raw(), &mut svc) })
    }

    /// SET_OPTION IB_PATH: `rdma_set_ib_path()` with a path record in wire
    /// format (converted to OPA when the port wants OPA AHs).
    pub(crate) fn set_ib_path(&self, wire: &[u8; 64]) -> Result {
        let id = self.as_ref();
        let mut rec = sys::sa_path_rec {
            rec_type: sys::sa_path_rec_type_SA_PATH_REC_TYPE_IB,
            ..Default::default()
        };
        let mut wire = *wire;
        // SAFETY: `wire` holds the 64-byte packed record; `rec` is valid.
        unsafe { sys::ib_sa_unpack_path(wire.as_mut_ptr().cast(), &mut rec) };
        // SAFETY: the id is bound (checked by the caller), so its device is live.
        if unsafe { sys::ucma_shim_cap_opa_ah(id.device(), id.port_num()) } {
            let mut opa: sys::sa_path_rec = Default::default();
            // SAFETY: both records are valid.
            unsafe { sys::ucma_shim_path_ib_to_opa(&mut opa, &mut rec) };
            rec = opa;
        }
        // SAFETY: `ptr` is live; `rec` is valid for the call.
        check(unsafe { sys::rdma_set_ib_path(self.raw(), &mut rec) })
    }

    /// `rdma_join_multicast()`, with `mc` as the events' context. `mc` must
    /// stay alive until [`CmId::leave_multicast`] or [`CmId::destroy`] has
    /// returned (the caller keeps it in the context's join list).
    pub(crate) fn join_multicast(&self, mc: &Arc<Multicast>) -> Result {
        let mut addr = mc.sockaddr();
        let ctx = Arc::as_ptr(mc).cast_mut().cast::<c_void>();
        // SAFETY: `ptr` is live; `addr` is valid; `ctx` outlives the join.
        check(unsafe {
            sys::rdma_join_multicast(self.raw(), addr.as_mut_ptr(), mc.join_state(), ctx)
        })
    }

    /// `rdma_leave_multicast()`: afterwards no handler runs with `mc`.
    pub(crate) fn leave_multicast(&self, mc: &Multicast) {
        let mut addr = mc.sockaddr();
        // SAFETY: `ptr` is live; `addr` is valid.
        unsafe { sys::rdma_leave_multicast(self.raw(), addr.as_mut_ptr()) }
    }

    /// Takes the id's handler lock: no event handler runs for it until the
    /// guard is dropped.
    pub(crate) fn lock_handler(&self) -> HandlerGuard<'_> {
        // SAFETY: `ptr` is live.
        unsafe { sys::rdma_lock_handler(self.raw()) };
        HandlerGuard { id: self }
    }
}

/// The handler lock of a [`CmId`], held until dropped.
pub(crate) struct HandlerGuard<'a> {
    id: &'a CmId,
}

impl Drop for HandlerGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: the lock was taken in `lock_handler` on this live id.
        unsafe { sys::rdma_unlock_handler(self.id.raw()) };
    }
}

/// A borrowed rdma_cm id: the one an event handler was called for, or a
/// [`CmId`] of a context whose command lock is held.
///
/// # Invariants
///
/// `ptr` is a live `rdma_cm_id` for `'a`.
#[derive(Clone, Copy)]
pub(crate) struct CmIdRef<'a> {
    ptr: NonNull<sys::rdma_cm_id>,
    _p: core::marker::PhantomData<&'a sys::rdma_cm_id>,
}

// The id is memory rdma_cm writes (its work items resolve addresses and
// routes while a command holds the id), so no Rust reference to it is ever
// made: each field is read, or copied, through the raw pointer.
impl CmIdRef<'_> {
    /// The id's device; null while unbound.
    fn device(&self) -> *mut sys::ib_device {
        // SAFETY: by the invariant `ptr` is live; one field is read.
        unsafe { (*self.raw()).device }
    }

    /// The id's port number.
    fn port_num(&self) -> u32 {
        // SAFETY: as in `device`.
        unsafe { (*self.raw()).port_num }
    }

    /// Whether the id is bound to a device.
    pub(crate) fn has_device(&self) -> bool {
        !self.device().is_null()
    }

    /// The id's QP type (`enum ib_qp_type`).
    pub(crate) fn qp_type(&self) -> u32 {
        // SAFETY: as in `device`.
        unsafe { (*self.raw()).qp_type }
    }

    /// The family of the id's source address.
    pub(crate) fn src_family(&self) -> u16 {
        // SAFETY: as in `device`; `ss_family` is the first field of every
        // sockaddr layout, so this union view is always initialised.
        unsafe {
            (*self.raw())
                .route
                .addr
                .src_addr
                .__bindgen_anon_1
                .__bindgen_anon_1
                .ss_family
        }
    }

    /// Both addresses, as `(source, destination)` storage images.
    fn addrs(&self) -> ([u8; SockAddr::SIZE], [u8; SockAddr::SIZE]) {
        let mut src = [0u8; SockAddr::SIZE];
        let mut dst = [0u8; SockAddr::SIZE];
        let id = self.raw();
        // SAFETY: `id` is live; the fields' addresses are taken without
        // making references.
        unsafe {
            sockaddr_bytes(&raw const (*id).route.addr.src_addr, &mut src);
            sockaddr_bytes(&raw const (*id).route.addr.dst_addr, &mut dst);
        }
        (src, dst)
    }

    /// A copy of the id's device address.
    fn dev_addr(&self) -> sys::rdma_dev_addr {
        // SAFETY: `ptr` is live; the field is copied through a raw pointer.
        unsafe { core::ptr::read(&raw const (*self.raw()).route.addr.dev_addr) }
    }

    /// `route.num_pri_alt_paths`, as stored.
    fn num_pri_alt_paths(&self) -> i32 {
        // SAFETY: as in `device`.
        unsafe { (*self.raw()).route.num_pri_alt_paths }
    }

    /// The number of path records to copy, at most 2
    /// (`RDMA_PRIMARY_PATH_MAX_REC_NUM`).
    fn num_paths(&self) -> usize {
        usize::try_from(self.num_pri_alt_paths())
            .unwrap_or(0)
            .min(2)
    }

    /// A copy of path record `i`, which must be below [`Self::num_paths`].
    fn path_rec(&self, i: usize) -> sys::sa_path_rec {
        // SAFETY: `path_rec` holds `num_pri_alt_paths` records, and `i` is
        // below it; the record is copied.
        unsafe { core::ptr::read((*self.raw()).route.path_rec.add(i)) }
    }

    /// Device facts for QUERY replies: node GUID (raw, network order),
    /// device index, port and pkey (network order); `None` without a device.
    pub(crate) fn device_info(&self) -> Option<DeviceInfo> {
        let device = self.device();
        if device.is_null() {
            return None;
        }
        let mut dev_addr = self.dev_addr();
        // SAFETY: `device` is a live ib_device while the id is bound to it;
        // `dev_addr` is a valid copy of the id's.
        unsafe {
            Some(DeviceInfo {
                node_guid: sys::ucma_shim_node_guid(device),
                index: sys::ucma_shim_dev_index(device),
                port_num: self.port_num(),
                pkey: sys::ucma_shim_addr_get_pkey(&mut dev_addr).to_be(),
            })
        }
    }
}

impl CmIdRef<'_> {
    fn raw(&self) -> *mut sys::rdma_cm_id {
        self.ptr.as_ptr()
    }

    fn fill_device(&self, r: &mut QueryAddrResp) {
        if let Some(d) = self.device_info() {
            r.node_guid = d.node_guid;
            r.ibdev_index = d.index;
            // CAST: port numbers of rdma devices fit the u8 of the uAPI.
            r.port_num = d.port_num as u8;
            r.pkey = d.pkey;
        }
    }

    /// QUERY ADDR: both addresses at their full size, and the device facts.
    pub(crate) fn query_addr(&self) -> QueryAddrResp {
        let mut r = QueryAddrResp::new_zeroed();
        let id = self.raw();
        // Straight into the reply, each address's own bytes only (as C
        // copies them), the family read first for the size: this is the
        // cheapest successful command, and every copy shows.
        // SAFETY: `id` is live, so both addresses are valid for reads of a
        // whole `__kernel_sockaddr_storage`; they are taken without making
        // references.
        let (ss, ds) = unsafe {
            (
                sockaddr_bytes_sized(&raw const (*id).route.addr.src_addr, &mut r.src_addr),
                sockaddr_bytes_sized(&raw const (*id).route.addr.dst_addr, &mut r.dst_addr),
            )
        };
        // CAST: address sizes are at most 48.
        (r.src_size, r.dst_size) = (ss as u16, ds as u16);
        self.fill_device(&mut r);
        r
    }

    /// QUERY GID: both addresses as `struct sockaddr_ib`, synthesised from
    /// the GIDs and service id for IP addresses.
    pub(crate) fn query_gid(&self) -> QueryAddrResp {
        let mut r = QueryAddrResp::new_zeroed();
        self.fill_device(&mut r);
        let pkey = r.pkey;
        let mut sgid: sys::ib_gid = Default::default();
        let mut dgid: sys::ib_gid = Default::default();
        // SAFETY: the id is live; both GIDs are valid for writes.
        unsafe { sys::rdma_read_gids(self.raw(), &mut sgid, &mut dgid) };
        let (src, dst) = self.addrs();
        let id = self.raw();
        let src_sid = || {
            // SAFETY: the id is live; the address is its own, passed as a raw
            // pointer (rdma_get_service_id only reads it).
            unsafe { sys::rdma_get_service_id(id, (&raw mut (*id).route.addr.src_addr).cast()) }
        };
        sockaddr_ib(&mut r.src_addr, &src, pkey, &sgid, src_sid);
        let dst_sid = || {
            // SAFETY: as above.
            unsafe { sys::rdma_get_service_id(id, (&raw mut (*id).route.addr.dst_addr).cast()) }
        };
        sockaddr_ib(&mut r.dst_addr, &dst, pkey, &dgid, dst_sid);
        (r.src_size, r.dst_size) = (SOCKADDR_IB_SIZE as u16, SOCKADDR_IB_SIZE as u16);
        r
    }

    /// QUERY PATH: `num_paths` and as many `struct ib_path_rec_data` as fit
    /// in `out_len` bytes. Returns the reply and how many bytes of it to copy.
    pub(crate) fn query_path(&self, out_len: usize) -> Result<(KVec<u8>, usize)> {
        let total = self.num_paths();
        let room = out_len.saturating_sub(8) / PATH_REC_DATA_SIZE;
        let n = total.min(room);
        let len = 8 + n * PATH_REC_DATA_SIZE;
        let mut out = KVec::from_elem(0u8, len, GFP_KERNEL)?;
        // CAST: at most 2 (RDMA_PRIMARY_PATH_MAX_REC_NUM).
        out[0..4].copy_from_slice(&(total as u32).to_ne_bytes());
        for i in 0..n {
            let off = 8 + i * PATH_REC_DATA_SIZE;
            out[off..off + 4].copy_from_slice(&PATH_FLAGS_PRIMARY.to_ne_bytes());
            let mut rec = self.path_rec(i);
            if rec.rec_type == sys::sa_path_rec_type_SA_PATH_REC_TYPE_OPA {
                let mut ib: sys::sa_path_rec = Default::default();
                // SAFETY: both records are valid.
                unsafe { sys::ucma_shim_path_opa_to_ib(&mut ib, &mut rec) };
                rec = ib;
            }
            let mut wire = [0u8; 64];
            // SAFETY: `rec` is valid; `wire` has room for the 64-byte wire format.
            unsafe { sys::ib_sa_pack_path(&mut rec, wire.as_mut_ptr().cast()) };
            out[off + 8..off + 72].copy_from_slice(&wire);
        }
        Ok((out, len))
    }

    /// QUERY IB_SERVICE: `num_service_recs` and as many records as fit in
    /// `out_len` bytes (`ENODATA` when no service was resolved). The reply
    /// is empty, and nothing is copied, when not one record fits, as in C.
    pub(crate) fn query_ib_service(&self, out_len: usize) -> Result<KVec<u8>> {
        const REC: usize = core::mem::size_of::<sys::ib_user_service_rec>();
        // C copies the kernel's records as the uAPI's, byte for byte.
        const _: () = assert!(core::mem::size_of::<sys::sa_service_rec>() == REC);
        // SAFETY: as in `device`.
        let (recs, num) = unsafe {
            let route = &raw const (*self.raw()).route;
            ((*route).service_recs, (*route).num_service_recs)
        };
        if recs.is_null() {
            return Err(ENODATA);
        }
        let total = usize::try_from(num).unwrap_or(0);
        let n = (out_len.saturating_sub(QUERY_IB_SERVICE_RESP_SIZE) / REC).min(total);
        if n == 0 {
            return Ok(KVec::new());
        }
        let len = QUERY_IB_SERVICE_RESP_SIZE + n * REC;
        let mut out = KVec::from_elem(0u8, len, GFP_KERNEL)?;
        out[0..4].copy_from_slice(&num.to_ne_bytes());
        // SAFETY: `service_recs` holds `num_service_recs` records and `n` is
        // at most that; `out` has room for `n` of them after the header.
        unsafe {
            core::ptr::copy_nonoverlapping(
                recs.cast::<u8>(),
                out[QUERY_IB_SERVICE_RESP_SIZE..].as_mut_ptr(),
                n * REC,
            )
        };
        Ok(out)
    }

    /// QUERY_ROUTE: addresses (as `sockaddr_in6`), device facts and paths.
    pub(crate) fn query_route(&self) -> QueryRouteResp {
        let mut r = QueryRouteResp::new_zeroed();
        let (src, dst) = self.addrs();
        let in6 = |a: &[u8]| {
            if family(a) == AF_INET {
                16
            } else {
                SOCKADDR_IN6_SIZE
            }
        };
        let (ss, ds) = (in6(&src), in6(&dst));
        r.src_addr[..ss].copy_from_slice(&src[..ss]);
        r.dst_addr[..ds].copy_from_slice(&dst[..ds]);
        let Some(d) = self.device_info() else {
            return r;
        };
        r.node_guid = d.node_guid;
        r.ibdev_index = d.index;
        // CAST: port numbers of rdma devices fit the u8 of the uAPI.
        r.port_num = d.port_num as u8;
        let (device, port) = (self.device(), self.port_num());
        let mut dev_addr = self.dev_addr();
        let gid_bytes = |g: &sys::ib_gid, out: &mut [u8]| {
            // SAFETY: a GID is 16 plain bytes.
            out.copy_from_slice(unsafe { g.raw.as_ref() });
        };
        let mut sgid: sys::ib_gid = Default::default();
        let mut dgid: sys::ib_gid = Default::default();
        // ib_user_path_rec: dgid @0, sgid @16, ..., pkey (be16) @52.
        let copy_paths = |r: &mut QueryRouteResp| {
            let n = self.num_paths();
            // CAST: the stored count's bit image, as C copies it.
            r.num_paths = self.num_pri_alt_paths() as u32;
            for i in 0..n {
                let mut up: sys::ib_user_path_rec = Default::default();
                let mut rec = self.path_rec(i);
                // SAFETY: both records are valid locals.
                unsafe { sys::ib_copy_path_rec_to_user(&mut up, &mut rec) };
                // SAFETY: `ib_user_path_rec` is a uAPI struct without padding.
                let b = unsafe { c_bytes(&up) };
                r.ib_route[i][..b.len().min(USER_PATH_REC_SIZE)]
                    .copy_from_slice(&b[..b.len().min(USER_PATH_REC_SIZE)]);
            }
            n
        };
        // SAFETY: (all three branches) the device is live while the id is
        // bound to it; the GIDs and `dev_addr` are valid local copies.
        unsafe {
            if sys::ucma_shim_cap_ib_sa(device, port) {
                if copy_paths(&mut r) == 0 {
                    sys::ucma_shim_addr_get_dgid(&mut dev_addr, &mut dgid);
                    sys::ucma_shim_addr_get_sgid(&mut dev_addr, &mut sgid);
                    gid_bytes(&dgid, &mut r.ib_route[0][0..16]);
                    gid_bytes(&sgid, &mut r.ib_route[0][16..32]);
                    let pkey = sys::ucma_shim_addr_get_pkey(&mut dev_addr).to_be();
                    r.ib_route[0][52..54].copy_from_slice(&pkey.to_ne_bytes());
                }
            } else if sys::ucma_shim_protocol_roce(device, port) {
                if copy_paths(&mut r) == 0 {
                    let mut s = SockAddr::from_bytes(&src);
                    let mut t = SockAddr::from_bytes(&dst);
                    sys::ucma_shim_ip2gid(t.as_mut_ptr(), &mut dgid);
                    sys::ucma_shim_ip2gid(s.as_mut_ptr(), &mut sgid);
                    gid_bytes(&dgid, &mut r.ib_route[0][0..16]);
                    gid_bytes(&sgid, &mut r.ib_route[0][16..32]);
                    r.ib_route[0][52..54].copy_from_slice(&0xffffu16.to_be().to_ne_bytes());
                }
            } else if sys::ucma_shim_protocol_iwarp(device, port) {
                sys::ucma_shim_addr_get_dgid(&mut dev_addr, &mut dgid);
                sys::ucma_shim_addr_get_sgid(&mut dev_addr, &mut sgid);
                gid_bytes(&dgid, &mut r.ib_route[0][0..16]);
                gid_bytes(&sgid, &mut r.ib_route[0][16..32]);
            }
        }
        r
    }
}

/// Size of the kernel's `struct sockaddr_ib`.
const SOCKADDR_IB_SIZE: usize = 48;

/// Writes a `struct sockaddr_ib` for QUERY GID into `out`: the stored
/// address when it is AF_IB already, else one built from `gid`, `pkey` and
/// the service id.
fn sockaddr_ib(
    out: &mut [u8],
    stored: &[u8],
    pkey: u16,
    gid: &sys::ib_gid,
    sid: impl FnOnce() -> u64,
) {
    if family(stored) == AF_IB {
        out[..SOCKADDR_IB_SIZE].copy_from_slice(&stored[..SOCKADDR_IB_SIZE]);
        return;
    }
    out[0..2].copy_from_slice(&AF_IB.to_ne_bytes());
    out[2..4].copy_from_slice(&pkey.to_ne_bytes());
    // SAFETY: a GID is 16 plain bytes.
    out[8..24].copy_from_slice(unsafe { gid.raw.as_ref() });
    out[24..32].copy_from_slice(&sid().to_ne_bytes());
}

/// Device facts of a bound id.
pub(crate) struct DeviceInfo {
    /// Node GUID, as stored (network byte order).
    pub(crate) node_guid: u64,
    /// `ib_device->index`.
    pub(crate) index: u32,
    /// Port number.
    pub(crate) port_num: u32,
    /// P_Key, network byte order.
    pub(crate) pkey: u16,
}

/// The new id of a connect request, inside its handler.
///
/// # Invariants
///
/// `ptr` is the live id rdma_cm created for the request; its handler (this
/// one) is running, so no other handler runs for it.
pub(crate) struct ConnectRequest {
    ptr: NonNull<sys::rdma_cm_id>,
}

impl ConnectRequest {
    /// The new id, for building the request's event.
    pub(crate) fn as_ref(&self) -> CmIdRef<'_> {
        // INVARIANT: the new id is live while its handler runs.
        CmIdRef {
            ptr: self.ptr,
            _p: core::marker::PhantomData,
        }
    }

    /// Takes ownership of the new id. Until the [`Unattached`] is attached,
    /// returning an error from the handler still lets rdma_cm destroy the id
    /// (the `CmId` must then be dropped unused); once attached, the handler
    /// must return 0.
    pub(crate) fn into_cm_id(self) -> (CmId, Unattached) {
        // SAFETY: the id's handler (this one) runs, so nothing else reads
        // `context`; clearing the listener's borrowed pointer establishes the
        // `CmId` invariant.
        unsafe { (*self.ptr.as_ptr()).context = core::ptr::null_mut() };
        // INVARIANT: live id with our handler, null context.
        (CmId { ptr: self.ptr }, Unattached { ptr: self.ptr })
    }
}

/// The right to set the context of a new id, once.
///
/// # Invariants
///
/// `ptr` is a live id with a null context, and no event handler can run for
/// it concurrently: it was just created and not used yet, or its
/// connect-request handler is running.
pub(crate) struct Unattached {
    ptr: NonNull<sys::rdma_cm_id>,
}

impl Unattached {
    /// Makes `ctx` the context the id's events are delivered to; the id owns
    /// that reference until [`CmId::destroy`].
    pub(crate) fn attach(self, ctx: Arc<Context>) {
        let raw = Arc::into_raw(ctx).cast_mut().cast::<c_void>();
        // SAFETY: by the invariant the id is live and its context is neither
        // read nor written concurrently.
        unsafe { (*self.ptr.as_ptr()).context = raw };
    }

    /// Destroys an id that never got a context (its owner could not be built).
    pub(crate) fn destroy(self) {
        // SAFETY: by the invariant the id is live and unattached, and its
        // `CmId` was dropped unused, so this is the only destruction.
        unsafe { sys::rdma_destroy_id(self.ptr.as_ptr()) };
    }
}

/// An rdma_cm event, borrowed for the duration of the handler.
pub(crate) struct CmEvent<'a> {
    ev: &'a sys::rdma_cm_event,
}

impl CmEvent<'_> {
    /// `enum rdma_cm_event_type`.
    pub(crate) fn kind(&self) -> u32 {
        self.ev.event
    }

    /// Whether this is a multicast join event.
    pub(crate) fn is_multicast(&self) -> bool {
        matches!(self.ev.event, EVENT_MULTICAST_JOIN | EVENT_MULTICAST_ERROR)
    }

    /// For a multicast event: the join it belongs to.
    pub(crate) fn multicast(&self) -> Option<Arc<Multicast>> {
        if !self.is_multicast() {
            return None;
        }
        // SAFETY: for multicast events rdma_cm fills the `ud` branch.
        let ptr = unsafe { self.ev.param.ud.as_ref().private_data };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: multicast events carry the context given to
        // `join_multicast`: an `Arc<Multicast>` kept alive by the context's
        // join list until leave or destroy returns, and those wait for the
        // handler.
        let mc: ArcBorrow<'_, Multicast> = unsafe { ArcBorrow::from_raw(ptr.cast()) };
        Some(mc.into())
    }

    /// Builds the user's image of this event for a context whose id has QP
    /// type `qp_type` (which selects the `conn` or `ud` branch of `param`,
    /// as in C: for a connect request, the listener's). `id_dev` is the id
    /// the event came with, whose device converts a UD address handle.
    pub(crate) fn to_resp(
        &self,
        uid: u64,
        id: u32,
        qp_type: u32,
        id_dev: CmIdRef<'_>,
    ) -> EventResp {
        let mut r = EventResp {
            uid,
            id,
            event: self.ev.event,
            // CAST: the status is a negative errno or a reject reason, passed as its bit image.
            status: self.ev.status as u32,
            param: [0; 304],
            reserved: 0,
            ece: Ece {
                vendor_id: self.ev.ece.vendor_id,
                attr_mod: self.ev.ece.attr_mod,
            },
        };
        if self.ev.event == EVENT_ADDRINFO_RESOLVED {
            return r;
        }
        if qp_type == QPT_UD {
            self.fill_ud(&mut r.param, id_dev);
        } else {
            self.fill_conn(&mut r.param);
        }
        r
    }

    fn private_data(&self, ptr: *const c_void, len: u8) -> &[u8] {
        if ptr.is_null() || len == 0 {
            return &[];
        }
        // SAFETY: rdma_cm gives `len` readable bytes at `ptr` for the event's lifetime.
        unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), len.into()) }
    }

    fn fill_conn(&self, out: &mut [u8; 304]) {
        // SAFETY: the `conn` branch is the one filled for non-UD ids.
        let c = unsafe { self.ev.param.conn.as_ref() };
        let pd = self.private_data(c.private_data, c.private_data_len);
        // Layout of struct rdma_ucm_conn_param (see ucma_core::uapi::ConnParam).
        out[0..4].copy_from_slice(&c.qp_num.to_ne_bytes());
        out[8..8 + pd.len()].copy_from_slice(pd);
        out[264] = c.private_data_len;
        out[265] = c.srq;
        out[266] = c.responder_resources;
        out[267] = c.initiator_depth;
        out[268] = c.flow_control;
        out[269] = c.retry_count;
        out[270] = c.rnr_retry_count;
    }

    fn fill_ud(&self, out: &mut [u8; 304], id_dev: CmIdRef<'_>) {
        // SAFETY: the `ud` branch is the one filled for UD ids.
        let u = unsafe { self.ev.param.ud.as_ref() };
        let pd = self.private_data(u.private_data, u.private_data_len);
        // Layout of struct rdma_ucm_ud_param (see ucma_core::uapi::UdParam).
        out[0..4].copy_from_slice(&u.qp_num.to_ne_bytes());
        out[4..8].copy_from_slice(&u.qkey.to_ne_bytes());
        let mut ah: sys::ib_uverbs_ah_attr = Default::default();
        let src = core::ptr::from_ref(&u.ah_attr).cast_mut();
        // SAFETY: the device is that of the id the event came with: live
        // during the handler, or null for an unbound id, which
        // `ib_copy_ah_attr_to_user` accepts (it uses the device only to
        // convert an OPA address handle, which only a bound id on an OPA
        // port receives). C passes the listener's device for a connect
        // request, null for a wildcard listener; this passes the new id's.
        // `ah` is a valid local and `src` is only read.
        unsafe { sys::ib_copy_ah_attr_to_user(id_dev.device(), &mut ah, src) };
        // SAFETY: `ib_uverbs_ah_attr` is a uAPI struct without padding.
        let ah = unsafe { c_bytes(&ah) };
        out[8..8 + ah.len()].copy_from_slice(ah);
        out[40..40 + pd.len()].copy_from_slice(pd);
        out[296] = u.private_data_len;
    }
}

/// The event handler of every id the module creates.
///
/// # Safety
///
/// Called by rdma_cm with a live id created with this handler and a valid
/// event, under the id's handler lock, in process context.
unsafe extern "C" fn cm_event_handler(
    id: *mut sys::rdma_cm_id,
    event: *mut sys::rdma_cm_event,
) -> c_int {
    // SAFETY: `id` is live for the duration of the handler.
    let context = unsafe { (*id).context };
    if context.is_null() {
        // Not attached yet (see `Unattached::attach`): nothing can be delivered.
        return 0;
    }
    // SAFETY: a non-null context is an `Arc<Context>` owned by the id (the
    // listener's, for a connect request's new id), alive while the handler runs.
    let ctx: ArcBorrow<'_, Context> = unsafe { ArcBorrow::from_raw(context.cast_const().cast()) };
    // SAFETY: `event` is valid for the duration of the handler.
    let ev = unsafe { &*event };
    let ev = CmEvent { ev };
    // SAFETY: `id` is non-null and live.
    let ptr = unsafe { NonNull::new_unchecked(id) };
    if ev.kind() == EVENT_CONNECT_REQUEST {
        // INVARIANT: the new id, inside its handler.
        let req = ConnectRequest { ptr };
        return match Context::connect_request(ctx, req, &ev) {
            Ok(()) => 0,
            // -ENOMEM: ib_cm drops the request without a reject; the peer retries.
            Err(_) => ENOMEM.to_errno(),
        };
    }
    // INVARIANT: `id` is live for the handler's duration.
    let idref = CmIdRef {
        ptr,
        _p: core::marker::PhantomData,
    };
    Context::event(ctx, idref, &ev);
    0
}
