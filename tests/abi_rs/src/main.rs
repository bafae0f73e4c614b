// SPDX-License-Identifier: GPL-2.0

//! Raw-ABI selftest of `/dev/infiniband/rdma_cm`, the Rust half of the
//! harness (the C half is `tests/abi/`). It speaks the write() ABI through
//! `ucma_core`'s ABI structs, so it also checks that those structs are what
//! both modules expect, and sweeps every command number through the same
//! probes, each where it applies (see `plan()`):
//!
//! - `unknown`: an id no file owns, other fields zero: the errno of the first
//!   check that fails, in the C module's order;
//! - `oversized_in`: the same with 64 extra bytes of `in`: extra input is
//!   ignored, so the same errno;
//! - `in_beyond_write`: `in` longer than the write: EINVAL;
//! - `payload_fault`: the payload runs into an unmapped page: EFAULT;
//! - `foreign`: a valid id of another file: EINVAL;
//! - `stale`: a destroyed id: ENOENT;
//! - `short_out`: a reply buffer one byte short: ENOSPC;
//! - `zombie`: an id whose device (rxez, added and deleted here) is gone:
//!   ENXIO.
//!
//! Needs `RXE_IP` (set by scripts/vm-run). Prints KTAP; with `UCMA_OBSERVE`
//! set, also logs every case for tests/vm/differential.sh.

mod device;
mod report;

use device::{Device, Pages};
use report::Report;
use ucma_core::abi::Command;
use ucma_core::uapi::*;
use zerocopy::{FromZeros, IntoBytes};

const EINVAL: i32 = libc::EINVAL;
const ENOENT: i32 = libc::ENOENT;
const ENOSPC: i32 = libc::ENOSPC;
const EFAULT: i32 = libc::EFAULT;
const ENOSYS: i32 = libc::ENOSYS;
const EAGAIN: i32 = libc::EAGAIN;
const ENXIO: i32 = libc::ENXIO;

/// `enum rdma_cm_event_type`: the events the zombie case waits for.
const EV_ADDR_RESOLVED: u32 = 0;
const EV_DEVICE_REMOVAL: u32 = 11;
/// The zombie case's own device: rxez on vethz0 (as in tests/abi/ucma_cmds.c).
const ZOMBIE_ADDR: [u8; 4] = [203, 0, 113, 1];
const ZOMBIE_UP: &str = "ip link add vethz0 type veth peer name vethz1 && \
    ip addr add 203.0.113.1/24 dev vethz0 && ip link set vethz0 up && ip link set vethz1 up && \
    rdma link add rxez type rxe netdev vethz0 && \
    for i in $(seq 50); do rdma link show rxez/1 | grep -q ACTIVE && exit 0; sleep 0.1; done; exit 1";

/// Runs a shell command; whether it succeeded.
fn sh(cmd: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", cmd])
        .status()
        .is_ok_and(|s| s.success())
}

/// Commands probed on a zombie: those that take a context id, but DESTROY_ID.
fn zombie_probed(c: Command) -> bool {
    takes_id(c) && c != Command::DestroyId
}

/// An id no file owns (the table allocates from 0 upwards).
const UNKNOWN_ID: u32 = 0x7fff_fff0;
const RDMA_PS_TCP: u16 = 0x106;
const RDMA_PS_UDP: u16 = 0x111;

