// SPDX-License-Identifier: GPL-2.0

//! The payload structs of the uCMA ABI, version 4.
//!
//! These mirror `include/uapi/rdma/rdma_user_cm.h`, a fixed userspace ABI. The
//! kernel module checks every size and offset here against the header of the
//! kernel it is built for (`const` asserts in `rust/abi_check.rs`), so a
//! mismatch fails the build. Socket addresses and the verbs sub-structs that
//! the kernel fills with its own marshalling helpers are carried as bytes.

use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

/// `RDMA_MAX_PRIVATE_DATA`.
pub const MAX_PRIVATE_DATA: usize = 256;
/// `sizeof(struct sockaddr_in6)`.
pub const SOCKADDR_IN6_SIZE: usize = 28;
/// `sizeof(struct __kernel_sockaddr_storage)`.
pub const SOCKADDR_STORAGE_SIZE: usize = 128;
/// `sizeof(struct rdma_ucm_query_ib_service_resp)`: the header before the
/// records (`struct ib_user_service_rec`).
pub const QUERY_IB_SERVICE_RESP_SIZE: usize = 8;

/// `struct rdma_ucm_create_id`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CreateId {
    /// User cookie reported with every event of the id.
    pub uid: u64,
    /// Where the `CreateIdResp` goes.
    pub response: u64,
    /// Port space (`RDMA_PS_*`).
    pub ps: u16,
    /// QP type, used for `RDMA_PS_IB` only.
    pub qp_type: u8,
    /// Ignored.
    pub reserved: [u8; 5],
}

/// `struct rdma_ucm_create_id_resp`; also the reply of the joins.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct CreateIdResp {
    /// The new id.
    pub id: u32,
}

/// `struct rdma_ucm_destroy_id`; also LEAVE_MCAST's command.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DestroyId {
    /// Where the `DestroyIdResp` goes.
    pub response: u64,
    /// The id (or multicast id).
    pub id: u32,
    /// Ignored.
    pub reserved: u32,
}

/// `struct rdma_ucm_destroy_id_resp`; also LEAVE_MCAST's and MIGRATE_ID's reply.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct DestroyIdResp {
    /// Events of the id already delivered by GET_EVENT.
    pub events_reported: u32,
}

/// `struct rdma_ucm_bind_ip`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct BindIp {
    /// Unused by the kernel.
    pub response: u64,
    /// `struct sockaddr_in6` (or a shorter `sockaddr_in`).
    pub addr: [u8; SOCKADDR_IN6_SIZE],
    /// The id.
    pub id: u32,
}

/// `struct rdma_ucm_bind`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Bind {
    /// The id.
    pub id: u32,
    /// Size of the address in `addr`.
    pub addr_size: u16,
    /// Must be zero.
    pub reserved: u16,
    /// `struct __kernel_sockaddr_storage`.
    pub addr: [u8; SOCKADDR_STORAGE_SIZE],
}

/// `struct rdma_ucm_resolve_ip`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ResolveIp {
    /// Source address (family 0: none).
    pub src_addr: [u8; SOCKADDR_IN6_SIZE],
    /// Destination address.
    pub dst_addr: [u8; SOCKADDR_IN6_SIZE],
    /// The id.
    pub id: u32,
    /// Timeout.
    pub timeout_ms: u32,
}

/// `struct rdma_ucm_resolve_addr`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ResolveAddr {
    /// The id.
    pub id: u32,
    /// Timeout.
    pub timeout_ms: u32,
    /// Size of `src_addr` (0: none).
    pub src_size: u16,
    /// Size of `dst_addr`.
    pub dst_size: u16,
    /// Must be zero.
    pub reserved: u32,
    /// Source address.
    pub src_addr: [u8; SOCKADDR_STORAGE_SIZE],
    /// Destination address.
    pub dst_addr: [u8; SOCKADDR_STORAGE_SIZE],
}

/// `struct rdma_ucm_resolve_route`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ResolveRoute {
    /// The id.
    pub id: u32,
    /// Timeout.
    pub timeout_ms: u32,
}

/// `struct rdma_ucm_query`; also QUERY_ROUTE's command.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Query {
    /// Where the reply goes.
    pub response: u64,
    /// The id.
    pub id: u32,
    /// `RDMA_USER_CM_QUERY_*` (ignored by QUERY_ROUTE).
    pub option: u32,
}

