// SPDX-License-Identifier: GPL-2.0

//! Per-open-file state of the uCMA device and the commands written to it.
//!
//! One [`UcmaFile`] exists per `open()` of `/dev/infiniband/rdma_cm`; librdmacm
//! calls it an event channel. It is shared (`Arc`) between the VFS entry
//! points in `chardev` and, later, the rdma_cm event handlers.

use kernel::{
    fs::File,
    new_poll_condvar,
    prelude::*,
    sync::{
        poll::{
            PollCondVar,
            PollTable, //
        },
        Arc, //
    },
    uaccess::UserSliceReader,
};

use crate::ucma_core::{
    abi::{
        check_write_len,
        CmdHeader,
        Request,
        CMD_HDR_SIZE, //
    },
    errno::Errno,
};

/// Converts a core error into the kernel error returned to userspace.
pub(crate) fn errno_to_error(e: Errno) -> Error {
    // The core only holds valid positive errno values.
    Error::from_errno(-e.to_errno())
}

/// State of one open file of the uCMA device.
#[pin_data]
pub(crate) struct UcmaFile {
    /// Woken whenever an event is queued; `poll()` waits on it.
    #[pin]
    poll_wait: PollCondVar,
}

impl UcmaFile {
    /// Allocates the state of a newly opened file.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                poll_wait <- new_poll_condvar!("UcmaFile::poll_wait"),
            }),
            GFP_KERNEL,
        )
    }

    /// Handles one `write()` of `len` bytes: a command header and its payload.
    ///
    /// `may_write` is the outcome of the credential check (`ib_safe_file_access`).
    /// Returns `len` on success, as the C module does.
    pub(crate) fn write(
        &self,
        may_write: bool,
        mut reader: UserSliceReader,
        len: usize,
    ) -> Result<usize> {
        if !may_write {
            return Err(EACCES);
        }
        check_write_len(len).map_err(errno_to_error)?;
        let mut hdr = [0u8; CMD_HDR_SIZE];
        reader.read_slice(&mut hdr)?;
        let req = Request::parse(len, CmdHeader::from_bytes(hdr)).map_err(errno_to_error)?;
        self.execute(req, reader)?;
        Ok(len)
    }

    /// Runs a framed command. Not yet implemented: every command is `ENOSYS`.
    fn execute(&self, _req: Request, _payload: UserSliceReader) -> Result {
        Err(ENOSYS)
    }

    /// `poll()`: readable when an event is queued. Never writable, as in C.
    pub(crate) fn poll(&self, file: &File, table: PollTable<'_>) -> u32 {
        table.register_wait(file, &self.poll_wait);
        0
    }
}
