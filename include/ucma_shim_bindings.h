/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Input of the module's bindgen step for its C shim (see Kbuild), with the
 * uAPI structs (and struct sockaddr_ib) rust/abi_check.rs compares
 * ucma_core's with, as the kernel being built for declares them.
 */
#include <rdma/ib.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_cm.h>

#include "ucma_shim.h"

/*
 * The flags of an allocation made on a user's behalf (rust/memcg.rs), in
 * a command and in the event handler: macros for C, constants bindgen can
 * emit. Never compiled as C.
 */
const gfp_t UCMA_GFP_ACCOUNTED = GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL;
const gfp_t UCMA_GFP_ACCOUNTED_NORETRY = GFP_KERNEL_ACCOUNT | __GFP_NORETRY | __GFP_NOWARN;