/// `struct rdma_ucm_conn_param`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ConnParam {
    /// QP number (24 bits used).
    pub qp_num: u32,
    /// Q_Key (AF_IB only).
    pub qkey: u32,
    /// Private data.
    pub private_data: [u8; MAX_PRIVATE_DATA],
    /// Bytes of `private_data` used.
    pub private_data_len: u8,
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
    /// Non-zero when the parameters are given.
    pub valid: u8,
}

/// Size of `struct ib_uverbs_ah_attr`.
pub const AH_ATTR_SIZE: usize = 32;

/// `struct rdma_ucm_ud_param`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct UdParam {
    /// QP number.
    pub qp_num: u32,
    /// Q_Key.
    pub qkey: u32,
    /// `struct ib_uverbs_ah_attr`.
    pub ah_attr: [u8; AH_ATTR_SIZE],
    /// Private data.
    pub private_data: [u8; MAX_PRIVATE_DATA],
    /// Bytes of `private_data` used.
    pub private_data_len: u8,
    /// Zero.
    pub reserved: [u8; 7],
}

/// `struct rdma_ucm_ece`.
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Ece {
    /// Vendor id.
    pub vendor_id: u32,
    /// Attribute modifier.
    pub attr_mod: u32,
}

/// `struct rdma_ucm_connect`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Connect {
    /// Connection parameters; `valid` must be set.
    pub conn_param: ConnParam,
    /// The id.
    pub id: u32,
    /// Ignored.
    pub reserved: u32,
    /// Enhanced connection establishment (newer userspace only).
    pub ece: Ece,
}

/// `struct rdma_ucm_listen`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Listen {
    /// The id.
    pub id: u32,
    /// Backlog (<= 0 or above the sysctl: the sysctl's value).
    pub backlog: i32,
}

/// `struct rdma_ucm_accept`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Accept {
    /// The uid the accepted id reports events with.
    pub uid: u64,
    /// Connection parameters (`valid` 0: active-side RTU).
    pub conn_param: ConnParam,
    /// The id.
    pub id: u32,
    /// Ignored.
    pub reserved: u32,
    /// Enhanced connection establishment (newer userspace only).
    pub ece: Ece,
}

/// `struct rdma_ucm_reject`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Reject {
    /// The id.
    pub id: u32,
    /// Bytes of `private_data` used.
    pub private_data_len: u8,
    /// Reject reason (0: consumer defined).
    pub reason: u8,
    /// Ignored.
    pub reserved: [u8; 2],
    /// Private data.
    pub private_data: [u8; MAX_PRIVATE_DATA],
}

/// `struct rdma_ucm_disconnect`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Disconnect {
    /// The id.
    pub id: u32,
}

/// `struct rdma_ucm_init_qp_attr`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct InitQpAttr {
    /// Where the `struct ib_uverbs_qp_attr` goes.
    pub response: u64,
    /// The id.
    pub id: u32,
    /// Target `enum ib_qp_state`.
    pub qp_state: u32,
}

/// Size of `struct ib_uverbs_qp_attr`, INIT_QP_ATTR's reply.
pub const QP_ATTR_SIZE: usize = 144;

/// `struct rdma_ucm_get_event`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct GetEvent {
    /// Where the `EventResp` goes.
    pub response: u64,
}

/// The `param` union of `struct rdma_ucm_event_resp` (304 bytes, 4-aligned).
pub const EVENT_PARAM_SIZE: usize = 304;

/// `struct rdma_ucm_event_resp`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct EventResp {
    /// The id's (or multicast's, or listener's) uid.
    pub uid: u64,
    /// The id (child id for CONNECT_REQUEST, multicast id for joins).
    pub id: u32,
    /// `enum rdma_cm_event_type`.
    pub event: u32,
    /// Status (negative errno, or the reject reason).
    pub status: u32,
    /// `union { conn; ud; arg32[2]; }`.
    pub param: [u8; EVENT_PARAM_SIZE],
    /// Zero.
    pub reserved: u32,
    /// ECE of the event.
    pub ece: Ece,
}

impl EventResp {
    /// Size userspace must provide at least (old 32-bit layout: no
    /// `reserved`, no `ece`).
    pub const MIN_OUT: usize = core::mem::size_of::<Self>() - 4 - core::mem::size_of::<Ece>();
}

/// `struct rdma_ucm_set_option`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct SetOption {
    /// User pointer to the value.
    pub optval: u64,
    /// The id.
    pub id: u32,
    /// `RDMA_OPTION_ID` or `RDMA_OPTION_IB`.
    pub level: u32,
    /// Option name.
    pub optname: u32,
    /// Value length.
    pub optlen: u32,
}

/// `struct rdma_ucm_notify`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Notify {
    /// The id.
    pub id: u32,
    /// `enum ib_event_type`.
    pub event: u32,
}