/// `struct sockaddr_in` in an in6-sized buffer.
fn sockaddr_in(ip: [u8; 4]) -> [u8; SOCKADDR_IN6_SIZE] {
    let mut a = [0u8; SOCKADDR_IN6_SIZE];
    a[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
    a[4..8].copy_from_slice(&ip);
    a
}

fn storage(sa: [u8; SOCKADDR_IN6_SIZE]) -> [u8; SOCKADDR_STORAGE_SIZE] {
    let mut s = [0u8; SOCKADDR_STORAGE_SIZE];
    s[..SOCKADDR_IN6_SIZE].copy_from_slice(&sa);
    s
}

/// What a probe fills in besides the id.
#[derive(Clone, Copy)]
struct Fill {
    /// Make the fields that are checked before the lookup valid.
    valid: bool,
    /// Where replies go.
    response: u64,
    /// The local address (rxe0's).
    addr: [u8; 4],
    /// For MIGRATE_ID: the fd the id is looked up on.
    fd: u32,
}

/// The payload of command `c` on `id`, built from ucma_core's struct.
fn payload(c: Command, id: u32, f: Fill) -> Vec<u8> {
    let sa = sockaddr_in(f.addr);
    let mcast = sockaddr_in([239, 1, 2, 3]);
    match c {
        Command::CreateId => {
            let mut s = CreateId::new_zeroed();
            s.response = f.response;
            if f.valid {
                s.ps = RDMA_PS_TCP;
            }
            s.as_bytes().to_vec()
        }
        Command::DestroyId | Command::LeaveMcast => {
            let mut s = DestroyId::new_zeroed();
            s.id = id;
            s.response = f.response;
            s.as_bytes().to_vec()
        }
        Command::BindIp => {
            let mut s = BindIp::new_zeroed();
            s.id = id;
            if f.valid {
                s.addr = sa;
            }
            s.as_bytes().to_vec()
        }
        Command::ResolveIp => {
            let mut s = ResolveIp::new_zeroed();
            s.id = id;
            s.timeout_ms = 1000;
            if f.valid {
                s.dst_addr = sa;
            }
            s.as_bytes().to_vec()
        }
        Command::ResolveRoute => {
            let mut s = ResolveRoute::new_zeroed();
            s.id = id;
            s.as_bytes().to_vec()
        }
        Command::QueryRoute | Command::Query => {
            let mut s = Query::new_zeroed();
            s.id = id;
            s.response = f.response;
            s.as_bytes().to_vec()
        }
        Command::Connect => {
            let mut s = Connect::new_zeroed();
            s.id = id;
            s.conn_param.valid = f.valid.into();
            s.as_bytes().to_vec()
        }
        Command::Listen => {
            let mut s = Listen::new_zeroed();
            s.id = id;
            s.as_bytes().to_vec()
        }
        Command::Accept => {
            let mut s = Accept::new_zeroed();
            s.id = id;
            s.conn_param.valid = f.valid.into();
            s.as_bytes().to_vec()
        }
        Command::Reject => {
            let mut s = Reject::new_zeroed();
            s.id = id;
            s.as_bytes().to_vec()
        }
        Command::Disconnect => {
            let mut s = Disconnect::new_zeroed();
            s.id = id;
            s.as_bytes().to_vec()
        }
        Command::InitQpAttr => {
            let mut s = InitQpAttr::new_zeroed();
            s.id = id;
            s.response = f.response;
            s.as_bytes().to_vec()
        }
        Command::GetEvent => {
            let mut s = GetEvent::new_zeroed();
            s.response = f.response;
            s.as_bytes().to_vec()
        }
        Command::GetOption => Vec::new(),
        Command::SetOption => {
            let mut s = SetOption::new_zeroed();
            s.id = id;
            s.as_bytes().to_vec()
        }
        Command::Notify => {
            let mut s = Notify::new_zeroed();
            s.id = id;
            s.as_bytes().to_vec()
        }
        Command::JoinIpMcast => {
            let mut s = JoinIpMcast::new_zeroed();
            s.id = id;
            s.response = f.response;
            if f.valid {
                s.addr = mcast;
            }
            s.as_bytes().to_vec()
        }
        Command::MigrateId => {
            let mut s = MigrateId::new_zeroed();
            s.id = id;
            s.fd = f.fd;
            s.response = f.response;
            s.as_bytes().to_vec()
        }
        Command::Bind => {
            let mut s = Bind::new_zeroed();
            s.id = id;
            if f.valid {
                s.addr_size = 16;
                s.addr = storage(sa);
            }
            s.as_bytes().to_vec()
        }
        Command::ResolveAddr => {
            let mut s = ResolveAddr::new_zeroed();
            s.id = id;
            s.timeout_ms = 1000;
            if f.valid {
                s.dst_size = 16;
                s.dst_addr = storage(sa);
            }
            s.as_bytes().to_vec()
        }
        Command::JoinMcast => {
            let mut s = JoinMcast::new_zeroed();
            s.id = id;
            s.response = f.response;
            if f.valid {
                s.addr_size = 16;
                s.addr = storage(mcast);
            }
            s.as_bytes().to_vec()
        }
        Command::ResolveIbService => {
            let mut s = ResolveIbService::new_zeroed();
            s.id = id;
            s.as_bytes().to_vec()
        }
        Command::WriteCmEvent => {
            let mut s = WriteCmEvent::new_zeroed();
            s.id = id;
            if f.valid {
                s.event = 18;
            }
            s.as_bytes().to_vec()
        }
    }
}

/// The reply size a command needs (`out`), 0 if it has none.
fn reply_size(c: Command) -> u16 {
    let n = match c {
        Command::CreateId | Command::JoinIpMcast | Command::JoinMcast => 4,
        Command::DestroyId | Command::LeaveMcast | Command::MigrateId => 4,
        Command::QueryRoute => QueryRouteResp::MIN_OUT,
        Command::InitQpAttr => QP_ATTR_SIZE,
        Command::GetEvent => EventResp::MIN_OUT,
        Command::Query => QueryAddrResp::MIN_OUT,
        _ => 0,
    };
    n as u16
}

/// The errno of `unknown` (zeroed fields, unknown id), from the C module's
/// order of checks (ucma-abi.md, section 2.3).
fn unknown_errno(c: Command) -> i32 {
    match c {
        // ps 0; family 0; conn_param.valid 0; addr_size 0; event 0.
        Command::CreateId
        | Command::BindIp
        | Command::ResolveIp
        | Command::Connect
        | Command::JoinIpMcast
        | Command::Bind
        | Command::ResolveAddr
        | Command::JoinMcast
        | Command::WriteCmEvent => EINVAL,
        Command::GetOption => ENOSYS,
        // Non-blocking fd, nothing queued.
        Command::GetEvent => EAGAIN,
        // MIGRATE_ID's probe names an fd that is not open: ENOENT too.
        _ => ENOENT,
    }
}

/// Commands that take a context id.
fn takes_id(c: Command) -> bool {
    !matches!(
        c,
        Command::CreateId | Command::GetEvent | Command::GetOption | Command::LeaveMcast
    )
}

/// Whether the command has a payload (which `payload_fault` makes fault).
fn has_payload(c: Command) -> bool {
    let f = Fill {
        valid: false,
        response: 0,
        addr: [0; 4],
        fd: u32::MAX,
    };
    !payload(c, UNKNOWN_ID, f).is_empty()
}

/// Whether `short_out` applies: a reply, and not MIGRATE_ID (which moves
/// the id before it writes its reply).
fn has_short_out(c: Command) -> bool {
    reply_size(c) != 0 && c != Command::MigrateId
}

/// The number of cases `Harness::run` reports: the plan, printed first.
fn plan() -> u32 {
    let mut n = 1 + 4; // rs_destroy_reports_zero; the four destroys at the end
    for c in Command::ALL {
        n += 3 + u32::from(has_payload(c)) + u32::from(has_short_out(c));
        n += 2 * u32::from(takes_id(c));
        n += u32::from(zombie_probed(c));
    }
    n + 2 // rs_zombie_device_removal, rs_zombie_destroy_counts_events
}

/// The command's name in snake case, for case names (`CreateId` -> `create_id`).
fn name(c: Command) -> String {
    let mut s = String::new();
    for ch in format!("{c:?}").chars() {
        if ch.is_ascii_uppercase() && !s.is_empty() {
            s.push('_');
        }
        s.push(ch.to_ascii_lowercase());
    }
    s
}

struct Harness {
    r: Report,
    dev: Device,
    other: Device,
    pages: Pages,
    addr: [u8; 4],
}

impl Harness {
    fn fill(&self, valid: bool) -> Fill {
        Fill {
            valid,
            response: self.pages.reply_ptr(),
            addr: self.addr,
            fd: u32::MAX,
        }
    }

    fn probe_unknown(&mut self, c: Command) {
        let p = payload(c, UNKNOWN_ID, self.fill(false));
        let out = reply_size(c);
        let want = unknown_errno(c);
        let n = name(c);
        let got = self.dev.cmd(c as u32, &p, out);
        self.r.errno(&format!("rs_{n}_unknown"), got, want);
        let mut big = p.clone();
        big.extend_from_slice(&[0u8; 64]);
        let got = self.dev.cmd(c as u32, &big, out);
        self.r.errno(&format!("rs_{n}_oversized_in"), got, want);
    }

    fn probe_framing(&mut self, c: Command) {
        let n = name(c);
        let p = payload(c, UNKNOWN_ID, self.fill(false));
        let got = self
            .dev
            .cmd_in_len(c as u32, &p, p.len() as u16 + 1, reply_size(c));
        // The length check comes before the command table (GET_OPTION too).
        self.r
            .errno(&format!("rs_{n}_in_beyond_write"), got, EINVAL);
        if !has_payload(c) {
            return;
        }
        let got = self
            .pages
            .faulting_write(&self.dev, c as u32, p.len(), reply_size(c));
        self.r.errno(&format!("rs_{n}_payload_fault"), got, EFAULT);
    }

    fn probe_foreign_and_stale(&mut self, c: Command, foreign: u32, stale: u32) {
        let n = name(c);
        let mut f = self.fill(true);
        if c == Command::MigrateId {
            // The id is looked up on the file of `fd`: `dev`, which does not own it.
            f.fd = self.dev.raw_fd() as u32;
        }
        let got = self
            .dev
            .cmd(c as u32, &payload(c, foreign, f), reply_size(c));
        self.r.errno(&format!("rs_{n}_foreign"), got, EINVAL);
        let got = self.dev.cmd(c as u32, &payload(c, stale, f), reply_size(c));
        self.r.errno(&format!("rs_{n}_stale"), got, ENOENT);
    }

    fn probe_short_out(&mut self, c: Command, id: u32) {
        let out = reply_size(c);
        if !has_short_out(c) {
            return;
        }
        let n = name(c);
        let mut f = self.fill(true);
        f.response = self.pages.reply_ptr();
        let got = self.dev.cmd(c as u32, &payload(c, id, f), out - 1);
        self.r.errno(&format!("rs_{n}_short_out"), got, ENOSPC);
    }

    fn create(&mut self, dev_other: bool, ps: u16) -> Option<u32> {
        let mut s = CreateId::new_zeroed();
        s.ps = ps;
        s.uid = 1;
        s.response = self.pages.reply_ptr();
        let d = if dev_other { &self.other } else { &self.dev };
        d.cmd(Command::CreateId as u32, s.as_bytes(), 4).ok()?;
        Some(self.pages.reply_u32())
    }

    fn destroy(&mut self, dev_other: bool, id: u32) -> Result<u32, i32> {
        let mut s = DestroyId::new_zeroed();
        s.id = id;
        s.response = self.pages.reply_ptr();
        let d = if dev_other { &self.other } else { &self.dev };
        d.cmd(Command::DestroyId as u32, s.as_bytes(), 4)?;
        Ok(self.pages.reply_u32())
    }

    /// The next event of `dev` (non-blocking), waiting up to 10 s:
    /// (id, event, status).
    fn wait_event(&mut self) -> Option<(u32, u32, u32)> {
        let p = payload(Command::GetEvent, 0, self.fill(true));
        for _ in 0..500 {
            match self
                .dev
                .cmd(Command::GetEvent as u32, &p, reply_size(Command::GetEvent))
            {
                Ok(()) => {
                    let b = self.pages.reply_bytes(20);
                    let word = |o: usize| u32::from_ne_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
                    return Some((word(8), word(12), word(16)));
                }
                Err(EAGAIN) => std::thread::sleep(std::time::Duration::from_millis(20)),
                Err(_) => return None,
            }
        }
        None
    }

    /// A zombie: an id resolved on its own rxe device, which is then
    /// deleted. Once DEVICE_REMOVAL has arrived, every command that takes a
    /// context id, its other fields valid (as for `foreign`), answers ENXIO;
    /// DESTROY_ID still works and counts the two delivered events.
    fn zombie(&mut self) {
        // Leftovers of a run killed by a timeout go first.
        sh("rdma link delete rxez 2>/dev/null; ip link delete vethz0 2>/dev/null; true");
        let id = if sh(ZOMBIE_UP) {
            self.create(false, RDMA_PS_UDP)
        } else {
            None
        };
        let mut f = self.fill(true);
        f.addr = ZOMBIE_ADDR;
        let resolved = id.is_some_and(|id| {
            let p = payload(Command::ResolveIp, id, f);
            self.dev.cmd(Command::ResolveIp as u32, &p, 0).is_ok()
                && self
                    .wait_event()
                    .is_some_and(|e| e.0 == id && e.1 == EV_ADDR_RESOLVED && e.2 == 0)
        });
        let removed = resolved
            && sh("rdma link delete rxez")
            && self
                .wait_event()
                .is_some_and(|e| Some(e.0) == id && e.1 == EV_DEVICE_REMOVAL);
        self.r.check(
            "rs_zombie_device_removal",
            removed,
            &format!(
                "id {id:?}, resolved {resolved}: no DEVICE_REMOVAL after rdma link delete rxez"
            ),
        );
        let zid = id.unwrap_or(UNKNOWN_ID);
        for c in Command::ALL.into_iter().filter(|c| zombie_probed(*c)) {
            let mut f = self.fill(true);
            if c == Command::MigrateId {
                f.fd = self.dev.raw_fd() as u32;
            }
            let got = self.dev.cmd(c as u32, &payload(c, zid, f), reply_size(c));
            self.r.errno(&format!("rs_{}_zombie", name(c)), got, ENXIO);
        }
        let d = self.destroy(false, zid);
        self.r.check(
            "rs_zombie_destroy_counts_events",
            d == Ok(2),
            &format!("{d:?}"),
        );
        sh("ip link delete vethz0 2>/dev/null");
    }

    fn run(&mut self) {
        for c in Command::ALL {
            self.probe_unknown(c);
            self.probe_framing(c);
        }
        let (Some(foreign), Some(stale), Some(own)) = (
            self.create(true, RDMA_PS_UDP),
            self.create(false, RDMA_PS_UDP),
            self.create(false, RDMA_PS_UDP),
        ) else {
            self.r.fail("rs_create_ids", "CREATE_ID failed");
            return;
        };
        let d = self.destroy(false, stale);
        self.r
            .check("rs_destroy_reports_zero", d == Ok(0), &format!("{d:?}"));
        for c in Command::ALL.into_iter().filter(|c| takes_id(*c)) {
            self.probe_foreign_and_stale(c, foreign, stale);
        }
        for c in Command::ALL {
            self.probe_short_out(c, own);
        }
        let d = self.destroy(false, foreign);
        self.r
            .errno("rs_destroy_other_files_id", d.map(|_| ()), EINVAL);
        let d = self.destroy(true, foreign);
        self.r
            .check("rs_destroy_foreign_on_owner", d == Ok(0), &format!("{d:?}"));
        let d = self.destroy(false, own);
        self.r
            .check("rs_destroy_own", d == Ok(0), &format!("{d:?}"));
        let d = self.destroy(false, own);
        self.r.errno("rs_destroy_twice", d.map(|_| ()), ENOENT);
    }
}

fn main() {
    let mut r = Report::new();
    let Some(addr) = std::env::var("RXE_IP")
        .ok()
        .and_then(|s| s.parse::<std::net::Ipv4Addr>().ok())
    else {
        println!("Bail out! RXE_IP not set (run through scripts/vm-run)");
        std::process::exit(1);
    };
    let (Ok(dev), Ok(other), Ok(pages)) = (Device::open(), Device::open(), Pages::new()) else {
        println!("Bail out! cannot open {} or map pages", device::PATH);
        std::process::exit(1);
    };
    dev.set_nonblocking();
    r.header(plan());
    let mut h = Harness {
        r,
        dev,
        other,
        pages,
        addr: addr.octets(),
    };
    h.run();
    h.zombie();
    std::process::exit(h.r.finish());
}
