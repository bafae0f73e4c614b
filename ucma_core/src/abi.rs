// SPDX-License-Identifier: GPL-2.0

//! The uCMA write() ABI, version 4 (`include/uapi/rdma/rdma_user_cm.h`).
//!
//! Userspace drives the device by writing a command: an 8-byte header
//! (`struct rdma_ucm_cmd_hdr`) followed by `in` bytes of payload. Replies are
//! never written back into the write buffer; each command that answers carries
//! a user pointer to its response buffer, `out` bytes long.

use super::errno::Errno;

/// `RDMA_USER_CM_ABI_VERSION`, shown in `/sys/class/misc/rdma_cm/abi_version`.
pub const ABI_VERSION: u32 = 4;

/// Size of `struct rdma_ucm_cmd_hdr`.
pub const CMD_HDR_SIZE: usize = 8;

/// The command slots of ABI version 4, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Command {
    /// `RDMA_USER_CM_CMD_CREATE_ID`
    CreateId = 0,
    /// `RDMA_USER_CM_CMD_DESTROY_ID`
    DestroyId = 1,
    /// `RDMA_USER_CM_CMD_BIND_IP`
    BindIp = 2,
    /// `RDMA_USER_CM_CMD_RESOLVE_IP`
    ResolveIp = 3,
    /// `RDMA_USER_CM_CMD_RESOLVE_ROUTE`
    ResolveRoute = 4,
    /// `RDMA_USER_CM_CMD_QUERY_ROUTE`
    QueryRoute = 5,
    /// `RDMA_USER_CM_CMD_CONNECT`
    Connect = 6,
    /// `RDMA_USER_CM_CMD_LISTEN`
    Listen = 7,
    /// `RDMA_USER_CM_CMD_ACCEPT`
    Accept = 8,
    /// `RDMA_USER_CM_CMD_REJECT`
    Reject = 9,
    /// `RDMA_USER_CM_CMD_DISCONNECT`
    Disconnect = 10,
    /// `RDMA_USER_CM_CMD_INIT_QP_ATTR`
    InitQpAttr = 11,
    /// `RDMA_USER_CM_CMD_GET_EVENT`
    GetEvent = 12,
    /// `RDMA_USER_CM_CMD_GET_OPTION` (never implemented: `ENOSYS`)
    GetOption = 13,
    /// `RDMA_USER_CM_CMD_SET_OPTION`
    SetOption = 14,
    /// `RDMA_USER_CM_CMD_NOTIFY`
    Notify = 15,
    /// `RDMA_USER_CM_CMD_JOIN_IP_MCAST`
    JoinIpMcast = 16,
    /// `RDMA_USER_CM_CMD_LEAVE_MCAST`
    LeaveMcast = 17,
    /// `RDMA_USER_CM_CMD_MIGRATE_ID`
    MigrateId = 18,
    /// `RDMA_USER_CM_CMD_QUERY`
    Query = 19,
    /// `RDMA_USER_CM_CMD_BIND`
    Bind = 20,
    /// `RDMA_USER_CM_CMD_RESOLVE_ADDR`
    ResolveAddr = 21,
    /// `RDMA_USER_CM_CMD_JOIN_MCAST`
    JoinMcast = 22,
    /// `RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE`
    ResolveIbService = 23,
    /// `RDMA_USER_CM_CMD_WRITE_CM_EVENT`
    WriteCmEvent = 24,
}

impl Command {
    /// Number of command slots; a header naming a slot at or above it is `EINVAL`.
    pub const COUNT: u32 = 25;

    /// All commands, indexed by their number.
    pub const ALL: [Command; Self::COUNT as usize] = [
        Command::CreateId,
        Command::DestroyId,
        Command::BindIp,
        Command::ResolveIp,
        Command::ResolveRoute,
        Command::QueryRoute,
        Command::Connect,
        Command::Listen,
        Command::Accept,
        Command::Reject,
        Command::Disconnect,
        Command::InitQpAttr,
        Command::GetEvent,
        Command::GetOption,
        Command::SetOption,
        Command::Notify,
        Command::JoinIpMcast,
        Command::LeaveMcast,
        Command::MigrateId,
        Command::Query,
        Command::Bind,
        Command::ResolveAddr,
        Command::JoinMcast,
        Command::ResolveIbService,
        Command::WriteCmEvent,
    ];

    /// The command with number `n`, if there is such a slot.
    pub fn from_u32(n: u32) -> Option<Self> {
        Self::ALL.get(usize::try_from(n).ok()?).copied()
    }

    /// Whether rdma_cm may report an event on the id after this command
    /// succeeds, one the user can make again after that event without
    /// fetching it (RESOLVE_ADDR after ADDR_ERROR, JOIN after LEAVE,
    /// ...). ucma_rs refuses these while the file's event queue is at its
    /// cap, which bounds the events rdma_cm reports by the ids.
    pub const fn reports_events(self) -> bool {
        matches!(
            self,
            Command::ResolveIp
                | Command::ResolveAddr
                | Command::ResolveRoute
                | Command::ResolveIbService
                | Command::Connect
                | Command::Accept
                | Command::JoinIpMcast
                | Command::JoinMcast
        )
    }
}

/// `struct rdma_ucm_cmd_hdr`, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmdHeader {
    /// Command number.
    pub cmd: u32,
    /// Payload bytes that follow the header.
    pub in_len: u16,
    /// Size of the caller's response buffer.
    pub out_len: u16,
}

