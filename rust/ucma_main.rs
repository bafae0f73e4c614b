// SPDX-License-Identifier: GPL-2.0

//! ucma-rs: the uCMA bridge (`/dev/infiniband/rdma_cm`) written in Rust.
//!
//! A drop-in replacement for the kernel's C `rdma_ucm` module: userspace
//! (librdmacm) writes uCMA commands (ABI version 4) to the misc device, the
//! module turns them into in-kernel rdma_cm calls and queues the resulting CM
//! events for userspace to fetch.
//!
//! Layers (Documentation/design.rst): the entry point (this file: module
//! init and exit, the global tables, the device's registration, its
//! ib_client and sysctl); the domain without `unsafe` (`ucma_file`,
//! `context`, `multicast`, `event`, `marshal`); the abstractions that hold
//! the rest of the `unsafe` and import nothing of the domain (`misc_device`,
//! `rdma_cm`, `id_table`, `tagged_list`, `owned_queue`, `user_input`, and
//! `rdma_sys`, the generated bindings); and `ucma_core` (shared with the
//! host cargo build), the pure ABI logic.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    context::Context,
    id_table::IdTable,
    multicast::Multicast,
    owned_queue::OwnedQueue, //
};

use misc_device::{
    MiscDeviceOptions,
    MiscDeviceRegistration, //
};
use ucma_file::UcmaFile;

mod abi_check;
mod context;
mod event;
mod id_table;
mod kcov;
mod marshal;
mod memcg;
mod misc_device;
mod multicast;
mod owned_queue;
mod rdma_cm;
mod rdma_sys;
mod tagged_list;
mod ucma_file;
mod user_input;

/// The pure core, shared with the host `cargo test` build of `ucma_core/`.
// Its `pub` items exist for the host tests; not all are used by the module.
#[allow(unreachable_pub)]
#[path = "../ucma_core/src"]
mod ucma_core {
    pub(crate) mod abi;
    pub(crate) mod addr;
    pub(crate) mod errno;
    pub(crate) mod uapi;
}

impl From<ucma_core::errno::Errno> for Error {
    fn from(e: ucma_core::errno::Errno) -> Self {
        match e {
            ucma_core::errno::Errno::Inval => EINVAL,
            ucma_core::errno::Errno::NoSys => ENOSYS,
        }
    }
}

module! {
    type: UcmaModule,
    name: "ucma_rs",
    authors: ["ucma-rs developers"],
    description: "RDMA Userspace Connection Manager Access, in Rust",
    license: "GPL",
    // What ib_core's nldev asks for (request_module) when userspace looks
    // up the "rdma_cm" character device and no client of that name is
    // registered: the C module's MODULE_ALIAS_RDMA_CLIENT("rdma_cm").
    alias: ["rdma-client-rdma_cm"],
}

/// The module's version, from the top-level `VERSION` file (Kbuild).
const VERSION: &str = env!("UCMA_RS_VERSION");

/// The loaded module. Fields drop in order: the client, the device (no new
/// files), then the sysctl, then the global tables.
#[pin_data]
struct UcmaModule {
    _client: IbClient,
    #[pin]
    misc: MiscDeviceRegistration<UcmaFile>,
    _sysctl: Sysctl,
    _tables: Tables,
}

impl kernel::InPlaceModule for UcmaModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            // Refuse early, before touching anything the C module also owns
            // (the sysctl path, the misc name, the ib_client name).
            _tables: {
                ensure_name_free()?;
                Tables::init()?
            },
            _sysctl: Sysctl::register()?,
            misc <- MiscDeviceRegistration::register(misc_options()),
            // SAFETY: `misc` is registered, so its device is valid until
            // `misc` is dropped; `_client` is declared before `misc`, so it is
            // dropped (the client unregistered) first.
            _client: unsafe { IbClient::register(misc.device())? },
        })
        .pin_chain(|_| {
            pr_info!(
                "version {VERSION}, serving /dev/infiniband/rdma_cm (uCMA ABI {})\n",
                ucma_core::abi::ABI_VERSION
            );
            Ok(())
        })
    }
}

/// Misc device name: `/sys/class/misc/rdma_cm`, as the C module.
const MISC_NAME: &CStr = c"rdma_cm";
/// Device node below `/dev`.
const NODE_NAME: &CStr = c"infiniband/rdma_cm";
/// Every user may open the node; librdmacm relies on it (rdma-core ships no udev rule).
const NODE_MODE: u16 = 0o666;

/// `/dev/infiniband/rdma_cm` (mode 0666) with its `abi_version` attribute.
fn misc_options() -> MiscDeviceOptions {
    let opts = MiscDeviceOptions::new(MISC_NAME)
        .nodename(NODE_NAME)
        .mode(NODE_MODE);
    // SAFETY: the shim returns its static, NULL-terminated array of groups.
    unsafe { opts.groups(rdma_sys::ucma_shim_misc_groups()) }
}

