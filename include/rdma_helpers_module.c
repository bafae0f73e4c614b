// SPDX-License-Identifier: GPL-2.0
/*
 * The rdma_cm abstraction's helpers (rdma_helpers.c, in a kernel tree
 * rust/helpers/rdma.c), compiled into the out-of-tree module as plain
 * functions.
 */
#define __rust_helper
#include "rdma_helpers.c"
