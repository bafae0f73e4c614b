/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Input of the out-of-tree module's bindgen step for the rdma_cm
 * abstraction (see Kbuild): the rdma_cm API and the abstraction's helpers.
 * In a kernel tree, rust/bindings/bindings_helper.h and
 * rust/helpers/rdma.c take its place.
 */
#include <rdma/ib.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_marshall.h>
#include <rdma/ib_sa.h>
#include <rdma/rdma_cm.h>
#include <rdma/rdma_cm_ib.h>
#include <rdma/rdma_user_cm.h>

/* bindgen ignores inline functions: the helpers are plain ones here. */
#define __rust_helper
#include "rdma_helpers.c"
