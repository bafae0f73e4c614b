// SPDX-License-Identifier: GPL-2.0

//! The errors the uCMA ABI reports to userspace.
//!
//! The core speaks in these values; the kernel layer converts them to a
//! `kernel::error::Error` exactly once, at the file-operation boundary.

/// An error returned to userspace, named after its errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Errno {
    /// `ENOENT`: no such id on this file.
    NoEnt = 2,
    /// `ENXIO`: the id's device is gone (zombie context).
    NxIo = 6,
    /// `EAGAIN`: no event queued and the file is non-blocking.
    Again = 11,
    /// `ENOMEM`: an allocation failed.
    NoMem = 12,
    /// `EACCES`: the writer's credentials are not the opener's.
    Access = 13,
    /// `EFAULT`: a user pointer could not be read or written.
    Fault = 14,
    /// `EINVAL`: malformed or out-of-state request.
    Inval = 22,
    /// `ENOSPC`: the response buffer is too small.
    NoSpc = 28,
    /// `ENOSYS`: command slot or option not implemented (as in the C module).
    NoSys = 38,
    /// `ENODATA`: nothing to report.
    NoData = 61,
    /// `EOPNOTSUPP`: operation not supported.
    OpNotSupp = 95,
}

impl Errno {
    /// The positive errno value.
    pub const fn to_errno(self) -> i32 {
        self as i32
    }
}
