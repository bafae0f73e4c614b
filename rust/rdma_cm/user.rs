// SPDX-License-Identifier: GPL-2.0

//! The uCMA extension of the rdma_cm abstraction: what only a bridge from
//! userspace to rdma_cm needs.
//!
//! C header: [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h),
//! [`include/rdma/ib_marshall.h`](srctree/include/rdma/ib_marshall.h)
//!
//! - Ids of users: `rdma_create_user_id()` makes an id in the calling task's
//!   network namespace, accounted to that task ([`CmId::new_user`]).
//! - Their handler lock: `rdma_accept()` requires it, and a user's id is
//!   accepted from a command, not from its handler
//!   ([`CmId::lock_handler`]).
//! - IB service resolution from its uAPI struct
//!   ([`CmId::resolve_ib_service`]).
//! - The uverbs images of what rdma_cm reports: QP attributes
//!   ([`QpAttr::to_uverbs`]), address handles ([`AhAttr::to_uverbs`]) and
//!   path records ([`RdmaCmId::user_path_rec`]).
//!
//! A child module of the generic abstraction: it builds on its private
//! parts (the id's pointer, the handler-lock guard), which nothing outside
//! the two can reach.

use kernel::{
    error::to_result,
    prelude::*,
    transmute::{
        AsBytes,
        FromBytes, //
    },
};

use super::sys;
use super::{
    cm_event_handler,
    AhAttr,
    CmHandler,
    CmId,
    HandlerGuard,
    PortSpace,
    QpAttr,
    QpType,
    RdmaCmId,
    SERVICE_REC_SIZE, //
};

/// The image of a `struct ib_uverbs_qp_attr`.
pub type UverbsQpAttr = [u8; core::mem::size_of::<sys::ib_uverbs_qp_attr>()];

/// The image of a `struct ib_uverbs_ah_attr`.
pub type UverbsAhAttr = [u8; core::mem::size_of::<sys::ib_uverbs_ah_attr>()];

/// The image of a `struct ib_user_path_rec`.
pub type UserPathRec = [u8; core::mem::size_of::<sys::ib_user_path_rec>()];

/// The image of a `struct rdma_ucm_ib_service`.
pub type IbServiceImage = [u8; core::mem::size_of::<sys::rdma_ucm_ib_service>()];

// C copies the kernel's service records as the uAPI's, byte for byte.
const _: () = assert!(core::mem::size_of::<sys::ib_user_service_rec>() == SERVICE_REC_SIZE);

/// Copies a plain C struct into an array of its size.
fn image<T: AsBytes, const N: usize>(v: &T) -> [u8; N] {
    let mut out = [0u8; N];
    let b = v.as_bytes();
    let n = N.min(b.len());
    out[..n].copy_from_slice(&b[..n]);
    out
}

impl<H: CmHandler> CmId<H> {
    /// `rdma_create_user_id()`: a new id in the calling task's network
    /// namespace, without a handler object: its events are ignored until
    /// [`CmId::attach`] gives it one (an id is quiet until it is used).
    /// `ESRCH` from a task that has left its namespaces (exiting, closing
    /// the files it left open).
    pub fn new_user(ps: PortSpace, qp_type: QpType) -> Result<Self> {
        // SAFETY: the handler is a valid `rdma_cm_event_handler`; a null
        // context is allowed and handled by it. The helper checks the calling
        // task's namespaces, which rdma_create_user_id() dereferences.
        let raw = unsafe {
            sys::rdma_create_user_id_checked(
                Some(cm_event_handler::<H>),
                core::ptr::null_mut(),
                ps.0,
                qp_type.0,
            )
        };
        // SAFETY: `raw` is what rdma_create_user_id() returned for our
        // handler and a null context.
        unsafe { Self::from_created(raw) }
    }

    /// Takes the id's handler lock: no event handler runs for it until the
    /// guard is dropped. (Taken by the handler of the id itself, a connect
    /// request's included, it deadlocks.)
    pub fn lock_handler(&self) -> HandlerGuard<'_, H> {
        // SAFETY: `ptr` is live.
        unsafe { sys::rdma_lock_handler(self.used_raw()) };
        // INVARIANT: the lock was taken above; the guard releases it.
        HandlerGuard { id: self }
    }

    /// `rdma_resolve_ib_service()` with a `struct rdma_ucm_ib_service` image.
    pub fn resolve_ib_service(&self, ibs: &IbServiceImage) -> Result {
        let mut svc = sys::rdma_ucm_ib_service::from_bytes_copy(ibs).ok_or(EINVAL)?;
        // SAFETY: `ptr` is live; `svc` is valid for the call.
        to_result(unsafe { sys::rdma_resolve_ib_service(self.used_raw(), &mut svc) })
    }
}

impl RdmaCmId {
    /// Path record `i` as `ib_copy_path_rec_to_user()` writes it.
    // Inline: ib_copy_*_to_user() are ib_uverbs's (a module even where
    // rdma_cm is built in), so in a kernel tree their callers are compiled
    // into the module that uses them, not into the kernel crate.
    #[inline]
    pub fn user_path_rec(&self, i: usize) -> Option<UserPathRec> {
        let mut rec = self.path_rec(i)?;
        let mut up: sys::ib_user_path_rec = Default::default();
        // SAFETY: both records are valid locals.
        unsafe { sys::ib_copy_path_rec_to_user(&mut up, &mut rec) };
        Some(image(&up))
    }
}

impl QpAttr<'_> {
    /// The attributes as `ib_copy_qp_attr_to_user()` writes them for
    /// uverbs (the mask included).
    // Inline: ib_copy_*_to_user() are ib_uverbs's (a module even where
    // rdma_cm is built in), so in a kernel tree their callers are compiled
    // into the module that uses them, not into the kernel crate.
    #[inline]
    pub fn to_uverbs(&self) -> UverbsQpAttr {
        let mut resp = sys::ib_uverbs_qp_attr {
            qp_attr_mask: self.mask(),
            ..Default::default()
        };
        let src = core::ptr::from_ref(&self.attr).cast_mut();
        // SAFETY: by the type's invariant the id has a device, live while
        // the id is; `resp` is a valid local and `src` is only read.
        unsafe { sys::ib_copy_qp_attr_to_user(self.id.device(), &mut resp, src) };
        image(&resp)
    }
}

impl AhAttr<'_> {
    /// The address handle as `ib_copy_ah_attr_to_user()` writes it,
    /// converted with the device of the event's id.
    // Inline: ib_copy_*_to_user() are ib_uverbs's (a module even where
    // rdma_cm is built in), so in a kernel tree their callers are compiled
    // into the module that uses them, not into the kernel crate.
    #[inline]
    pub fn to_uverbs(&self) -> UverbsAhAttr {
        let mut ah: sys::ib_uverbs_ah_attr = Default::default();
        let src = core::ptr::from_ref(self.attr).cast_mut();
        // SAFETY: the device is that of the event's id, live while the
        // handler runs (which `self` does not outlive): a live device while
        // the id is bound (rdma_cm reports an address handle only for an id
        // bound to the device it came through), or null for an unbound id,
        // which `ib_copy_ah_attr_to_user` accepts (it uses the device only
        // to convert an OPA address handle, which only an id bound to an
        // OPA port receives). `ah` is a valid local and `src` is only read.
        unsafe { sys::ib_copy_ah_attr_to_user(self.id.device(), &mut ah, src) };
        image(&ah)
    }
}
