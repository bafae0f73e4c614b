// SPDX-License-Identifier: GPL-2.0

//! Build-time checks of `ucma_core`'s ABI structs against the kernel's own
//! `include/uapi/rdma/rdma_user_cm.h`, as bindgen sees it for the kernel the
//! module is built for: the size of every struct and the offset of every
//! field must agree, or the module does not build.

#![forbid(unsafe_code)]

use core::mem::{
    offset_of,
    size_of, //
};

use crate::{
    ucma_core::{
        abi::CMD_HDR_SIZE,
        uapi::*, //
    },
    ucma_shim as sys,
};

/// Asserts, at compile time, that `$ours` has the size of `$theirs` and
/// each named field the same offset in both.
macro_rules! same_layout {
    ($ours:ty, $theirs:ty { $($field:ident),* $(,)? }) => {
        const _: () = {
            assert!(size_of::<$ours>() == size_of::<$theirs>());
            $(assert!(offset_of!($ours, $field) == offset_of!($theirs, $field));)*
        };
    };
}

same_layout!(
    CreateId,
    sys::rdma_ucm_create_id {
        uid,
        response,
        ps,
        qp_type,
        reserved
    }
);
same_layout!(CreateIdResp, sys::rdma_ucm_create_id_resp { id });
same_layout!(
    DestroyId,
    sys::rdma_ucm_destroy_id {
        response,
        id,
        reserved
    }
);
same_layout!(
    DestroyIdResp,
    sys::rdma_ucm_destroy_id_resp { events_reported }
);
same_layout!(BindIp, sys::rdma_ucm_bind_ip { response, addr, id });
same_layout!(
    Bind,
    sys::rdma_ucm_bind {
        id,
        addr_size,
        reserved,
        addr
    }
);
same_layout!(
    ResolveIp,
    sys::rdma_ucm_resolve_ip {
        src_addr,
        dst_addr,
        id,
        timeout_ms
    }
);
same_layout!(
    ResolveAddr,
    sys::rdma_ucm_resolve_addr {
        id,
        timeout_ms,
        src_size,
        dst_size,
        reserved,
        src_addr,
        dst_addr
    }
);
same_layout!(ResolveRoute, sys::rdma_ucm_resolve_route { id, timeout_ms });
same_layout!(
    Query,
    sys::rdma_ucm_query {
        response,
        id,
        option
    }
);
same_layout!(
    ConnParam,
    sys::rdma_ucm_conn_param {
        qp_num,
        qkey,
        private_data,
        private_data_len,
        srq,
        responder_resources,
        initiator_depth,
        flow_control,
        retry_count,
        rnr_retry_count,
        valid
    }
);
same_layout!(
    UdParam,
    sys::rdma_ucm_ud_param {
        qp_num,
        qkey,
        ah_attr,
        private_data,
        private_data_len,
        reserved
    }
);
same_layout!(
    Ece,
    sys::rdma_ucm_ece {
        vendor_id,
        attr_mod
    }
);
same_layout!(
    Connect,
    sys::rdma_ucm_connect {
        conn_param,
        id,
        reserved,
        ece
    }
);
same_layout!(Listen, sys::rdma_ucm_listen { id, backlog });
same_layout!(
    Accept,
    sys::rdma_ucm_accept {
        uid,
        conn_param,
        id,
        reserved,
        ece
    }
);
same_layout!(
    Reject,
    sys::rdma_ucm_reject {
        id,
        private_data_len,
        reason,
        reserved,
        private_data
    }
);
same_layout!(Disconnect, sys::rdma_ucm_disconnect { id });
same_layout!(
    InitQpAttr,
    sys::rdma_ucm_init_qp_attr {
        response,
        id,
        qp_state
    }
);
same_layout!(GetEvent, sys::rdma_ucm_get_event { response });
same_layout!(
    EventResp,
    sys::rdma_ucm_event_resp {
        uid,
        id,
        event,
        status,
        param,
        reserved,
        ece
    }
);
same_layout!(
    SetOption,
    sys::rdma_ucm_set_option {
        optval,
        id,
        level,
        optname,
        optlen
    }
);
same_layout!(Notify, sys::rdma_ucm_notify { id, event });
same_layout!(
    JoinIpMcast,
    sys::rdma_ucm_join_ip_mcast {
        response,
        uid,
        addr,
        id
    }
);
same_layout!(
    JoinMcast,
    sys::rdma_ucm_join_mcast {
        response,
        uid,
        id,
        addr_size,
        join_flags,
        addr
    }
);
same_layout!(MigrateId, sys::rdma_ucm_migrate_id { response, id, fd });
same_layout!(
    ResolveIbService,
    sys::rdma_ucm_resolve_ib_service { id, reserved, ibs }
);
same_layout!(
    WriteCmEvent,
    sys::rdma_ucm_write_cm_event {
        id,
        reserved,
        event,
        status,
        param
    }
);
same_layout!(
    QueryAddrResp,
    sys::rdma_ucm_query_addr_resp {
        node_guid,
        port_num,
        reserved,
        pkey,
        src_size,
        dst_size,
        src_addr,
        dst_addr,
        ibdev_index,
        reserved1
    }
);
same_layout!(
    QueryRouteResp,
    sys::rdma_ucm_query_route_resp {
        node_guid,
        ib_route,
        src_addr,
        dst_addr,
        num_paths,
        port_num,
        reserved,
        ibdev_index,
        reserved1
    }
);

