// SPDX-License-Identifier: GPL-2.0

//! Misc devices driven from Rust: registration and file operations.
//!
//! C header: [`include/linux/miscdevice.h`](srctree/include/linux/miscdevice.h).
//!
//! Modelled on the kernel's `rust/kernel/miscdevice.rs`: a driver implements
//! [`MiscDevice`] for the state of an open file, declares its
//! [`FileOperations`] in a `static` and registers a
//! [`MiscDeviceRegistration`]. The generic `extern "C"` entry points borrow
//! the file's state, wrap the raw pointers, call the driver's safe method and
//! map its result to an errno once. The kernel's abstraction is not used:
//! `Documentation/design.rst` says why.
//!
//! Nothing here names a driver: the only module of this crate it uses is the
//! bindings of the C shim, [`crate::ucma_shim`].

use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

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
    module::this_module,
    prelude::*,
    seq_file::SeqFile,
    str::as_char_ptr_in_const_context,
    sync::{
        aref::ARef,
        poll::PollTable, //
    },
    types::{
        ForeignOwnable,
        Opaque, //
    },
    uaccess::UserPtr,
    ModuleMetadata,
};

use crate::ucma_shim;

/// The driver of a misc device: the state of each open file and the file
/// operations on it.
pub(crate) trait MiscDevice: Sized + 'static {
    /// The module implementing the device, which owns its file operations.
    type OwnerModule: ModuleMetadata;

    /// What holds the state of an open file, in its `private_data`.
    type Ptr: ForeignOwnable + Send + Sync;

    /// The device's file operations: a `static` of the driver, so that they
    /// have one address, by which [`FileRef::get`] recognises the files of
    /// the device (see [`FileOperations`]).
    fn fops() -> &'static FileOperations<Self>;

    /// What the registration holds for its files (the device's shared
    /// state); [`Self::open`] borrows it.
    type RegistrationData: Send + Sync;

    /// `open()`: creates the state of a newly opened file of the device
    /// whose registration holds `data`. The file is a stream
    /// (`stream_open()`: no `lseek`, `pread` or `pwrite`).
    fn open(file: &File, data: &Self::RegistrationData) -> Result<Self::Ptr>;

    /// `release()`: the last reference to the file is gone; no other
    /// operation runs on it, now or later.
    ///
    /// It gets the file's state but not the file: its reference count is
    /// zero (`__fput()` frees it when this returns), so a `&File`, which
    /// safe code may turn into a counted `ARef<File>`, would let a
    /// reference outlive the file.
    fn release(state: Self::Ptr);

    /// `write()` of `len` bytes at `buf`. Returns the count of bytes
    /// consumed. It gets a [`WriteFile`], not a `&File` (see there).
    fn write(
        state: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        file: &WriteFile<'_>,
        buf: UserPtr,
        len: usize,
    ) -> Result<usize>;

    /// `poll()`: registers on `table` and returns the mask of ready events.
    fn poll(
        state: <Self::Ptr as ForeignOwnable>::Borrowed<'_>,
        file: &File,
        table: PollTable<'_>,
    ) -> u32;

    /// `show_fdinfo()`: lines for `/proc/<pid>/fdinfo/<fd>`, after the
    /// kernel's own. Prints nothing unless implemented.
    fn show_fdinfo(_state: <Self::Ptr as ForeignOwnable>::Borrowed<'_>, _m: &SeqFile) {}
}

/// The file a `write()` is for: its flags, and its address for C checks
/// that take a `struct file`.
///
/// Not a `&File`: the VFS calls `write()` inside an `fdget_pos()` region
/// that took no `f_pos_lock` (the file is a stream, `stream_open` cleared
/// `FMODE_ATOMIC_POS`), and `File::from_raw_file` requires that no such
/// region be active.
///
/// # Invariants
///
/// `ptr` is a file the VFS holds a reference to for `'a`.
pub(crate) struct WriteFile<'a> {
    ptr: NonNull<bindings::file>,
    _borrow: PhantomData<&'a bindings::file>,
}