/// `struct rdma_ucm_join_ip_mcast`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct JoinIpMcast {
    /// Where the `CreateIdResp` goes.
    pub response: u64,
    /// Multicast uid.
    pub uid: u64,
    /// Group address.
    pub addr: [u8; SOCKADDR_IN6_SIZE],
    /// The id.
    pub id: u32,
}

/// `struct rdma_ucm_join_mcast`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct JoinMcast {
    /// Where the `CreateIdResp` goes.
    pub response: u64,
    /// Multicast uid.
    pub uid: u64,
    /// The id.
    pub id: u32,
    /// Size of `addr`.
    pub addr_size: u16,
    /// `RDMA_MC_JOIN_FLAG_*`.
    pub join_flags: u16,
    /// Group address.
    pub addr: [u8; SOCKADDR_STORAGE_SIZE],
}

/// `struct rdma_ucm_migrate_id`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct MigrateId {
    /// Where the `DestroyIdResp` (`events_reported`) goes.
    pub response: u64,
    /// The id, on the file `fd`.
    pub id: u32,
    /// The file descriptor the id currently belongs to.
    pub fd: u32,
}

/// `struct rdma_ucm_resolve_ib_service`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct ResolveIbService {
    /// The id.
    pub id: u32,
    /// Ignored.
    pub reserved: u32,
    /// `struct rdma_ucm_ib_service`: service_id, service_name[64], flags, reserved.
    pub ibs: [u8; 80],
}

/// `struct rdma_ucm_write_cm_event`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct WriteCmEvent {
    /// The id.
    pub id: u32,
    /// Ignored.
    pub reserved: u32,
    /// `RDMA_CM_EVENT_USER` or `RDMA_CM_EVENT_INTERNAL`.
    pub event: u32,
    /// Status.
    pub status: u32,
    /// `union { conn; ud; u64 arg; }`.
    pub param: [u8; EVENT_PARAM_SIZE],
}

/// `struct rdma_ucm_query_addr_resp`: QUERY ADDR and GID reply.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryAddrResp {
    /// Node GUID (network byte order, as stored).
    pub node_guid: u64,
    /// Port number.
    pub port_num: u8,
    /// Zero.
    pub reserved: u8,
    /// P_Key (network byte order).
    pub pkey: u16,
    /// Bytes of `src_addr` used.
    pub src_size: u16,
    /// Bytes of `dst_addr` used.
    pub dst_size: u16,
    /// Source address.
    pub src_addr: [u8; SOCKADDR_STORAGE_SIZE],
    /// Destination address.
    pub dst_addr: [u8; SOCKADDR_STORAGE_SIZE],
    /// `ib_device->index`.
    pub ibdev_index: u32,
    /// Zero.
    pub reserved1: u32,
}

impl QueryAddrResp {
    /// Shortest reply userspace may ask for (up to `ibdev_index`).
    pub const MIN_OUT: usize = 272;
}

/// Size of `struct ib_user_path_rec`.
// Used in the module only by `const _` size checks, which rustc 1.85
// does not count as uses (later versions do): hence `allow`, not `expect`.
#[allow(dead_code)]
pub const USER_PATH_REC_SIZE: usize = 64;

/// `RDMA_USER_CM_QUERY_ADDR`.
pub const QUERY_ADDR: u32 = 0;
/// `RDMA_USER_CM_QUERY_PATH`.
pub const QUERY_PATH: u32 = 1;
/// `RDMA_USER_CM_QUERY_GID`.
pub const QUERY_GID: u32 = 2;
/// `RDMA_USER_CM_QUERY_IB_SERVICE`.
pub const QUERY_IB_SERVICE: u32 = 3;

/// `RDMA_OPTION_ID`: SET_OPTION level.
pub const OPTION_ID: u32 = 0;
/// `RDMA_OPTION_IB`: SET_OPTION level.
pub const OPTION_IB: u32 = 1;
/// `RDMA_OPTION_ID_TOS`.
pub const OPTION_ID_TOS: u32 = 0;
/// `RDMA_OPTION_ID_REUSEADDR`.
pub const OPTION_ID_REUSEADDR: u32 = 1;
/// `RDMA_OPTION_ID_AFONLY`.
pub const OPTION_ID_AFONLY: u32 = 2;
/// `RDMA_OPTION_ID_ACK_TIMEOUT`.
pub const OPTION_ID_ACK_TIMEOUT: u32 = 3;
/// `RDMA_OPTION_IB_PATH`.
pub const OPTION_IB_PATH: u32 = 1;