/// Fails with `EBUSY`, and says why, if another `rdma_cm` misc device (the
/// C `rdma_ucm`) exists.
fn ensure_name_free() -> Result {
    if misc_options().name_taken() {
        pr_err!("the rdma_cm device is held by another module (rdma_ucm?): unload it first\n");
        return Err(EBUSY);
    }
    Ok(())
}

/// The ids of all contexts of all files, as the C module's `ctx_table`:
/// global, lowest free id first.
static CONTEXTS: IdTable<Arc<Context>> = IdTable::new();

/// The ids of all multicast joins, as the C module's `multicast_table`.
static MULTICASTS: IdTable<Arc<Multicast>> = IdTable::new();

kernel::sync::global_lock! {
    // SAFETY: `Tables::init` initialises it in module init, before the
    // device (the only way to reach it) is registered.
    unsafe(uninit) static CLOSE_WQ: Mutex<Option<OwnedQueue>> = None;
}

/// The global tables and the close workqueue (teardown after a device
/// removal), set up before the device is registered and torn down after
/// it is gone.
struct Tables;

impl Tables {
    fn init() -> Result<Self> {
        // SAFETY: called once, before any other use of `CLOSE_WQ`.
        unsafe { CLOSE_WQ.init() };
        *CLOSE_WQ.lock() = Some(OwnedQueue::new(c"ucma_rs_close")?);
        Ok(Tables)
    }
}

impl Drop for Tables {
    fn drop(&mut self) {
        // Waits for queued context teardown to finish.
        let wq = CLOSE_WQ.lock().take();
        drop(wq);
        // SAFETY: the device is gone, every file is closed and the close
        // workqueue drained: nothing uses the tables any more.
        unsafe {
            CONTEXTS.destroy();
            MULTICASTS.destroy();
        }
    }
}

/// The `net.rdma_ucm.max_backlog` sysctl (initial network namespace).
struct Sysctl;

impl Sysctl {
    fn register() -> Result<Self> {
        // SAFETY: registers a static table; undone once in `drop`.
        kernel::error::to_result(unsafe { rdma_sys::ucma_shim_sysctl_register() })?;
        Ok(Sysctl)
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        // SAFETY: registered in `register`.
        unsafe { rdma_sys::ucma_shim_sysctl_unregister() };
    }
}

/// The `rdma_cm` ib_client: answers netlink chardev discovery with the misc
/// device and ABI 4.
///
/// # Invariants
///
/// The client is registered; it is unregistered exactly once, in `drop`.
struct IbClient;

impl IbClient {
    /// Registers the client, reporting `dev`.
    ///
    /// # Safety
    ///
    /// `dev` must be a valid device that stays so until the returned value
    /// is dropped.
    unsafe fn register(dev: *mut kernel::bindings::device) -> Result<Self> {
        // SAFETY: `dev` is valid until `drop`, which unregisters the client,
        // as guaranteed by the caller.
        kernel::error::to_result(unsafe { rdma_sys::ucma_shim_client_register(dev) })?;
        // INVARIANT: registered just above.
        Ok(IbClient)
    }
}

impl Drop for IbClient {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the client is registered.
        unsafe { rdma_sys::ucma_shim_client_unregister() };
    }
}

/// The `max_ids_per_file` module parameter as loaded (0: no limit). The
/// module's parameters are the shim's (`module_param`, readable in sysfs),
/// read when they are used; they are set at load time only.
pub(crate) fn max_ids_per_file_param() -> u32 {
    // SAFETY: reads a static integer.
    unsafe { rdma_sys::ucma_shim_max_ids_per_file() }
}

/// The `max_events_per_file` module parameter as loaded (0: no limit).
pub(crate) fn max_events_per_file_param() -> u32 {
    // SAFETY: reads a static integer.
    unsafe { rdma_sys::ucma_shim_max_events_per_file() }
}

/// The `max_ids_per_file` cap (`u32::MAX` for 0, no limit).
pub(crate) fn max_ids_per_file() -> u32 {
    match max_ids_per_file_param() {
        0 => u32::MAX,
        n => n,
    }
}

/// The `max_events_per_file` cap (`u32::MAX` for 0, no limit).
pub(crate) fn max_events_per_file() -> u32 {
    match max_events_per_file_param() {
        0 => u32::MAX,
        n => n,
    }
}

/// The current `net.rdma_ucm.max_backlog`.
pub(crate) fn max_backlog() -> i32 {
    // SAFETY: reads a static integer.
    unsafe { rdma_sys::ucma_shim_max_backlog() }
}
