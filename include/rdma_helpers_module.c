// SPDX-License-Identifier: GPL-2.0
/*
 * The rdma_cm abstraction's helpers (rdma_helpers.c, in a kernel tree
 * rust/helpers/rdma.c), compiled into the out-of-tree module: as plain
 * functions, or, on a CONFIG_RUST_INLINE_HELPERS kernel, as bitcode
 * inlined into the Rust code (Kbuild).
 */
#ifdef UCMA_INLINE_INTO_RUST
/* Linked into the Rust code's bitcode (Kbuild): see ucma_shim.c. */
#define __rust_helper __always_inline
#else
#define __rust_helper
#endif
#include "rdma_helpers.c"