same_layout!(
    UserPathRec,
    sys::ib_user_path_rec {
        dgid,
        sgid,
        dlid,
        slid,
        raw_traffic,
        flow_label,
        reversible,
        mtu,
        pkey,
        hop_limit,
        traffic_class,
        numb_path,
        sl,
        mtu_selector,
        rate_selector,
        rate,
        packet_life_time_selector,
        packet_life_time,
        preference
    }
);
same_layout!(
    PathRecData,
    sys::ib_path_rec_data {
        flags,
        reserved,
        path_rec
    }
);
same_layout!(
    QueryPathResp,
    sys::rdma_ucm_query_path_resp {
        num_paths,
        reserved
    }
);
same_layout!(
    QueryIbServiceResp,
    sys::rdma_ucm_query_ib_service_resp {
        num_service_recs,
        reserved
    }
);
same_layout!(
    SockaddrIb,
    sys::sockaddr_ib {
        sib_family,
        sib_pkey,
        sib_flowinfo,
        sib_addr,
        sib_sid,
        sib_sid_mask,
        sib_scope_id
    }
);

// The sizes the module uses as plain constants.
const _: () = {
    assert!(CMD_HDR_SIZE == size_of::<sys::rdma_ucm_cmd_hdr>());
    assert!(SOCKADDR_STORAGE_SIZE == size_of::<kernel::bindings::__kernel_sockaddr_storage>());
    assert!(SOCKADDR_IN6_SIZE == size_of::<kernel::bindings::sockaddr_in6>());
    assert!(QUERY_IB_SERVICE_RESP_SIZE == size_of::<sys::rdma_ucm_query_ib_service_resp>());
    assert!(PATH_REC_DATA_SIZE == size_of::<sys::ib_path_rec_data>());
    assert!(USER_PATH_REC_SIZE == size_of::<sys::ib_user_path_rec>());
    assert!(QP_ATTR_SIZE == size_of::<sys::ib_uverbs_qp_attr>());
    assert!(AH_ATTR_SIZE == size_of::<sys::ib_uverbs_ah_attr>());
    assert!(USER_SERVICE_REC_SIZE == size_of::<sys::ib_user_service_rec>());
    assert!(size_of::<sys::rdma_ucm_migrate_resp>() == size_of::<DestroyIdResp>());
};

// The uAPI's numbers, as the header has them.
const _: () = {
    assert!(QUERY_ADDR == sys::RDMA_USER_CM_QUERY_ADDR);
    assert!(QUERY_PATH == sys::RDMA_USER_CM_QUERY_PATH);
    assert!(QUERY_GID == sys::RDMA_USER_CM_QUERY_GID);
    assert!(QUERY_IB_SERVICE == sys::RDMA_USER_CM_QUERY_IB_SERVICE);
    assert!(OPTION_ID == sys::RDMA_OPTION_ID);
    assert!(OPTION_IB == sys::RDMA_OPTION_IB);
    assert!(OPTION_ID_TOS == sys::RDMA_OPTION_ID_TOS);
    assert!(OPTION_ID_REUSEADDR == sys::RDMA_OPTION_ID_REUSEADDR);
    assert!(OPTION_ID_AFONLY == sys::RDMA_OPTION_ID_AFONLY);
    assert!(OPTION_ID_ACK_TIMEOUT == sys::RDMA_OPTION_ID_ACK_TIMEOUT);
    assert!(OPTION_IB_PATH == sys::RDMA_OPTION_IB_PATH);
    assert!(MC_JOIN_FLAG_FULLMEMBER as u32 == sys::RDMA_MC_JOIN_FLAG_FULLMEMBER);
    assert!(MC_JOIN_FLAG_SENDONLY_FULLMEMBER as u32 == sys::RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER);
};
