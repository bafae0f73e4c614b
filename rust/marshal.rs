// SPDX-License-Identifier: GPL-2.0

//! uCMA marshalling: the user's connection parameters into rdma_cm's, and
//! rdma_cm's state into the replies of GET_EVENT and QUERY (`ucma.c`'s
//! `ucma_copy_conn_param`, `ucma_copy_conn_event`, `ucma_copy_ud_event`,
//! `ucma_query_*`).
//!
//! Every reply is one of `ucma_core`'s zerocopy structs, filled field by
//! field and copied out with `IntoBytes`; `abi_check.rs` ties each to the
//! bindgen'd header. rdma_cm's state is read only through the typed
//! accessors of [`crate::rdma_cm`].

#![forbid(unsafe_code)]

use zerocopy::{
    FromZeros,
    IntoBytes, //
};

use kernel::prelude::*;

use crate::{
    memcg::GFP_ACCOUNTED,
    rdma_cm::{
        ip_to_gid,
        CmEvent,
        CmHandler,
        ConnEventParam,
        ConnParams,
        EventType,
        Gid,
        PortProtocol,
        QpType,
        RdmaCmId,
        Side,
        SockAddr,
        SERVICE_REC_SIZE, //
    },
    ucma_core::{
        addr::{
            addr_size,
            AF_IB,
            AF_INET, //
        },
        uapi::{
            ConnParam,
            Ece,
            EventResp,
            PathRecData,
            QueryAddrResp,
            QueryIbServiceResp,
            QueryPathResp,
            QueryRouteResp,
            SockaddrIb,
            UdParam,
            UserPathRec,
            EVENT_PARAM_SIZE,
            PATH_FLAGS_PRIMARY,
            SOCKADDR_IN6_SIZE,
            USER_SERVICE_REC_SIZE, //
        },
    },
};

// The event's `param` union holds either branch.
const _: () = {
    assert!(core::mem::size_of::<ConnParam>() <= EVENT_PARAM_SIZE);
    assert!(core::mem::size_of::<UdParam>() <= EVENT_PARAM_SIZE);
    assert!(SERVICE_REC_SIZE == USER_SERVICE_REC_SIZE);
};

/// The ECE of a command, as rdma_cm takes it.
pub(crate) fn ece(e: &Ece) -> crate::rdma_cm::Ece {
    crate::rdma_cm::Ece {
        vendor_id: e.vendor_id,
        attr_mod: e.attr_mod,
    }
}

/// `ucma_copy_conn_param`: the user's parameters for connect or accept on
/// `id`. The QP number keeps its 24 bits; the Q_Key is the user's only for
/// an AF_IB id.
pub(crate) fn conn_params<'a>(id: &RdmaCmId, src: &'a ConnParam) -> ConnParams<'a> {
    let len = usize::from(src.private_data_len).min(src.private_data.len());
    ConnParams {
        private_data: &src.private_data[..len],
        qp_num: src.qp_num & 0xff_ffff,
        qkey: if id.family(Side::Src) == AF_IB {
            src.qkey
        } else {
            0
        },
        srq: src.srq,
        responder_resources: src.responder_resources,
        initiator_depth: src.initiator_depth,
        flow_control: src.flow_control,
        retry_count: src.retry_count,
        rnr_retry_count: src.rnr_retry_count,
    }
}

/// Copies `pd` into the start of `out` (at most `out.len()` bytes).
fn copy_private_data(out: &mut [u8], pd: &[u8]) {
    let n = pd.len().min(out.len());
    out[..n].copy_from_slice(&pd[..n]);
}

/// The user's image of event `ev` for a context whose id has QP type
/// `qp_type` (which selects the `conn` or `ud` branch of `param`, as in C:
/// for a connect request, the listener's). A UD address handle is
/// converted with the device of the id the event came with: for a connect
/// request the new id's, where C passes the listener's (null for a
/// wildcard listener); only an OPA address handle, which only a bound id on
/// an OPA port receives, is converted with it.
pub(crate) fn event_resp<H: CmHandler>(
    ev: &CmEvent<'_, H>,
    uid: u64,
    id: u32,
    qp_type: QpType,
) -> EventResp {
    let mut r = EventResp::new_zeroed();
    write_event_resp(ev, uid, id, qp_type, &mut r);
    r
}

