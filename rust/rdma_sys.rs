// SPDX-License-Identifier: GPL-2.0

//! Raw bindings to the rdma_cm API and the module's C shim.
//!
//! Generated at build time by the module's own bindgen step (see `Kbuild`)
//! from `include/ucma_bindings.h`, against the exact kernel being built for.
//! Nothing but the generated code lives here; the safe wrappers are in
//! `rdma_cm.rs`, `misc_device.rs`, `user_input.rs` and `ucma_main.rs`; the
//! uAPI structs are checked against it in `abi_check.rs`.

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

use kernel::ffi;
use pin_init::MaybeZeroable;

include!(concat!(
    env!("UCMA_RS_OBJ"),
    "/rust/ucma_bindings_generated.rs"
));
