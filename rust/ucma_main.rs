// SPDX-License-Identifier: GPL-2.0

//! ucma-rs: the uCMA bridge (`/dev/infiniband/rdma_cm`) written in Rust.
//!
//! A drop-in replacement for the kernel's C `rdma_ucm` module: userspace
//! (librdmacm) writes uCMA commands (ABI version 4) to the misc device, the
//! module turns them into in-kernel rdma_cm calls and queues the resulting CM
//! events for userspace to fetch.
//!
//! Layers (Documentation/design.rst): the entry point (this file: module
//! init and exit, the device's registration, its ib_client); the domain
//! without `unsafe` (`device`, the state all files share, `ucma_file`,
//! `context`, `multicast`, `event`, `marshal`), which never imports this
//! file; the abstractions that hold the rest of the `unsafe` and import
//! nothing of the domain (`misc_device`, `rdma_cm`, `id_table`,
//! `tagged_list`, `owned_queue`, `user_input`, `tunables`, and `rdma_sys`
//! and `ucma_shim`, the generated bindings); and `ucma_core` (shared with
//! the host cargo build), the pure ABI logic.

use kernel::{
    fs::File,
    prelude::*,
    seq_file::SeqFile,
    sync::{
        poll::PollTable,
        Arc,
        ArcBorrow, //
    },
    uaccess::UserPtr,
};

use crate::{
    context::{
        Context,
        Listener, //
    },
    device::UcmaDevice,
    kcov::KcovHandle,
    tagged_list::impl_tagged,
    tunables::Sysctl, //
};

use ib_client::IbClient;
use misc_device::{
    FileOperations,
    MiscDevice,
    MiscDeviceOptions,
    MiscDeviceRegistration,
    WriteFile, //
};
use ucma_file::UcmaFile;

mod abi_check;
mod context;
mod device;
mod event;
mod id_table;
mod kcov;
mod marshal;
mod memcg;
mod misc_device;
mod multicast;
mod owned_queue;
mod tagged_list;
mod tunables;
mod ucma_file;
mod ucma_shim;
mod user_input;

// The rdma_cm abstraction: the module's own out of tree (its API is `pub`,
// as the kernel crate's is), the kernel crate's `kernel::rdma::cm` in a
// kernel tree (Kbuild, scripts/in-tree-series).
#[cfg(not(ucma_in_tree))]
#[allow(unreachable_pub)]
mod rdma_cm;
#[cfg(not(ucma_in_tree))]
mod rdma_sys;
#[cfg(ucma_in_tree)]
use kernel::rdma::cm as rdma_cm;

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
/// files; its shared state goes once the last reference to it does), then
/// the sysctl.
#[pin_data(PinnedDrop)]
struct UcmaModule {
    _client: IbClient,
    #[pin]
    misc: MiscDeviceRegistration<UcmaFile>,
    _sysctl: Sysctl,
}

impl kernel::InPlaceModule for UcmaModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            // Refuse early, before touching anything the C module also owns
            // (the sysctl path, the misc name, the ib_client name).
            _sysctl: {
                ensure_name_free()?;
                Sysctl::register()?
            },
            misc <- MiscDeviceRegistration::register(
                misc_options(),
                Arc::pin_init(UcmaDevice::new(), GFP_KERNEL)?,
            ),
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

#[pinned_drop]
impl PinnedDrop for UcmaModule {
    fn drop(self: Pin<&mut Self>) {
        // No file is open (each pins the module): teardown queued by a
        // device removal is all that may still run this module's code.
        self.misc.data().drain_close_work();
    }
}

// Here, not in `context`: the macro expands to an `unsafe impl`, which
// the domain modules forbid.
impl_tagged! {
    impl Tagged<0> for Context { self.list_tag }
}
impl_tagged! {
    impl Tagged<0> for Listener { self.tag }
}

/// The file operations of `/dev/infiniband/rdma_cm`, at one address
/// (MIGRATE_ID recognises the files of the device by it).
static FOPS: FileOperations<UcmaFile> = FileOperations::new();

/// The device's file operations, each the domain's (`ucma_file`).
impl MiscDevice for UcmaFile {
    type OwnerModule = LocalModule;
    type Ptr = Arc<UcmaFile>;
    type RegistrationData = Arc<UcmaDevice>;

    fn fops() -> &'static FileOperations<Self> {
        &FOPS
    }

    fn open(_file: &File, device: &Arc<UcmaDevice>) -> Result<Arc<Self>> {
        UcmaFile::new(device)
    }

    fn release(state: Arc<Self>) {
        UcmaFile::release_file(state);
    }

    #[inline]
    fn write(
        state: ArcBorrow<'_, Self>,
        file: &WriteFile<'_>,
        buf: UserPtr,
        len: usize,
    ) -> Result<usize> {
        let _coverage = KcovHandle::of_current().section();
        if !safe_file_access(file) {
            return Err(EACCES);
        }
        let nonblocking = file.flags() & kernel::fs::file::flags::O_NONBLOCK != 0;
        UcmaFile::write_command(state, nonblocking, buf, len)
    }

    fn poll(state: ArcBorrow<'_, Self>, file: &File, table: PollTable<'_>) -> u32 {
        let _coverage = KcovHandle::of_current().section();
        state.poll(file, table)
    }

    fn show_fdinfo(state: ArcBorrow<'_, Self>, m: &SeqFile) {
        UcmaFile::show_fdinfo(state, m);
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
    unsafe { opts.groups(ucma_shim::ucma_shim_misc_groups()) }
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

/// `ib_safe_file_access()`: whether the writer of `file` has the
/// credentials it was opened with and is not in a kernel context that
/// writes on someone's behalf (a refusal is logged once), as every RDMA
/// write()-command interface requires.
fn safe_file_access(file: &WriteFile<'_>) -> bool {
    // SAFETY: `file` is valid while borrowed; the check only reads it.
    unsafe { ucma_shim::ucma_shim_safe_file_access(file.as_ptr()) }
}

/// The `rdma_cm` ib_client, in a module of its own: its value is made only
/// by [`ib_client::IbClient::register`] (a private field), not by the
/// domain modules, which see everything private to the crate root.
mod ib_client {
    use kernel::prelude::*;

    use crate::ucma_shim;

    /// The `rdma_cm` ib_client: answers netlink chardev discovery with the
    /// misc device and ABI 4.
    ///
    /// # Invariants
    ///
    /// The client is registered; it is unregistered exactly once, in `drop`.
    pub(super) struct IbClient {
        _registered: (),
    }

    impl IbClient {
        /// Registers the client, reporting `dev`: `EBUSY` while another
        /// `IbClient` lives.
        ///
        /// # Safety
        ///
        /// `dev` must be a valid device that stays so until the returned
        /// value is dropped.
        pub(super) unsafe fn register(dev: *mut kernel::bindings::device) -> Result<Self> {
            // SAFETY: `dev` is valid until `drop`, which unregisters the
            // client, as guaranteed by the caller; the shim refuses a second
            // registration, under its lock, and changes nothing then.
            kernel::error::to_result(unsafe { ucma_shim::ucma_shim_client_register(dev) })?;
            // INVARIANT: registered just above, by this call: no other
            // `IbClient` lives (its registration would have made the call
            // fail).
            Ok(IbClient { _registered: () })
        }
    }

    impl Drop for IbClient {
        fn drop(&mut self) {
            // SAFETY: by the type invariant the client is registered.
            unsafe { ucma_shim::ucma_shim_client_unregister() };
        }
    }
}