impl WriteFile<'_> {
    /// The file's flags (`f_flags`: `O_NONBLOCK` ...), read once, as
    /// `File::flags` reads them.
    pub(crate) fn flags(&self) -> u32 {
        // SAFETY: by the invariant the file is valid; `f_flags` may change
        // under `fcntl(F_SETFL)`, hence the volatile read.
        unsafe { core::ptr::addr_of!((*self.ptr.as_ptr()).f_flags).read_volatile() }
    }

    /// The `struct file`, valid while this borrow lives.
    pub(crate) fn as_ptr(&self) -> *mut bindings::file {
        self.ptr.as_ptr()
    }
}

/// The file operations of the devices of driver `T`.
///
/// A driver declares them once, as a `static`:
/// `static FOPS: FileOperations<Driver> = FileOperations::new();`, and
/// returns it from [`MiscDevice::fops`]. `misc_open()` sets the `f_op` of
/// every file it opens to the registered table, so a file of the device is
/// one whose `f_op` is that table's address (as a C driver compares `f_op`
/// with the address of its `file_operations`).
///
/// The kernel's abstraction (`MiscdeviceVTable::build()`) builds its table
/// as a `const`, promoted to a `&'static` (`&Self::VTABLE`): enough to
/// register it, but a constant has no unique address (each use may be a
/// copy), so an address taken elsewhere might not equal the registered
/// one. A `static` is one object at one address.
///
/// # Invariants
///
/// `table` holds the entry points of [`VTable<T>`], with `T::OwnerModule` as
/// owner.
pub(crate) struct FileOperations<T> {
    table: bindings::file_operations,
    _t: PhantomData<T>,
}

// SAFETY: the table is immutable; its raw pointers are a module pointer and
// functions, which any thread may use.
unsafe impl<T> Sync for FileOperations<T> {}

impl<T: MiscDevice> FileOperations<T> {
    /// The file operations of `T`'s devices.
    pub(crate) const fn new() -> Self {
        // INVARIANT: the entry points of `VTable<T>`, owned by `T`'s module.
        Self {
            table: bindings::file_operations {
                owner: this_module::<T::OwnerModule>().as_ptr(),
                open: Some(VTable::<T>::open),
                release: Some(VTable::<T>::release),
                write: Some(VTable::<T>::write),
                poll: Some(VTable::<T>::poll),
                show_fdinfo: Some(VTable::<T>::show_fdinfo),
                ..pin_init::zeroed()
            },
            _t: PhantomData,
        }
    }

    /// The table, as `miscdevice.fops` and `file.f_op` point to it.
    fn as_raw(&self) -> *const bindings::file_operations {
        &self.table
    }
}

/// Options for registering a misc device.
///
/// # Invariants
///
/// `groups` is null or points to a NULL-terminated array of attribute
/// groups that stay valid as long as the module is loaded.
#[derive(Copy, Clone)]
pub(crate) struct MiscDeviceOptions {
    name: &'static CStr,
    nodename: Option<&'static CStr>,
    mode: u16,
    groups: *mut *const bindings::attribute_group,
}

impl MiscDeviceOptions {
    /// The device `/sys/class/misc/<name>`, with a dynamic minor. Unless
    /// set, the node is `/dev/<name>` with the kernel's default mode, and
    /// the device has no attribute groups.
    pub(crate) const fn new(name: &'static CStr) -> Self {
        // INVARIANT: `groups` is null.
        Self {
            name,
            nodename: None,
            mode: 0,
            groups: core::ptr::null_mut(),
        }
    }

    /// The path of the node below `/dev`.
    pub(crate) const fn nodename(self, nodename: &'static CStr) -> Self {
        Self {
            nodename: Some(nodename),
            ..self
        }
    }

    /// The mode of the node.
    pub(crate) const fn mode(self, mode: u16) -> Self {
        Self { mode, ..self }
    }

    /// The attribute groups of the device.
    ///
    /// # Safety
    ///
    /// `groups` must be null or point to a NULL-terminated array of
    /// attribute groups that stay valid as long as the module is loaded.
    pub(crate) const unsafe fn groups(self, groups: *mut *const bindings::attribute_group) -> Self {
        // INVARIANT: guaranteed by the caller.
        Self { groups, ..self }
    }

