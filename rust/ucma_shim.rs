// SPDX-License-Identifier: GPL-2.0

//! Raw bindings to the module's C shim (`include/ucma_shim.c`) and to the
//! uAPI structs `abi_check.rs` compares `ucma_core`'s with.
//!
//! Generated at build time by the module's own bindgen step (see `Kbuild`)
//! from `include/ucma_shim_bindings.h`, against the exact kernel being
//! built for, out of tree and in a kernel tree alike. The safe wrappers are
//! in `misc_device.rs`, `user_input.rs`, `memcg.rs`, `kcov.rs`,
//! `tunables.rs` and `ucma_main.rs`.

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

include!(concat!(env!("UCMA_RS_OBJ"), "/rust/ucma_shim_generated.rs"));
