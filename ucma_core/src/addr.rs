// SPDX-License-Identifier: GPL-2.0

//! Socket-address sizing rules of the uCMA ABI (`rdma_addr_size*()` in
//! `drivers/infiniband/core/addr.c`).

/// `AF_INET`.
pub const AF_INET: u16 = 2;
/// `AF_INET6`.
pub const AF_INET6: u16 = 10;
/// `AF_IB`.
pub const AF_IB: u16 = 27;

/// The address family of a socket address given as bytes (0 if too short).
pub fn family(addr: &[u8]) -> u16 {
    match addr {
        [a, b, ..] => u16::from_ne_bytes([*a, *b]),
        _ => 0,
    }
}

/// `rdma_addr_size()`: the size of an address of the family in `addr`, 0 for
/// an unsupported family.
pub fn addr_size(addr: &[u8]) -> usize {
    match family(addr) {
        AF_INET => 16,
        AF_INET6 => 28,
        AF_IB => 48,
        _ => 0,
    }
}

/// `rdma_addr_size_in6()`: as [`addr_size`], but 0 for anything that does not
/// fit a `struct sockaddr_in6` (so AF_IB is refused).
pub fn addr_size_in6(addr: &[u8]) -> usize {
    match addr_size(addr) {
        n if n <= 28 => n,
        _ => 0,
    }
}

/// `rdma_addr_size_kss()`: as [`addr_size`], limited to a
/// `struct __kernel_sockaddr_storage`.
pub fn addr_size_kss(addr: &[u8]) -> usize {
    match addr_size(addr) {
        n if n <= 128 => n,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(family: u16) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[..2].copy_from_slice(&family.to_ne_bytes());
        b
    }

    #[test]
    fn sizes() {
        assert_eq!(addr_size(&sa(AF_INET)), 16);
        assert_eq!(addr_size(&sa(AF_INET6)), 28);
        assert_eq!(addr_size(&sa(AF_IB)), 48);
        assert_eq!(addr_size(&sa(0)), 0);
        assert_eq!(addr_size(&sa(1)), 0);
        assert_eq!(addr_size_in6(&sa(AF_IB)), 0);
        assert_eq!(addr_size_in6(&sa(AF_INET6)), 28);
        assert_eq!(addr_size_kss(&sa(AF_IB)), 48);
        assert_eq!(addr_size(&[]), 0);
    }
}