    /// Whether a misc device of this name exists already (its
    /// `/sys/class/misc/<name>`).
    pub(crate) fn name_taken(&self) -> bool {
        // SAFETY: the name is a valid NUL-terminated string.
        unsafe { ucma_shim::ucma_shim_misc_name_taken(as_char_ptr_in_const_context(self.name)) }
    }

    /// A `struct miscdevice` with these options and `T`'s file operations.
    fn into_raw<T: MiscDevice>(self) -> bindings::miscdevice {
        let mut misc: bindings::miscdevice = pin_init::zeroed();
        // CAST: MISC_DYNAMIC_MINOR (255) fits in a c_int.
        misc.minor = bindings::MISC_DYNAMIC_MINOR as c_int;
        misc.name = as_char_ptr_in_const_context(self.name);
        if let Some(nodename) = self.nodename {
            misc.nodename = as_char_ptr_in_const_context(nodename);
        }
        misc.mode = self.mode;
        misc.groups = self.groups;
        misc.fops = T::fops().as_raw();
        misc
    }
}

/// A registered misc device whose files are driven by `T`, with the data
/// its files' `open` borrows.
///
/// # Invariants
///
/// `inner` holds a `struct miscdevice` built by
/// [`MiscDeviceOptions::into_raw::<T>`] and registered with
/// `misc_register()`; it is deregistered exactly once, in `drop`. Every
/// `miscdevice` whose file operations are `T::fops()` is the `inner` of a
/// `MiscDeviceRegistration<T>` (only [`Self::register`] registers them).
#[pin_data(PinnedDrop)]
pub(crate) struct MiscDeviceRegistration<T: MiscDevice> {
    #[pin]
    inner: Opaque<bindings::miscdevice>,
    data: T::RegistrationData,
    _t: PhantomData<T>,
}

// SAFETY: `misc_deregister` may be called from any thread; the registration
// holds no `T`, and its data is `Send`.
unsafe impl<T: MiscDevice> Send for MiscDeviceRegistration<T> {}
// SAFETY: the `&self` methods read a field that does not change while the
// device is registered, or borrow the data, which is `Sync`.
unsafe impl<T: MiscDevice> Sync for MiscDeviceRegistration<T> {}

impl<T: MiscDevice> MiscDeviceRegistration<T> {
    /// Registers a misc device with `opts`, whose files `T` drives and
    /// whose `open` borrows `data`.
    pub(crate) fn register(
        opts: MiscDeviceOptions,
        data: T::RegistrationData,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            // Before `inner`: once registered, files may be opened, and
            // their `open` borrows it.
            data,
            inner <- Opaque::try_ffi_init(move |slot: *mut bindings::miscdevice| {
                // SAFETY: the initializer may write to `slot`.
                unsafe { slot.write(opts.into_raw::<T>()) };
                // INVARIANT: on success `slot` holds a registered device.
                // SAFETY: `slot` holds a fully initialised miscdevice whose
                // strings and fops are 'static and whose groups outlive it
                // (invariant of `MiscDeviceOptions`). It is pinned, and
                // deregistered in `drop` before its memory goes away.
                to_result(unsafe { bindings::misc_register(slot) })
            }),
            _t: PhantomData,
        })
    }
}

impl<T: MiscDevice> MiscDeviceRegistration<T> {
    /// The data the device's files' `open` borrows.
    pub(crate) fn data(&self) -> &T::RegistrationData {
        &self.data
    }

    /// The registration whose device `misc` is.
    ///
    /// # Safety
    ///
    /// `misc` is the `inner` of a live `MiscDeviceRegistration<T>`, which
    /// outlives `'a`.
    unsafe fn from_misc<'a>(misc: *mut bindings::miscdevice) -> &'a Self {
        // CAST: `Opaque<miscdevice>` is transparent over `miscdevice`.
        let inner = misc.cast::<Opaque<bindings::miscdevice>>();
        // The offset takes the field back to the start of its struct.
        // SAFETY: `inner` is the field of a live registration (caller).
        unsafe {
            &*inner
                .byte_sub(core::mem::offset_of!(Self, inner))
                .cast::<Self>()
        }
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
impl<T: MiscDevice> PinnedDrop for MiscDeviceRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: by the type invariant the device is registered.
        unsafe { bindings::misc_deregister(self.inner.get()) };
    }
}