/// `RDMA_MC_JOIN_FLAG_FULLMEMBER`.
pub const MC_JOIN_FLAG_FULLMEMBER: u16 = 0;
/// `RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER`.
pub const MC_JOIN_FLAG_SENDONLY_FULLMEMBER: u16 = 1;

/// `struct ib_user_path_rec`: a path in QUERY_ROUTE's reply. Big-endian
/// fields are kept in network byte order, as the kernel stores them.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct UserPathRec {
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Source GID.
    pub sgid: [u8; 16],
    /// Destination LID (big-endian).
    pub dlid: u16,
    /// Source LID (big-endian).
    pub slid: u16,
    /// Raw traffic.
    pub raw_traffic: u32,
    /// Flow label (big-endian).
    pub flow_label: u32,
    /// Reversible.
    pub reversible: u32,
    /// MTU.
    pub mtu: u32,
    /// P_Key (big-endian).
    pub pkey: u16,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Number of paths.
    pub numb_path: u8,
    /// Service level.
    pub sl: u8,
    /// MTU selector.
    pub mtu_selector: u8,
    /// Rate selector.
    pub rate_selector: u8,
    /// Rate.
    pub rate: u8,
    /// Packet life time selector.
    pub packet_life_time_selector: u8,
    /// Packet life time.
    pub packet_life_time: u8,
    /// Preference.
    pub preference: u8,
}

/// `struct rdma_ucm_query_route_resp`: QUERY_ROUTE reply.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryRouteResp {
    /// Node GUID (network byte order, as stored).
    pub node_guid: u64,
    /// Primary and alternate path.
    pub ib_route: [UserPathRec; 2],
    /// Source address (`struct sockaddr_in6`).
    pub src_addr: [u8; SOCKADDR_IN6_SIZE],
    /// Destination address (`struct sockaddr_in6`).
    pub dst_addr: [u8; SOCKADDR_IN6_SIZE],
    /// Number of valid paths.
    pub num_paths: u32,
    /// Port number.
    pub port_num: u8,
    /// Zero.
    pub reserved: [u8; 3],
    /// `ib_device->index`.
    pub ibdev_index: u32,
    /// Zero.
    pub reserved1: u32,
}

impl QueryRouteResp {
    /// Shortest reply userspace may ask for (up to `ibdev_index`).
    pub const MIN_OUT: usize = 200;
}

/// Size of `struct ib_path_rec_data` (flags, reserved, 64-byte wire record).
pub const PATH_REC_DATA_SIZE: usize = 72;

/// Size of a path record in wire format (`IB_SA_PATH_REC` packed).
pub const PATH_REC_WIRE_SIZE: usize = 64;

/// `struct ib_path_rec_data`: one path of QUERY PATH's reply, or of
/// SET_OPTION IB_PATH's input.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct PathRecData {
    /// `IB_PATH_*` flags.
    pub flags: u32,
    /// Zero.
    pub reserved: u32,
    /// The record in wire format.
    pub path_rec: [u8; PATH_REC_WIRE_SIZE],
}

/// `struct rdma_ucm_query_path_resp` without its flexible array: QUERY
/// PATH's reply header, followed by `PathRecData`s.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryPathResp {
    /// Paths the id has.
    pub num_paths: u32,
    /// Zero.
    pub reserved: u32,
}

/// `struct rdma_ucm_query_ib_service_resp` without its flexible array:
/// QUERY IB_SERVICE's reply header, followed by `ib_user_service_rec`s.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct QueryIbServiceResp {
    /// Service records the id has.
    pub num_service_recs: u32,
    /// Zero.
    pub reserved: u32,
}

