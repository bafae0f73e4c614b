// SPDX-License-Identifier: GPL-2.0

//! The device file and the memory the probes point the kernel at.

use std::fs::{File, OpenOptions};
use std::io::{Error, Write};
use std::os::fd::{AsRawFd, RawFd};
use ucma_core::abi::{CmdHeader, CMD_HDR_SIZE};

/// The uCMA device node.
pub const PATH: &str = "/dev/infiniband/rdma_cm";

/// One open file of the device.
pub struct Device(File);

impl Device {
    pub fn open() -> std::io::Result<Self> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(PATH)
            .map(Device)
    }

    pub fn raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    pub fn set_nonblocking(&self) {
        // SAFETY: fcntl on an fd this object owns; no memory is passed.
        unsafe {
            let fl = libc::fcntl(self.raw_fd(), libc::F_GETFL);
            libc::fcntl(self.raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
    }

    /// Writes command `cmd` with `payload` (its `in` is the payload's length).
    pub fn cmd(&self, cmd: u32, payload: &[u8], out: u16) -> Result<(), i32> {
        self.cmd_in_len(cmd, payload, payload.len() as u16, out)
    }

    /// Writes command `cmd` with `payload`, claiming `in_len` bytes of input.
    pub fn cmd_in_len(&self, cmd: u32, payload: &[u8], in_len: u16, out: u16) -> Result<(), i32> {
        let hdr = CmdHeader {
            cmd,
            in_len,
            out_len: out,
        };
        let mut buf = hdr.to_bytes().to_vec();
        buf.extend_from_slice(payload);
        write_once(&self.0, &buf)
    }
}

/// One write() of the whole buffer: the ABI is one command per write.
fn write_once(mut f: &File, buf: &[u8]) -> Result<(), i32> {
    match f.write(buf) {
        Ok(n) if n == buf.len() => Ok(()),
        Ok(n) => Err(-(n as i32) - 1000),
        Err(e) => Err(e.raw_os_error().unwrap_or(-1)),
    }
}

fn last_errno() -> i32 {
    Error::last_os_error().raw_os_error().unwrap_or(-1)
}

/// Two pages: a readable and writable one, then an inaccessible one.
///
/// # Invariants
///
/// `base` is the start of a private anonymous mapping of `2 * PAGE` bytes
/// owned by this object: the first page read-write, the second PROT_NONE.
pub struct Pages {
    base: *mut u8,
}

const PAGE: usize = 4096;

impl Pages {
    pub fn new() -> std::io::Result<Self> {
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(Error::last_os_error());
        }
        // SAFETY: the second page lies inside the mapping just made.
        if unsafe { libc::mprotect(base.cast::<u8>().add(PAGE).cast(), PAGE, libc::PROT_NONE) } != 0
        {
            return Err(Error::last_os_error());
        }
        Ok(Pages { base: base.cast() })
    }

    /// Where replies go: the start of the accessible page.
    pub fn reply_ptr(&self) -> u64 {
        self.base as u64
    }

    /// The first four bytes of the last reply.
    pub fn reply_u32(&self) -> u32 {
        let mut b = [0u8; 4];
        // SAFETY: by the type invariant the first page is mapped read-write;
        // the kernel wrote a reply there, and 4 bytes fit in it.
        unsafe { std::ptr::copy_nonoverlapping(self.base, b.as_mut_ptr(), 4) };
        u32::from_ne_bytes(b)
    }

    /// The first `n` (at most a page) bytes of the last reply.
    pub fn reply_bytes(&self, n: usize) -> Vec<u8> {
        let n = n.min(PAGE);
        let mut b = vec![0u8; n];
        // SAFETY: by the type invariant the first page is mapped read-write,
        // and n is at most its size.
        unsafe { std::ptr::copy_nonoverlapping(self.base, b.as_mut_ptr(), n) };
        b
    }

    /// Writes a command whose header ends the accessible page, so that its
    /// `payload_len` bytes of payload lie in the inaccessible one.
    pub fn faulting_write(
        &self,
        dev: &Device,
        cmd: u32,
        payload_len: usize,
        out: u16,
    ) -> Result<(), i32> {
        let hdr = CmdHeader {
            cmd,
            in_len: payload_len as u16,
            out_len: out,
        }
        .to_bytes();
        // SAFETY: by the type invariant the first page is writable and
        // CMD_HDR_SIZE bytes fit at its end.
        let start = unsafe {
            let start = self.base.add(PAGE - CMD_HDR_SIZE);
            std::ptr::copy_nonoverlapping(hdr.as_ptr(), start, CMD_HDR_SIZE);
            start
        };
        // SAFETY: write() only reads the buffer, and reports unreadable
        // parts as EFAULT rather than touching them in this process.
        let n = unsafe { libc::write(dev.raw_fd(), start.cast(), CMD_HDR_SIZE + payload_len) };
        if n < 0 {
            Err(last_errno())
        } else {
            Ok(())
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: by the type invariant this object owns the mapping.
        unsafe { libc::munmap(self.base.cast(), 2 * PAGE) };
    }
}