impl CmdHeader {
    /// Decodes the header from its 8 bytes in native byte order.
    pub fn from_bytes(b: [u8; CMD_HDR_SIZE]) -> Self {
        let [c0, c1, c2, c3, i0, i1, o0, o1] = b;
        CmdHeader {
            cmd: u32::from_ne_bytes([c0, c1, c2, c3]),
            in_len: u16::from_ne_bytes([i0, i1]),
            out_len: u16::from_ne_bytes([o0, o1]),
        }
    }

    /// Encodes the header (for tests and userspace-side tools).
    // The module decodes only; the host tests and tests/abi_rs encode.
    #[allow(dead_code)]
    pub fn to_bytes(self) -> [u8; CMD_HDR_SIZE] {
        let c = self.cmd.to_ne_bytes();
        let i = self.in_len.to_ne_bytes();
        let o = self.out_len.to_ne_bytes();
        [c[0], c[1], c[2], c[3], i[0], i[1], o[0], o[1]]
    }
}

/// A command whose framing has been checked, ready for its handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Which command.
    pub command: Command,
    /// Declared payload length.
    pub in_len: u16,
    /// Declared response buffer length.
    pub out_len: u16,
}

/// First framing check of `write()`: a write shorter than the header is `EINVAL`.
///
/// Runs before the header is copied from userspace, after the credential check.
pub fn check_write_len(len: usize) -> Result<(), Errno> {
    if len < CMD_HDR_SIZE {
        return Err(Errno::Inval);
    }
    Ok(())
}

impl Request {
    /// Checks the header of a `len`-byte write, in the C module's order:
    /// unknown command (`EINVAL`), payload longer than the write (`EINVAL`),
    /// then the empty `GET_OPTION` slot (`ENOSYS`).
    pub fn parse(len: usize, hdr: CmdHeader) -> Result<Self, Errno> {
        let command = Command::from_u32(hdr.cmd).ok_or(Errno::Inval)?;
        let needed = usize::from(hdr.in_len)
            .checked_add(CMD_HDR_SIZE)
            .ok_or(Errno::Inval)?;
        if needed > len {
            return Err(Errno::Inval);
        }
        if command == Command::GetOption {
            return Err(Errno::NoSys);
        }
        Ok(Request {
            command,
            in_len: hdr.in_len,
            out_len: hdr.out_len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(cmd: u32, in_len: u16, out_len: u16) -> CmdHeader {
        CmdHeader {
            cmd,
            in_len,
            out_len,
        }
    }

    #[test]
    fn short_write_is_einval() {
        for len in 0..CMD_HDR_SIZE {
            assert_eq!(check_write_len(len), Err(Errno::Inval));
        }
        assert_eq!(check_write_len(CMD_HDR_SIZE), Ok(()));
    }

    #[test]
    fn header_round_trips() {
        let h = hdr(0x0102_0304, 0x0506, 0x0708);
        assert_eq!(CmdHeader::from_bytes(h.to_bytes()), h);
    }

    #[test]
    fn commands_that_report_events() {
        let n = Command::ALL.iter().filter(|c| c.reports_events()).count();
        assert_eq!(n, 8);
        // Neither the queue's reader nor the commands that only take ids
        // away may be refused at the event cap.
        for c in [
            Command::GetEvent,
            Command::DestroyId,
            Command::LeaveMcast,
            Command::MigrateId,
            Command::Disconnect,
            Command::Reject,
        ] {
            assert!(!c.reports_events(), "{c:?}");
        }
    }

    #[test]
    fn command_numbers_match_the_uapi() {
        for (n, c) in Command::ALL.iter().enumerate() {
            assert_eq!(*c as usize, n);
            assert_eq!(Command::from_u32(n as u32), Some(*c));
        }
        assert_eq!(Command::from_u32(25), None);
        assert_eq!(Command::from_u32(u32::MAX), None);
    }

    #[test]
    fn unknown_command_is_einval_before_length() {
        // cmd >= 25 wins over a payload longer than the write.
        assert_eq!(Request::parse(8, hdr(25, 100, 0)), Err(Errno::Inval));
        assert_eq!(Request::parse(8, hdr(u32::MAX, 0, 0)), Err(Errno::Inval));
    }

    #[test]
    fn payload_longer_than_write_is_einval() {
        assert_eq!(Request::parse(8 + 23, hdr(0, 24, 4)), Err(Errno::Inval));
        assert!(Request::parse(8 + 24, hdr(0, 24, 4)).is_ok());
        // Extra trailing bytes are accepted.
        assert!(Request::parse(1000, hdr(0, 24, 4)).is_ok());
        // in = 0xffff cannot overflow.
        assert_eq!(Request::parse(8, hdr(0, u16::MAX, 0)), Err(Errno::Inval));
    }

    #[test]
    fn get_option_is_enosys_after_length_check() {
        assert_eq!(Request::parse(8, hdr(13, 0, 0)), Err(Errno::NoSys));
        assert_eq!(Request::parse(8, hdr(13, 1, 0)), Err(Errno::Inval));
    }

    #[test]
    fn every_other_slot_is_dispatched() {
        for c in Command::ALL {
            if c != Command::GetOption {
                let r = Request::parse(8, hdr(c as u32, 0, 7));
                assert_eq!(
                    r,
                    Ok(Request {
                        command: c,
                        in_len: 0,
                        out_len: 7
                    })
                );
            }
        }
    }
}