/// `AF_IB`'s `struct sockaddr_ib`, as QUERY GID reports addresses.
/// Big-endian fields are kept in network byte order.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct SockaddrIb {
    /// `AF_IB`.
    pub sib_family: u16,
    /// P_Key (big-endian).
    pub sib_pkey: u16,
    /// Flow info (big-endian).
    pub sib_flowinfo: u32,
    /// The GID (`struct ib_addr`).
    pub sib_addr: [u8; 16],
    /// Service id (big-endian).
    pub sib_sid: u64,
    /// Service id mask (big-endian).
    pub sib_sid_mask: u64,
    /// Scope id.
    pub sib_scope_id: u64,
}
/// `IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL`.
pub const PATH_FLAGS_PRIMARY: u32 = 0x2b;
/// Size of `struct ib_user_service_rec`.
// Used in the module only by `const _` size checks, which rustc 1.85
// does not count as uses (later versions do): hence `allow`, not `expect`.
#[allow(dead_code)]
pub const USER_SERVICE_REC_SIZE: usize = 176;

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    #[test]
    fn sizes_match_the_uapi() {
        assert_eq!(size_of::<CreateId>(), 24);
        assert_eq!(size_of::<CreateIdResp>(), 4);
        assert_eq!(size_of::<DestroyId>(), 16);
        assert_eq!(size_of::<DestroyIdResp>(), 4);
        assert_eq!(size_of::<BindIp>(), 40);
        assert_eq!(size_of::<Bind>(), 136);
        assert_eq!(size_of::<ResolveIp>(), 64);
        assert_eq!(size_of::<ResolveAddr>(), 272);
        assert_eq!(size_of::<ResolveRoute>(), 8);
        assert_eq!(size_of::<Query>(), 16);
        assert_eq!(size_of::<ConnParam>(), 272);
        assert_eq!(size_of::<UdParam>(), 304);
        assert_eq!(size_of::<Connect>(), 288);
        assert_eq!(size_of::<Listen>(), 8);
        assert_eq!(size_of::<Accept>(), 296);
        assert_eq!(size_of::<Reject>(), 264);
        assert_eq!(size_of::<Disconnect>(), 4);
        assert_eq!(size_of::<InitQpAttr>(), 16);
        assert_eq!(size_of::<GetEvent>(), 8);
        assert_eq!(size_of::<EventResp>(), 336);
        assert_eq!(EventResp::MIN_OUT, 324);
        assert_eq!(size_of::<SetOption>(), 24);
        assert_eq!(size_of::<Notify>(), 8);
        assert_eq!(size_of::<JoinIpMcast>(), 48);
        assert_eq!(size_of::<JoinMcast>(), 152);
        assert_eq!(size_of::<MigrateId>(), 16);
        assert_eq!(size_of::<ResolveIbService>(), 88);
        assert_eq!(size_of::<WriteCmEvent>(), 320);
        assert_eq!(size_of::<QueryAddrResp>(), 280);
        assert_eq!(size_of::<QueryRouteResp>(), 208);
        assert_eq!(size_of::<UserPathRec>(), USER_PATH_REC_SIZE);
        assert_eq!(size_of::<PathRecData>(), PATH_REC_DATA_SIZE);
        assert_eq!(size_of::<QueryPathResp>(), 8);
        assert_eq!(size_of::<QueryIbServiceResp>(), QUERY_IB_SERVICE_RESP_SIZE);
        assert_eq!(size_of::<SockaddrIb>(), 48);
    }

    #[test]
    fn offsets_match_the_uapi() {
        assert_eq!(offset_of!(BindIp, id), 36);
        assert_eq!(offset_of!(Bind, addr), 8);
        assert_eq!(offset_of!(ResolveIp, id), 56);
        assert_eq!(offset_of!(ResolveAddr, dst_addr), 144);
        assert_eq!(offset_of!(ConnParam, valid), 271);
        assert_eq!(offset_of!(Connect, id), 272);
        assert_eq!(offset_of!(Connect, ece), 280);
        assert_eq!(offset_of!(Accept, conn_param), 8);
        assert_eq!(offset_of!(Accept, id), 280);
        assert_eq!(offset_of!(Accept, ece), 288);
        assert_eq!(offset_of!(EventResp, param), 20);
        assert_eq!(offset_of!(EventResp, reserved), 324);
        assert_eq!(offset_of!(EventResp, ece), 328);
        assert_eq!(offset_of!(JoinIpMcast, id), 44);
        assert_eq!(offset_of!(JoinMcast, addr), 24);
        assert_eq!(offset_of!(WriteCmEvent, param), 16);
        assert_eq!(align_of::<EventResp>(), 8);
        assert_eq!(offset_of!(QueryAddrResp, src_addr), 16);
        assert_eq!(offset_of!(QueryAddrResp, dst_addr), 144);
        assert_eq!(
            offset_of!(QueryAddrResp, ibdev_index),
            QueryAddrResp::MIN_OUT
        );
        assert_eq!(offset_of!(QueryRouteResp, src_addr), 136);
        assert_eq!(offset_of!(UserPathRec, pkey), 52);
        assert_eq!(offset_of!(SockaddrIb, sib_addr), 8);
        assert_eq!(offset_of!(SockaddrIb, sib_sid), 24);
        assert_eq!(offset_of!(QueryRouteResp, num_paths), 192);
        assert_eq!(
            offset_of!(QueryRouteResp, ibdev_index),
            QueryRouteResp::MIN_OUT
        );
    }
}
