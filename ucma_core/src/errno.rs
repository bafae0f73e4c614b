// SPDX-License-Identifier: GPL-2.0

//! The errors the core reports: those of command framing.
//!
//! The kernel layer converts them to a `kernel::error::Error` with `From`,
//! at the file-operation boundary.

/// An error returned to userspace, named after its errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Errno {
    /// `EINVAL`: malformed or out-of-state request.
    Inval = 22,
    /// `ENOSYS`: command slot or option not implemented (as in the C module).
    NoSys = 38,
}