/// [`event_resp`] written in place, over whatever `r` held: into a spare
/// event's image, without the two copies of the 336-byte image that
/// building it apart and moving it in cost.
pub(crate) fn write_event_resp<H: CmHandler>(
    ev: &CmEvent<'_, H>,
    uid: u64,
    id: u32,
    qp_type: QpType,
    r: &mut EventResp,
) {
    let e = ev.ece();
    r.uid = uid;
    r.id = id;
    r.event = ev.kind().as_raw();
    // CAST: the status is a negative errno or a reject reason, passed as its bit image.
    r.status = ev.status() as u32;
    r.param = [0; EVENT_PARAM_SIZE];
    r.reserved = 0;
    r.ece = Ece {
        vendor_id: e.vendor_id,
        attr_mod: e.attr_mod,
    };
    if ev.kind() == EventType::ADDRINFO_RESOLVED {
        return;
    }
    if qp_type == QpType::UD {
        let u = ev.ud();
        let mut p = UdParam::new_zeroed();
        p.qp_num = u.qp_num;
        p.qkey = u.qkey;
        p.ah_attr = u.ah_attr.to_uverbs();
        copy_private_data(&mut p.private_data, u.private_data);
        p.private_data_len = u.private_data_len;
        let b = p.as_bytes();
        r.param[..b.len()].copy_from_slice(b);
    } else {
        // `ucma_copy_conn_event`: all but the Q_Key.
        let ConnEventParam {
            params: c,
            private_data_len,
        } = ev.conn();
        let mut p = ConnParam::new_zeroed();
        p.qp_num = c.qp_num;
        copy_private_data(&mut p.private_data, c.private_data);
        p.private_data_len = private_data_len;
        p.srq = c.srq;
        p.responder_resources = c.responder_resources;
        p.initiator_depth = c.initiator_depth;
        p.flow_control = c.flow_control;
        p.retry_count = c.retry_count;
        p.rnr_retry_count = c.rnr_retry_count;
        let b = p.as_bytes();
        r.param[..b.len()].copy_from_slice(b);
    }
}

/// The device facts of QUERY ADDR and GID.
fn fill_device(id: &RdmaCmId, r: &mut QueryAddrResp) {
    if let Some(d) = id.device_info() {
        r.node_guid = d.node_guid;
        r.ibdev_index = d.index;
        // CAST: port numbers of rdma devices fit the u8 of the uAPI.
        r.port_num = d.port_num as u8;
        r.pkey = d.pkey;
    }
}

/// Copies one of `id`'s addresses into `out`, its own bytes only (as C
/// copies them, the family read first for the size); returns that size.
fn read_sized_addr(id: &RdmaCmId, side: Side, out: &mut [u8]) -> u16 {
    let fam = id.family(side).to_ne_bytes();
    let n = addr_size(&fam).min(out.len());
    id.read_addr(side, &mut out[..n]);
    // CAST: address sizes are at most 128.
    n as u16
}

/// QUERY ADDR: both addresses at their own size, and the device facts.
pub(crate) fn query_addr(id: &RdmaCmId, r: &mut QueryAddrResp) {
    r.src_size = read_sized_addr(id, Side::Src, &mut r.src_addr);
    r.dst_size = read_sized_addr(id, Side::Dst, &mut r.dst_addr);
    fill_device(id, r);
}

/// The `struct sockaddr_ib` QUERY GID reports for one of `id`'s addresses:
/// the address itself when it is AF_IB already, else one made of `gid`,
/// `pkey` and the service id.
fn sockaddr_ib(id: &RdmaCmId, side: Side, pkey: u16, gid: Gid, out: &mut [u8]) {
    let size = core::mem::size_of::<SockaddrIb>();
    if id.family(side) == AF_IB {
        id.read_addr(side, &mut out[..size]);
        return;
    }
    let mut sib = SockaddrIb::new_zeroed();
    sib.sib_family = AF_IB;
    sib.sib_pkey = pkey;
    sib.sib_addr = gid;
    sib.sib_sid = id.service_id(side);
    out[..size].copy_from_slice(sib.as_bytes());
}

/// QUERY GID: both addresses as `struct sockaddr_ib`, made from the GIDs
/// and service ids for IP addresses.
pub(crate) fn query_gid(id: &RdmaCmId, r: &mut QueryAddrResp) {
    fill_device(id, r);
    let (sgid, dgid) = id.read_gids();
    sockaddr_ib(id, Side::Src, r.pkey, sgid, &mut r.src_addr);
    sockaddr_ib(id, Side::Dst, r.pkey, dgid, &mut r.dst_addr);
    // CAST: 48 bytes.
    let size = core::mem::size_of::<SockaddrIb>() as u16;
    (r.src_size, r.dst_size) = (size, size);
}

/// A path made of the GIDs only (and a P_Key), as QUERY_ROUTE reports a
/// route without path records.
fn gid_path(dgid: Gid, sgid: Gid, pkey: u16) -> UserPathRec {
    let mut p = UserPathRec::new_zeroed();
    p.dgid = dgid;
    p.sgid = sgid;
    p.pkey = pkey;
    p
}

