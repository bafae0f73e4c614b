// SPDX-License-Identifier: GPL-2.0

//! ucma-rs: the uCMA bridge (`/dev/infiniband/rdma_cm`) written in Rust.
//!
//! A drop-in replacement for the kernel's C `rdma_ucm` module: userspace
//! (librdmacm) writes uCMA commands (ABI version 4) to the misc device, the
//! module turns them into in-kernel rdma_cm calls and queues the resulting CM
//! events for userspace to fetch.
//!
//! Layout: `chardev` owns the misc device and every VFS entry point (all the
//! `unsafe` of the file side), `ucma_file` the per-open-file state, `rdma_sys`
//! the generated bindings, and `ucma_core` (shared with the host cargo build)
//! the pure ABI logic.

use kernel::prelude::*;

mod chardev;
mod rdma_sys;
mod ucma_file;

/// The pure core, shared with the host `cargo test` build of `ucma_core/`.
// Its `pub` items exist for the host tests; not all are used by the module.
#[allow(unreachable_pub, dead_code)]
#[path = "../ucma_core/src"]
mod ucma_core {
    pub(crate) mod abi;
    pub(crate) mod errno;
}

module! {
    type: UcmaModule,
    name: "ucma_rs",
    authors: ["ucma-rs developers"],
    description: "RDMA Userspace Connection Manager Access, in Rust",
    license: "GPL",
}

/// The loaded module: owns the misc device registration.
#[pin_data]
struct UcmaModule {
    #[pin]
    misc: chardev::MiscRegistration,
}

impl kernel::InPlaceModule for UcmaModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            misc <- chardev::MiscRegistration::register(),
        })
    }
}
