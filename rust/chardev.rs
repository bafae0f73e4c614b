// SPDX-License-Identifier: GPL-2.0

//! The `rdma_cm` misc device and its VFS entry points.
//!
//! The 7.3 `MiscDevice` abstraction has no `poll`, `nodename`, `mode` or
//! attribute groups, so the device is registered here from a raw
//! `struct miscdevice` with the module's own `file_operations`. Every
//! `extern "C"` entry point borrows the per-file [`UcmaFile`], wraps the raw
//! pointers, calls a safe method and maps the result to an errno once.

use kernel::{
    bindings,
    error::to_result,
    ffi::{
        c_char,
        c_int, //
    },
    fs::{
        File,
        LocalFile, //
    },
    prelude::*,
    str::as_char_ptr_in_const_context,
    sync::aref::ARef,
    sync::{
        poll::PollTable,
        Arc, //
    },
    types::{
        ForeignOwnable,
        Opaque, //
    },
    uaccess::UserPtr,
};

use crate::{
    rdma_sys,
    ucma_file::UcmaFile, //
};

/// Misc device name: `/sys/class/misc/rdma_cm`, as the C module.
const MISC_NAME: &CStr = c"rdma_cm";
/// Device node below `/dev`.
const NODE_NAME: &CStr = c"infiniband/rdma_cm";
/// Every user may open the node; librdmacm relies on it (rdma-core ships no udev rule).
const NODE_MODE: u16 = 0o666;

/// The file operations of the uCMA device, at one address (MIGRATE_ID
/// recognises files of this device by it).
struct FileOps(bindings::file_operations);

// SAFETY: the table is immutable; its raw pointers are a module pointer and
// functions, which any thread may use.
unsafe impl Sync for FileOps {}

static FOPS: FileOps = FileOps(bindings::file_operations {
    owner: kernel::module::this_module::<crate::LocalModule>().as_ptr(),
    open: Some(ucma_open),
    release: Some(ucma_release),
    write: Some(ucma_write),
    poll: Some(ucma_poll),
    ..pin_init::zeroed()
});

/// The registered `rdma_cm` misc device.
///
/// # Invariants
///
/// `inner` holds a `struct miscdevice` registered with `misc_register()`,
/// deregistered exactly once, in `drop`.
#[pin_data(PinnedDrop)]
pub(crate) struct MiscRegistration {
    #[pin]
    inner: Opaque<bindings::miscdevice>,
}

// SAFETY: `misc_deregister` may be called from any thread; the registration
// has no other state.
unsafe impl Send for MiscRegistration {}
// SAFETY: no `&self` method exists that could race.
unsafe impl Sync for MiscRegistration {}

impl MiscRegistration {
    /// Fails with `EBUSY`, and says why, if another `rdma_cm` misc device
    /// (the C `rdma_ucm`) exists.
    pub(crate) fn ensure_name_free() -> Result {
        // SAFETY: the name is a valid NUL-terminated string.
        let taken =
            unsafe { rdma_sys::ucma_shim_misc_name_taken(as_char_ptr_in_const_context(MISC_NAME)) };
        if taken {
            pr_err!("the rdma_cm device is held by another module (rdma_ucm?): unload it first\n");
            return Err(EBUSY);
        }
        Ok(())
    }

    /// Registers `/dev/infiniband/rdma_cm` (mode 0666) with its `abi_version`
    /// attribute.
    pub(crate) fn register() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            inner <- Opaque::try_ffi_init(move |slot: *mut bindings::miscdevice| {
                let mut misc: bindings::miscdevice = pin_init::zeroed();
                // CAST: MISC_DYNAMIC_MINOR (255) fits in a c_int.
                misc.minor = bindings::MISC_DYNAMIC_MINOR as c_int;
                misc.name = as_char_ptr_in_const_context(MISC_NAME);
                misc.nodename = as_char_ptr_in_const_context(NODE_NAME);
                misc.mode = NODE_MODE;
                misc.fops = &FOPS.0;
                // SAFETY: the shim returns a pointer to a static, NULL-terminated array.
                misc.groups = unsafe { rdma_sys::ucma_shim_misc_groups() };
                // SAFETY: the initializer may write to `slot`.
                unsafe { slot.write(misc) };
                // SAFETY: `slot` holds a fully initialised miscdevice whose
                // strings, fops and groups are 'static. It is pinned, and
                // deregistered in `drop` before its memory goes away.
                // INVARIANT: on success `slot` holds a registered device.
                to_result(unsafe { bindings::misc_register(slot) })
            }),
        })
    }

    /// The registered device's `this_device`, valid while `self` lives.
    pub(crate) fn device(&self) -> *mut bindings::device {
        // SAFETY: by the type invariant `inner` is registered, so
        // `misc_register()` set `this_device`; nothing writes it until
        // `misc_deregister()` in `drop`.
        unsafe { (*self.inner.get()).this_device }
    }
}

#[pinned_drop]
impl PinnedDrop for MiscRegistration {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: by the type invariant the device is registered.
        unsafe { bindings::misc_deregister(self.inner.get()) };
    }
}

