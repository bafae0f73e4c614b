/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Input of the module's own bindgen step (see Kbuild): the rdma_cm API and
 * the C shim, generated against the exact kernel the module is built for.
 */
#include <rdma/ib.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_marshall.h>
#include <rdma/ib_sa.h>
#include <rdma/rdma_cm.h>
#include <rdma/rdma_cm_ib.h>
#include <rdma/rdma_user_cm.h>

#include "ucma_shim.h"

/*
 * The flags of an allocation made on a user's behalf (rust/memcg.rs): a
 * macro for C, a constant bindgen can emit. Never compiled as C.
 */
const gfp_t UCMA_GFP_ACCOUNTED = GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL;
