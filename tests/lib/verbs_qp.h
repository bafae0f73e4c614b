/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libibverbs helpers for the VM-tier tests that connect with real QPs
 * (ucma_races class23, ucma_peer, ucma_fuzz): a device by name, RC QPs.
 */
#ifndef UCMA_VERBS_QP_H
#define UCMA_VERBS_QP_H

#include <string.h>

#include <infiniband/verbs.h>

/* A verbs context of the device called @name, or NULL. */
static inline struct ibv_context *open_verbs(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *c = NULL;
	int i;

	for (i = 0; list && list[i] && !c; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			c = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return c;
}

/*
 * A new RC QP (RESET), as a librdmacm user makes one before CONNECT/ACCEPT.
 * iWARP needs one: iw_cm_connect() and iw_cm_accept() look the QP number up
 * on the device (iw_get_qp()) and fail with EINVAL when there is none; siw
 * takes a new QP as it is. RoCE's CM only carries the number.
 */
static inline struct ibv_qp *rc_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return pd ? ibv_create_qp(pd, &a) : NULL;
}

/*
 * A device's PD, CQ and a few QPs, for connects that need real QP numbers
 * (an iWARP QP serves one connection: give each connecting case its own).
 */
#define VERBS_QPS 6

struct verbs_qps {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[VERBS_QPS];
};

static inline int verbs_qps_open(struct verbs_qps *v, const char *dev)
{
	int i;

	memset(v, 0, sizeof(*v));
	v->ctx = open_verbs(dev);
	v->pd = v->ctx ? ibv_alloc_pd(v->ctx) : NULL;
	v->cq = v->pd ? ibv_create_cq(v->ctx, 16, NULL, NULL, 0) : NULL;
	for (i = 0; i < VERBS_QPS && v->cq; i++)
		v->qp[i] = rc_qp(v->pd, v->cq);
	return v->cq && v->qp[VERBS_QPS - 1] ? 0 : -1;
}

static inline void verbs_qps_close(struct verbs_qps *v)
{
	int i;

	for (i = 0; i < VERBS_QPS; i++)
		if (v->qp[i])
			ibv_destroy_qp(v->qp[i]);
	if (v->cq)
		ibv_destroy_cq(v->cq);
	if (v->pd)
		ibv_dealloc_pd(v->pd);
	if (v->ctx)
		ibv_close_device(v->ctx);
	memset(v, 0, sizeof(*v));
}

#endif