/// A file of a `T` device named by a file descriptor of the caller, held
/// open (its `release()` cannot run) while this value lives, as C's
/// `fdget()`.
///
/// # Invariants
///
/// `file`'s `f_op` is `T::fops()`: it was opened by [`VTable::<T>::open`],
/// and its `private_data` holds the `T::Ptr` that open stored.
pub(crate) struct FileRef<T> {
    file: ARef<LocalFile>,
    _t: PhantomData<T>,
}

impl<T: MiscDevice> FileRef<T> {
    /// The file behind descriptor `fd`: `ENOENT` if `fd` is not open,
    /// `EINVAL` if it is not a file of a `T` device.
    pub(crate) fn get(fd: u32) -> Result<Self> {
        let file = LocalFile::fget(fd).map_err(|_| ENOENT)?;
        // SAFETY: `file` holds a reference, so the file is valid; `f_op` is
        // set before the file is installed in a descriptor table and does
        // not change afterwards.
        let fops = unsafe { (*file.as_ptr()).f_op };
        // `misc_open()` sets `f_op` to the registered `miscdevice.fops`, that
        // is `T::fops()`: a `static`, at one address (see `FileOperations`).
        // Only a successful open installs a file in a descriptor table, so
        // `VTable::<T>::open` stored the state.
        if !core::ptr::eq(fops, T::fops().as_raw()) {
            return Err(EINVAL);
        }
        // INVARIANT: checked above.
        Ok(Self {
            file,
            _t: PhantomData,
        })
    }

    /// The file's state.
    pub(crate) fn state(&self) -> <T::Ptr as ForeignOwnable>::Borrowed<'_> {
        // SAFETY: by the type invariant the file was opened by
        // `VTable::<T>::open`; the reference `self.file` holds keeps its
        // `release()` from running while the borrow, tied to `self`, lives.
        unsafe { VTable::<T>::state(self.file.as_ptr()) }
    }
}

/// The `extern "C"` file operations of the files of `T`'s devices.
struct VTable<T>(PhantomData<T>);

impl<T: MiscDevice> VTable<T> {
    /// Borrows the state that [`Self::open`] stored in `file`.
    ///
    /// # Safety
    ///
    /// `file` must be a file opened by [`Self::open`], and [`Self::release`]
    /// must not run on it while the borrow lives.
    unsafe fn state<'a>(file: *mut bindings::file) -> <T::Ptr as ForeignOwnable>::Borrowed<'a> {
        // SAFETY: `private_data` holds the pointer `into_foreign` returned in
        // `open`; `release`, the only `from_foreign`, cannot run while the
        // borrow lives, as guaranteed by the caller.
        unsafe { <T::Ptr as ForeignOwnable>::borrow((*file).private_data) }
    }