/// Copies `id`'s path records into the reply; returns how many.
fn copy_paths(id: &RdmaCmId, r: &mut QueryRouteResp) -> usize {
    let n = id.num_paths();
    // CAST: the stored count's bit image, as C copies it.
    r.num_paths = id.num_pri_alt_paths() as u32;
    for (i, slot) in r.ib_route.iter_mut().enumerate().take(n) {
        if let Some(rec) = id.user_path_rec(i) {
            slot.as_mut_bytes().copy_from_slice(&rec);
        }
    }
    n
}

/// QUERY_ROUTE: addresses (as `sockaddr_in6`), device facts and paths.
pub(crate) fn query_route(id: &RdmaCmId) -> QueryRouteResp {
    let mut r = QueryRouteResp::new_zeroed();
    let (src, dst) = (id.addr(Side::Src), id.addr(Side::Dst));
    let in6 = |a: &SockAddr| {
        if a.family() == AF_INET {
            16
        } else {
            SOCKADDR_IN6_SIZE
        }
    };
    let (ss, ds) = (in6(&src), in6(&dst));
    r.src_addr[..ss].copy_from_slice(&src.as_bytes()[..ss]);
    r.dst_addr[..ds].copy_from_slice(&dst.as_bytes()[..ds]);
    let Some(d) = id.device_info() else {
        return r;
    };
    r.node_guid = d.node_guid;
    r.ibdev_index = d.index;
    // CAST: port numbers of rdma devices fit the u8 of the uAPI.
    r.port_num = d.port_num as u8;
    match id.port_protocol() {
        Some(PortProtocol::IbSa) => {
            if copy_paths(id, &mut r) == 0 {
                let (dgid, sgid) = id.dev_addr_gids();
                r.ib_route[0] = gid_path(dgid, sgid, id.dev_addr_pkey());
            }
        }
        Some(PortProtocol::Roce) => {
            if copy_paths(id, &mut r) == 0 {
                r.ib_route[0] = gid_path(ip_to_gid(&dst), ip_to_gid(&src), 0xffffu16.to_be());
            }
        }
        Some(PortProtocol::Iwarp) => {
            let (dgid, sgid) = id.dev_addr_gids();
            r.ib_route[0] = gid_path(dgid, sgid, 0);
        }
        Some(PortProtocol::Other) | None => {}
    }
    r
}

/// QUERY PATH: `num_paths` and as many `struct ib_path_rec_data` as fit in
/// `out_len` bytes.
pub(crate) fn query_path(id: &RdmaCmId, out_len: usize) -> Result<KVec<u8>> {
    let hdr = core::mem::size_of::<QueryPathResp>();
    let rec_size = core::mem::size_of::<PathRecData>();
    let total = id.num_paths();
    let n = total.min(out_len.saturating_sub(hdr) / rec_size);
    let mut out = KVec::with_capacity(hdr + n * rec_size, GFP_ACCOUNTED)?;
    let head = QueryPathResp {
        // CAST: at most 2 (RDMA_PRIMARY_PATH_MAX_REC_NUM).
        num_paths: total as u32,
        reserved: 0,
    };
    out.extend_from_slice(head.as_bytes(), GFP_ACCOUNTED)?;
    for i in 0..n {
        let mut rec = PathRecData::new_zeroed();
        rec.flags = PATH_FLAGS_PRIMARY;
        if let Some(wire) = id.path_rec_wire(i) {
            rec.path_rec = wire;
        }
        out.extend_from_slice(rec.as_bytes(), GFP_ACCOUNTED)?;
    }
    Ok(out)
}

/// QUERY IB_SERVICE: `num_service_recs` and as many records as fit in
/// `out_len` bytes (`ENODATA` when no service was resolved). The reply is
/// empty, and nothing is copied, when not one record fits, as in C.
pub(crate) fn query_ib_service(id: &RdmaCmId, out_len: usize) -> Result<KVec<u8>> {
    let hdr = core::mem::size_of::<QueryIbServiceResp>();
    let room = out_len.saturating_sub(hdr) / SERVICE_REC_SIZE;
    // A first look for the count, without copying.
    let total = id.read_service_recs(&mut []).ok_or(ENODATA)?;
    let n = room.min(usize::try_from(total).unwrap_or(0));
    if n == 0 {
        return Ok(KVec::new());
    }
    let mut out = KVec::from_elem(0u8, hdr + n * SERVICE_REC_SIZE, GFP_ACCOUNTED)?;
    let num = id.read_service_recs(&mut out[hdr..]).ok_or(ENODATA)?;
    let head = QueryIbServiceResp {
        num_service_recs: num,
        reserved: 0,
    };
    out[..hdr].copy_from_slice(head.as_bytes());
    Ok(out)
}
