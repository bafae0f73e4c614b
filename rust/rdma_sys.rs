// SPDX-License-Identifier: GPL-2.0

//! Raw bindings of the rdma_cm abstraction ([`crate::rdma_cm`]): the
//! rdma_cm API and its helpers (`include/rdma_helpers.c`).
//!
//! Generated at build time by the module's own bindgen step (see `Kbuild`)
//! from `include/rdma_bindings.h`, against the exact kernel being built for;
//! the helpers keep the names the kernel's `rust/helpers` give them (the
//! `rust_helper_` prefix dropped). Besides the generated code, only the
//! byte-view traits of the plain uAPI structs that the abstraction copies
//! whole live here (with the check that they have no padding).
//!
//! In a kernel tree (`scripts/in-tree-series`) it is the kernel crate's
//! `rdma::rdma_sys`, with the kernel's own bindings in place of the
//! generated ones.

#![allow(
    dead_code,
    clippy::all,
    clippy::pedantic,
    clippy::restriction,
    clippy::undocumented_unsafe_blocks,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    unused_imports
)]

use kernel::{
    ffi,
    transmute::{
        AsBytes,
        FromBytes, //
    },
};
use pin_init::MaybeZeroable;

include!(concat!(
    env!("UCMA_RS_OBJ"),
    "/rust/rdma_bindings_generated.rs"
));

/// The size of the field that `_field` borrows, which must itself be
/// plain bytes ([`AsBytes`] and [`FromBytes`]).
const fn plain_field_size<T, F: AsBytes + FromBytes>(_field: fn(&T) -> &F) -> usize {
    core::mem::size_of::<F>()
}

/// Implements [`AsBytes`] and [`FromBytes`] for a bindgen'd C struct whose
/// every field is listed, in order: the build fails unless each listed
/// field is plain bytes itself and begins where the one before it ends,
/// and the last ends where the struct does (no padding, no field left out
/// or listed twice).
macro_rules! plain_c_struct {
    ($($t:ident { $($f:ident),+ $(,)? })+) => {$(
        const _: () = {
            let mut end = 0;
            $(
                assert!(core::mem::offset_of!($t, $f) == end);
                end += plain_field_size(|s: &$t| &s.$f);
            )+
            assert!(end == core::mem::size_of::<$t>());
        };
        // SAFETY: checked above: every field is plain bytes and together,
        // end to end, they cover the struct, so every byte is initialised
        // and any bytes are a valid value; a bindgen struct has no interior
        // mutability.
        unsafe impl AsBytes for $t {}
        // SAFETY: as above.
        unsafe impl FromBytes for $t {}
    )+};
}

plain_c_struct! {
    ib_uverbs_global_route { dgid, flow_label, sgid_index, hop_limit, traffic_class, reserved }
    ib_uverbs_ah_attr {
        grh, dlid, sl, src_path_bits, static_rate, is_global, port_num, reserved
    }
    ib_uverbs_qp_attr {
        qp_attr_mask, qp_state, cur_qp_state, path_mtu, path_mig_state, qkey, rq_psn, sq_psn,
        dest_qp_num, qp_access_flags, ah_attr, alt_ah_attr, max_send_wr, max_recv_wr,
        max_send_sge, max_recv_sge, max_inline_data, pkey_index, alt_pkey_index,
        en_sqd_async_notify, sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer,
        port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, reserved
    }
    ib_user_path_rec {
        dgid, sgid, dlid, slid, raw_traffic, flow_label, reversible, mtu, pkey, hop_limit,
        traffic_class, numb_path, sl, mtu_selector, rate_selector, rate,
        packet_life_time_selector, packet_life_time, preference
    }
    rdma_ucm_ib_service { service_id, service_name, flags, reserved }
}