    /// `open()`: a stream file, with the state `T::open` creates.
    ///
    /// # Safety
    ///
    /// Called by `misc_open()` with a valid inode and a file being opened.
    unsafe extern "C" fn open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
        // SAFETY: `inode` and `file` are valid, as guaranteed by the caller.
        let ret = unsafe { bindings::stream_open(inode, file) };
        if ret != 0 {
            return ret;
        }
        // `misc_open()` set `private_data` to the miscdevice whose fops these
        // are: by the invariant of `MiscDeviceRegistration`, the `inner` of a
        // `MiscDeviceRegistration<T>`, registered (alive) during the open.
        // SAFETY: as said above; `misc_mtx` is held while we open.
        let reg = unsafe { MiscDeviceRegistration::<T>::from_misc((*file).private_data.cast()) };
        // SAFETY: the file is valid for the duration of this call, and no
        // `fdget_pos` region is active on it (it is being opened).
        let fileref = unsafe { File::from_raw_file(file) };
        let state = match T::open(fileref, reg.data()) {
            Ok(state) => state,
            Err(e) => return e.to_errno(),
        };
        // SAFETY: `file` is valid. This overwrites misc_open's
        // `private_data` (the miscdevice), which nothing else reads; every
        // other entry point here reads it as the state, and `release` takes
        // it back.
        unsafe { (*file).private_data = state.into_foreign() };
        0
    }

    /// `release()`: the last reference to the file is gone.
    ///
    /// # Safety
    ///
    /// Called by the VFS once per successful [`Self::open`], after every
    /// other operation on the file.
    unsafe extern "C" fn release(_inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
        // SAFETY: `private_data` came from `into_foreign` in `open`, and
        // release runs exactly once, after every other operation on the file.
        let state = unsafe { <T::Ptr as ForeignOwnable>::from_foreign((*file).private_data) };
        T::release(state);
        0
    }

    /// `write()`.
    ///
    /// # Safety
    ///
    /// Called by the VFS with a file opened by [`Self::open`] and a user
    /// buffer.
    unsafe extern "C" fn write(
        file: *mut bindings::file,
        buf: *const c_char,
        len: usize,
        _ppos: *mut bindings::loff_t,
    ) -> isize {
        // SAFETY: `file` was opened by `open` and this is a file operation,
        // so `release` cannot run while the borrow lives (it ends with this
        // call).
        let state = unsafe { Self::state(file) };
        // INVARIANT: the VFS holds a reference to `file` for the whole
        // call, which the borrow does not outlive.
        let fileref = WriteFile {
            // SAFETY: the VFS passes a valid file, never a null pointer.
            ptr: unsafe { NonNull::new_unchecked(file) },
            _borrow: PhantomData,
        };
        let buf = UserPtr::from_ptr(buf.cast_mut().cast());
        match T::write(state, &fileref, buf, len) {
            // No more than was written; the VFS caps `len` at MAX_RW_COUNT,
            // so it fits in an isize.
            Ok(n) => isize::try_from(n.min(len)).unwrap_or(isize::MAX),
            // CAST: errnos are small negative numbers.
            Err(e) => e.to_errno() as isize,
        }
    }

    /// `poll()`.
    ///
    /// # Safety
    ///
    /// Called by the VFS with a file opened by [`Self::open`] and a null or
    /// valid poll table.
    unsafe extern "C" fn poll(
        file: *mut bindings::file,
        wait: *mut bindings::poll_table_struct,
    ) -> bindings::__poll_t {
        // SAFETY: `file` was opened by `open` and this is a file operation.
        let state = unsafe { Self::state(file) };
        // SAFETY: the VFS holds a reference to `file` for the whole call.
        // The file is a stream (`stream_open` cleared `FMODE_ATOMIC_POS`), so
        // an `fdget_pos` on it takes no `f_pos_lock` and may be active on
        // another thread; what that condition of `from_raw_file` protects,
        // `f_pos`, is never read or written through this `&File` (only its
        // flags are read and its poll table registered), as in
        // `rust/kernel/miscdevice.rs`'s entry points.
        let fileref = unsafe { File::from_raw_file(file) };
        // SAFETY: `wait` is null or a valid poll table for the duration of
        // the call.
        let table = unsafe { PollTable::from_raw(wait) };
        T::poll(state, fileref, table)
    }

    /// `show_fdinfo()`.
    ///
    /// # Safety
    ///
    /// Called by procfs with a valid seq_file and a file opened by
    /// [`Self::open`], of which it holds a reference.
    unsafe extern "C" fn show_fdinfo(m: *mut bindings::seq_file, file: *mut bindings::file) {
        // SAFETY: procfs holds a reference to `file` for the call, so
        // `release` cannot run while the borrow lives.
        let state = unsafe { Self::state(file) };
        // SAFETY: `m` is valid for the call, and used only under its lock,
        // which seq_file holds around it.
        let m = unsafe { SeqFile::from_raw(m) };
        T::show_fdinfo(state, m);
    }
}
