// SPDX-License-Identifier: GPL-2.0

//! Pure core of ucma-rs, the Rust replacement for the kernel's `rdma_ucm`.
//!
//! Everything here is plain `core` code with no `unsafe`, no allocation and no
//! kernel dependency, so it is unit-tested and fuzzed on the host with cargo.
//! The kernel module includes the same files through `#[path]` (see
//! `rust/ucma_main.rs`); this `lib.rs` only exists for the host build.

#![no_std]
#![forbid(unsafe_code)]

pub mod abi;
pub mod addr;
pub mod errno;
pub mod uapi;