/// Borrows the [`UcmaFile`] that `ucma_open` stored in `file`.
///
/// # Safety
///
/// `file` must be a file of this device opened by `ucma_open` and not yet
/// released; the borrow must not outlive the current file operation.
unsafe fn ucma_file<'a>(
    file: *mut bindings::file,
) -> <Arc<UcmaFile> as ForeignOwnable>::Borrowed<'a> {
    // SAFETY: `private_data` holds the pointer `into_foreign` returned in
    // `ucma_open`; `ucma_release` (the only `from_foreign`) cannot run while a
    // file operation is in progress, as guaranteed by the caller.
    unsafe { <Arc<UcmaFile> as ForeignOwnable>::borrow((*file).private_data) }
}

/// `open()`: creates the per-file state, with stream semantics (no pwrite or lseek).
///
/// # Safety
///
/// Called by the VFS (through misc_open) with a valid inode and file.
unsafe extern "C" fn ucma_open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    let state = match UcmaFile::new() {
        Ok(state) => state,
        Err(e) => return e.to_errno(),
    };
    // SAFETY: `inode` and `file` are valid, as guaranteed by the caller.
    let ret = unsafe { bindings::stream_open(inode, file) };
    if ret != 0 {
        return ret;
    }
    // SAFETY: `file` is valid; misc_open's `private_data` (the miscdevice) is
    // overwritten, as in the C module. `ucma_release` takes it back.
    unsafe { (*file).private_data = state.into_foreign() };
    0
}

/// `release()`: the last reference to the file is gone.
///
/// # Safety
///
/// Called by the VFS once per successful `ucma_open`, after every other file operation.
unsafe extern "C" fn ucma_release(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `private_data` came from `into_foreign` in `ucma_open`, and
    // release runs exactly once, after every other operation on the file.
    let state = unsafe { <Arc<UcmaFile> as ForeignOwnable>::from_foreign((*file).private_data) };
    state.release();
    drop(state);
    0
}

/// `write()`: one uCMA command.
///
/// # Safety
///
/// Called by the VFS with a valid, open file of this device and a user buffer.
unsafe extern "C" fn ucma_write(
    file: *mut bindings::file,
    buf: *const c_char,
    len: usize,
    _ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: `file` is open and this is a file operation, so `ucma_release`
    // cannot run while the borrow lives (it ends with this call).
    let state = unsafe { ucma_file(file) };
    // SAFETY: `file` is a valid file.
    let may_write = unsafe { rdma_sys::ucma_shim_safe_file_access(file) };
    // SAFETY: the VFS holds a reference to `file` for the whole call, and this
    // device takes no `fdget_pos` (it is a stream).
    let fileref = unsafe { File::from_raw_file(file) };
    let ret = UcmaFile::write(
        state,
        fileref,
        may_write,
        UserPtr::from_ptr(buf.cast_mut().cast()),
        len,
    );
    match ret {
        // The VFS caps `len` at MAX_RW_COUNT, so it fits in an isize.
        Ok(n) => isize::try_from(n).unwrap_or(isize::MAX),
        // CAST: errnos are small negative numbers.
        Err(e) => e.to_errno() as isize,
    }
}

/// A file of this device named by a file descriptor of the caller, held
/// open (its `release()` cannot run) while this value lives: MIGRATE_ID's
/// source, as C's `fdget()`.
///
/// # Invariants
///
/// `file` is a file of this device opened by `ucma_open`, and `state` its
/// [`UcmaFile`].
pub(crate) struct UcmaFileRef {
    // Declared first, dropped first: the file reference outlives nothing
    // that borrows from it.
    state: Arc<UcmaFile>,
    _file: ARef<LocalFile>,
}

impl UcmaFileRef {
    /// The file behind descriptor `fd`: `ENOENT` if `fd` is not open,
    /// `EINVAL` if it is not this device.
    pub(crate) fn get(fd: u32) -> Result<Self> {
        let file = LocalFile::fget(fd).map_err(|_| ENOENT)?;
        let raw = file.as_ptr();
        // SAFETY: `file` holds a reference, so `raw` is valid.
        let fops = unsafe { (*raw).f_op };
        if !core::ptr::eq(fops, &FOPS.0) {
            return Err(EINVAL);
        }
        // SAFETY: files with our fops were opened by `ucma_open`, and the
        // reference held by `file` keeps `ucma_release` from running while we
        // take our own reference.
        let state: Arc<UcmaFile> = unsafe { ucma_file(raw) }.into();
        // INVARIANT: checked above.
        Ok(UcmaFileRef { state, _file: file })
    }

    /// The file's state.
    pub(crate) fn state(&self) -> &Arc<UcmaFile> {
        &self.state
    }
}

/// `poll()`: readable while events are queued.
///
/// # Safety
///
/// Called by the VFS with a valid, open file of this device and a null or valid poll table.
unsafe extern "C" fn ucma_poll(
    file: *mut bindings::file,
    wait: *mut bindings::poll_table_struct,
) -> bindings::__poll_t {
    // SAFETY: `file` is open and this is a file operation.
    let state = unsafe { ucma_file(file) };
    // SAFETY: the VFS holds a reference to `file` for the whole call, and this
    // device takes no `fdget_pos` (it is a stream).
    let fileref = unsafe { File::from_raw_file(file) };
    // SAFETY: `wait` is null or a valid poll table for the duration of the call.
    let table = unsafe { PollTable::from_raw(wait) };
    state.poll(fileref, table)
}
