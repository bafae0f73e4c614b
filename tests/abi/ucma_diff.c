// SPDX-License-Identifier: GPL-2.0
/*
 * The success paths of the uCMA commands, for the differential run
 * (tests/vm/differential.sh): scenarios that drive every command to
 * success over rxe and log every reply and event image (UCMA_OBSERVE, see
 * ktap.h), so that the two modules' images are compared byte by byte.
 *
 *   connected pair: BIND (fixed ports), LISTEN, RESOLVE_ADDR/ROUTE,
 *     QUERY_ROUTE with a path, QUERY (addr, path, gid), CONNECT and ACCEPT
 *     with private data, CONNECT_REQUEST, CONNECT_RESPONSE and ESTABLISHED
 *     (from the RTU), INIT_QP_ATTR in INIT, RTR and RTS on both sides,
 *     DISCONNECT from both ends and the DISCONNECTED events;
 *   notify: a second pair whose ESTABLISHED comes from NOTIFY (COMM_EST);
 *   reject: a third request, REJECT with private data, the REJECTED event;
 *   ud join/leave: a UDP id, JOIN_IP_MCAST and JOIN_MCAST, the
 *     MULTICAST_JOIN images, INIT_QP_ATTR of the UD id, both LEAVEs.
 *
 * No QP is created: CONNECT and ACCEPT carry made-up QP numbers, which
 * ib_cm sends as they are (nothing checks them on rxe), so every image is
 * the same in both runs of a boot. What is truly random is masked: the
 * PSNs (rdma_cm's seq_num) in INIT_QP_ATTR; ids are normalised; ports are
 * bound fixed. Needs RXE_IP. On the kernel's kselftest_harness.h
 * (tests/lib/harness.h): the two groups, connections and ud_join_leave,
 * each in a process of its own. Prints KTAP.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <rdma/rdma_user_cm.h>

#include "harness.h"
#include "ucma_cmd.h"

#define EV_DISCONNECTED 10
#define IB_EVENT_COMM_EST 4
#define IB_QPS_INIT 1
#define IB_QPS_RTR 2
#define IB_QPS_RTS 3
#define LISTEN_PORT 7481
#define MC_JOIN_FULLMEMBER 0

static struct sockaddr_in rxe_addr;

/* The file of each group: the connections' listener, the UD id's. */
FIXTURE(diff)
{
	int fd;
};

FIXTURE_SETUP(diff)
{
	self->fd = ucma_dev_open();
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", UCMA_DEV, strerror(errno));
}

FIXTURE_TEARDOWN(diff)
{
	close(self->fd);
	ktap_group_end(_metadata);
}

/* Multicast ids come from their own table: normalised apart from context ids. */
static uint32_t norm_mc_id(uint32_t id)
{
	static uint32_t seen[16];
	static unsigned int nseen;
	unsigned int i;

	for (i = 0; i < nseen; i++)
		if (seen[i] == id)
			return 0x100 + i + 1;
	if (nseen < ARRAY_SIZE(seen))
		seen[nseen++] = id;
	return 0x100 + nseen;
}

/* A command that must succeed: its rc is logged, and it is one case. */
static int expect_ok(const char *name, long ret)
{
	int e = ret ? errno : 0;

	ktap_observe_rc(name, ret, e);
	ktap_result(ret == 0, name, "errno %d (%s)", e, strerror(e));
	return ret == 0 ? 0 : -1;
}

/*
 * Waits for the next event on @fd; it must be @type. The image is logged
 * with its id normalised (@mc: a multicast id). One case.
 */
static int expect_event(const char *name, int fd, uint32_t type, int mc,
			struct rdma_ucm_event_resp *out)
{
	struct rdma_ucm_event_resp ev;
	long ret;

	memset(&ev, 0xa5, sizeof(ev));
	ret = next_event(fd, &ev, 10000);
	ktap_result(ret == 0 && ev.event == type, name, "ret %ld errno %d: event %u status %d, want %u",
		    ret, ret ? errno : 0, ret ? ~0u : ev.event, ret ? 0 : ev.status, type);
	if (out)
		*out = ev;
	if (ret)
		return -1;
	ev.id = mc ? norm_mc_id(ev.id) : ktap_norm_id(ev.id);
	ktap_observe_reply(name, &ev, sizeof(ev));
	return ev.event == type ? 0 : -1;
}

static struct sockaddr_in rxe_port(uint16_t port)
{
	struct sockaddr_in a = rxe_addr;

	a.sin_port = htons(port);
	return a;
}

static long query(int fd, uint32_t id, uint32_t option, void *resp, uint16_t out)
{
	struct rdma_ucm_query q = { .id = id, .option = option, .response = (uintptr_t)resp };

	memset(resp, 0xa5, out);
	return CMD(fd, RDMA_USER_CM_CMD_QUERY, q, out);
}

/* QUERY_ROUTE and QUERY ADDR/PATH/GID of @id: four cases, replies logged. */
static void query_all(const char *side, int fd, uint32_t id, uint32_t paths)
{
	struct rdma_ucm_query q = { .id = id };
	struct rdma_ucm_query_route_resp qr;
	struct {
		struct rdma_ucm_query_path_resp h;
		struct ib_path_rec_data rec[2];
	} qp;
	struct rdma_ucm_query_addr_resp qa;
	char name[64];
	long rc;

	snprintf(name, sizeof(name), "diff_%s_query_route", side);
	memset(&qr, 0xa5, sizeof(qr));
	q.response = (uintptr_t)&qr;
	rc = CMD(fd, RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof(qr));
	ktap_result(rc == 0 && qr.num_paths == paths && qr.port_num == 1, name,
		    "rc %ld errno %d paths %u port %u", rc, rc ? errno : 0, qr.num_paths, qr.port_num);
	ktap_observe_reply(name, &qr, sizeof(qr));

	snprintf(name, sizeof(name), "diff_%s_query_addr", side);
	rc = query(fd, id, RDMA_USER_CM_QUERY_ADDR, &qa, sizeof(qa));
	ktap_result(rc == 0 && qa.src_size == 16 && qa.dst_size == 16, name,
		    "rc %ld errno %d src_size %u dst_size %u", rc, rc ? errno : 0, qa.src_size,
		    qa.dst_size);
	ktap_observe_reply(name, &qa, sizeof(qa));

	snprintf(name, sizeof(name), "diff_%s_query_path", side);
	rc = query(fd, id, RDMA_USER_CM_QUERY_PATH, &qp, sizeof(qp));
	ktap_result(rc == 0 && qp.h.num_paths == paths, name, "rc %ld errno %d paths %u", rc,
		    rc ? errno : 0, qp.h.num_paths);
	ktap_observe_reply(name, &qp, sizeof(qp));

	snprintf(name, sizeof(name), "diff_%s_query_gid", side);
	rc = query(fd, id, RDMA_USER_CM_QUERY_GID, &qa, sizeof(qa));
	ktap_result(rc == 0 && qa.src_size == 48 && qa.dst_size == 48, name,
		    "rc %ld errno %d src_size %u dst_size %u", rc, rc ? errno : 0, qa.src_size,
		    qa.dst_size);
	ktap_observe_reply(name, &qa, sizeof(qa));
}

/*
 * INIT_QP_ATTR of @id for @state; the reply is logged with the PSN that
 * state carries masked (rq_psn in RTR, sq_psn in RTS: rdma_cm's random
 * seq_num of one side or the other). One case.
 */
static void init_qp_attr(const char *name, int fd, uint32_t id, uint32_t state)
{
	struct rdma_ucm_init_qp_attr ia = { .id = id, .qp_state = state };
	struct ib_uverbs_qp_attr attr;
	long rc;

	memset(&attr, 0xa5, sizeof(attr));
	ia.response = (uintptr_t)&attr;
	rc = CMD(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, ia, sizeof(attr));
	ktap_result(rc == 0 && attr.qp_state == state && attr.qp_attr_mask != 0, name,
		    "rc %ld errno %d state %u mask %#x", rc, rc ? errno : 0, attr.qp_state,
		    attr.qp_attr_mask);
	if (state == IB_QPS_RTR)
		attr.rq_psn = 0xeeeeeeee;
	if (state == IB_QPS_RTS)
		attr.sq_psn = 0xeeeeeeee;
	ktap_observe_reply(name, &attr, sizeof(attr));
}

static long accept_pd(int fd, uint32_t id, uint32_t qpn, const char *pd)
{
	struct rdma_ucm_accept a = { .id = id, .uid = 0xacc };

	a.conn_param.valid = 1;
	a.conn_param.qp_num = qpn;
	a.conn_param.responder_resources = 1;
	a.conn_param.initiator_depth = 1;
	a.conn_param.rnr_retry_count = 6;
	a.conn_param.private_data_len = strlen(pd);
	memcpy(a.conn_param.private_data, pd, strlen(pd));
	return CMD(fd, RDMA_USER_CM_CMD_ACCEPT, a, 0);
}

static long disconnect(int fd, uint32_t id)
{
	struct rdma_ucm_disconnect d = { .id = id };

	return CMD(fd, RDMA_USER_CM_CMD_DISCONNECT, d, 0);
}

static long notify(int fd, uint32_t id, uint32_t event)
{
	struct rdma_ucm_notify n = { .id = id, .event = event };

	return CMD(fd, RDMA_USER_CM_CMD_NOTIFY, n, 0);
}

/*
 * DESTROY_ID of @id, whose reply (the events reported) is logged. One case.
 * A CONNECT_REQUEST counts for the listener, not for the new id.
 */
static void expect_destroy(const char *name, int fd, uint32_t id, uint32_t events)
{
	uint32_t rep = ~0u;
	long rc = destroy_id(fd, id, &rep);

	ktap_result(rc == 0 && rep == events, name, "rc %ld errno %d reported %u, want %u", rc,
		    rc ? errno : 0, rep, events);
	ktap_observe_reply(name, &rep, sizeof(rep));
}

/*
 * A client on @fc bound to rxe:@port, its address and route resolved to the
 * listener: BIND, RESOLVE_IP, ADDR_RESOLVED, RESOLVE_ROUTE, ROUTE_RESOLVED
 * (five cases named @pfx_...). Returns 0 or -1.
 */
static int client_to_listener(const char *pfx, int fc, uint64_t uid, uint16_t port, uint32_t *c)
{
	struct sockaddr_in src = rxe_port(port), dst = rxe_port(LISTEN_PORT);
	char name[64];

	if (create_id(fc, uid, RDMA_PS_TCP, c))
		return -1;
	snprintf(name, sizeof(name), "%s_bind", pfx);
	if (expect_ok(name, bind_ip(fc, *c, &src)))
		return -1;
	snprintf(name, sizeof(name), "%s_resolve_addr", pfx);
	if (expect_ok(name, resolve_ip(fc, *c, &dst)))
		return -1;
	snprintf(name, sizeof(name), "%s_addr_resolved_event", pfx);
	if (expect_event(name, fc, EV_ADDR_RESOLVED, 0, NULL))
		return -1;
	snprintf(name, sizeof(name), "%s_resolve_route", pfx);
	if (expect_ok(name, resolve_route(fc, *c)))
		return -1;
	snprintf(name, sizeof(name), "%s_route_resolved_event", pfx);
	return expect_event(name, fc, EV_ROUTE_RESOLVED, 0, NULL);
}

/*
 * listen -> connect -> accept -> ESTABLISHED -> disconnect, with private
 * data both ways; the listener, its child and the client on their own files.
 */
static void test_connected_pair(int fl)
{
	struct rdma_ucm_event_resp ev;
	int fc = ucma_dev_open();
	uint32_t c = ~0u, child;

	if (client_to_listener("diff_pair", fc, 0xc1, 7482, &c)) {
		ktap_result(0, "diff_pair_setup", "client could not reach the listener");
		goto out;
	}
	query_all("pair_client", fc, c, 1);
	init_qp_attr("diff_pair_client_init_qp_attr_init", fc, c, IB_QPS_INIT);
	if (expect_ok("diff_pair_connect", connect_pd(fc, c, 0x1a1, "ucma-rs connect, pair")))
		goto out;
	if (expect_event("diff_pair_connect_request_event", fl, EV_CONNECT_REQUEST, 0, &ev))
		goto out;
	child = ev.id;
	query_all("pair_child", fl, child, 1);
	init_qp_attr("diff_pair_child_init_qp_attr_init", fl, child, IB_QPS_INIT);
	init_qp_attr("diff_pair_child_init_qp_attr_rtr", fl, child, IB_QPS_RTR);
	if (expect_ok("diff_pair_accept", accept_pd(fl, child, 0x2b2, "ucma-rs accept, pair")))
		goto out;
	init_qp_attr("diff_pair_child_init_qp_attr_rts", fl, child, IB_QPS_RTS);
	if (expect_event("diff_pair_connect_response_event", fc, EV_CONNECT_RESPONSE, 0, NULL))
		goto out;
	init_qp_attr("diff_pair_client_init_qp_attr_rtr", fc, c, IB_QPS_RTR);
	init_qp_attr("diff_pair_client_init_qp_attr_rts", fc, c, IB_QPS_RTS);
	/* The active side's ACCEPT without conn_param: the RTU. */
	if (expect_ok("diff_pair_accept_rtu", accept_id(fc, c, 0, 0)))
		goto out;
	if (expect_event("diff_pair_established_event", fl, EV_ESTABLISHED, 0, NULL))
		goto out;
	/* Already established: NOTIFY(COMM_EST) is EISCONN in ib_cm. */
	EXPECT_ERRNO("diff_pair_notify_established_eisconn", notify(fl, child, IB_EVENT_COMM_EST),
		     EISCONN);
	if (expect_ok("diff_pair_disconnect_client", disconnect(fc, c)))
		goto out;
	if (expect_event("diff_pair_child_disconnected_event", fl, EV_DISCONNECTED, 0, NULL))
		goto out;
	if (expect_ok("diff_pair_disconnect_child", disconnect(fl, child)))
		goto out;
	if (expect_event("diff_pair_client_disconnected_event", fc, EV_DISCONNECTED, 0, NULL))
		goto out;
	expect_destroy("diff_pair_destroy_child", fl, child, 2);
	expect_destroy("diff_pair_destroy_client", fc, c, 4);
out:
	close(fc);
}

/* A second pair, ESTABLISHED by NOTIFY(COMM_EST) before the RTU comes. */
static void test_notify(int fl)
{
	struct rdma_ucm_event_resp ev;
	int fc = ucma_dev_open();
	uint32_t c = ~0u, child;

	if (client_to_listener("diff_notify", fc, 0xc2, 7483, &c) ||
	    connect_pd(fc, c, 0x1a3, "ucma-rs connect, notify")) {
		ktap_result(0, "diff_notify_setup", "errno %d", errno);
		goto out;
	}
	if (expect_event("diff_notify_connect_request_event", fl, EV_CONNECT_REQUEST, 0, &ev))
		goto out;
	child = ev.id;
	if (expect_ok("diff_notify_accept", accept_pd(fl, child, 0x2b4, "ucma-rs accept, notify")))
		goto out;
	if (expect_ok("diff_notify_comm_est", notify(fl, child, IB_EVENT_COMM_EST)))
		goto out;
	if (expect_event("diff_notify_established_event", fl, EV_ESTABLISHED, 0, NULL))
		goto out;
	if (expect_event("diff_notify_connect_response_event", fc, EV_CONNECT_RESPONSE, 0, NULL))
		goto out;
	expect_ok("diff_notify_accept_rtu", accept_id(fc, c, 0, 0));
	if (expect_ok("diff_notify_disconnect_child", disconnect(fl, child)))
		goto out;
	if (expect_event("diff_notify_client_disconnected_event", fc, EV_DISCONNECTED, 0, NULL))
		goto out;
	expect_destroy("diff_notify_destroy_child", fl, child, 1);
	expect_destroy("diff_notify_destroy_client", fc, c, 4);
out:
	close(fc);
}

/* A third request, refused: REJECT with private data, the REJECTED image. */
static void test_reject(int fl)
{
	static const char pd[] = "ucma-rs reject";
	struct rdma_ucm_reject r = { .reason = 0, .private_data_len = sizeof(pd) - 1 };
	struct rdma_ucm_event_resp ev;
	int fc = ucma_dev_open();
	uint32_t c = ~0u;

	if (client_to_listener("diff_reject", fc, 0xc3, 7484, &c) ||
	    connect_pd(fc, c, 0x1a5, "ucma-rs connect, reject")) {
		ktap_result(0, "diff_reject_setup", "errno %d", errno);
		goto out;
	}
	if (expect_event("diff_reject_connect_request_event", fl, EV_CONNECT_REQUEST, 0, &ev))
		goto out;
	r.id = ev.id;
	memcpy(r.private_data, pd, sizeof(pd) - 1);
	if (expect_ok("diff_reject", CMD(fl, RDMA_USER_CM_CMD_REJECT, r, 0)))
		goto out;
	if (expect_event("diff_reject_rejected_event", fc, EV_REJECTED, 0, NULL))
		goto out;
	expect_destroy("diff_reject_destroy_child", fl, r.id, 0);
	expect_destroy("diff_reject_destroy_client", fc, c, 3);
out:
	close(fc);
}

/* The connection scenarios share one listener on rxe:LISTEN_PORT. */
static void test_connections(int fl)
{
	struct sockaddr_in a = rxe_port(LISTEN_PORT);
	uint32_t l = ~0u;

	if (create_id(fl, 0x1f, RDMA_PS_TCP, &l) || expect_ok("diff_listener_bind", bind_ip(fl, l, &a)) ||
	    expect_ok("diff_listen", listen_id(fl, l, 8)))
		return;
	query_all("listener", fl, l, 0);
	test_connected_pair(fl);
	test_notify(fl);
	test_reject(fl);
	expect_destroy("diff_listener_destroy", fl, l, 3);
}

/* JOIN_MCAST of @group with @flags on @id. */
static long join_mcast(int fd, uint32_t id, const char *group, uint16_t flags, uint32_t *mc)
{
	struct sockaddr_in g = ipv4(group, 0);
	struct rdma_ucm_create_id_resp r = { .id = ~0u };
	struct rdma_ucm_join_mcast j = { .id = id, .uid = 0x3d, .addr_size = sizeof(g),
					 .join_flags = flags, .response = (uintptr_t)&r };
	long ret;

	memcpy(&j.addr, &g, sizeof(g));
	ret = CMD(fd, RDMA_USER_CM_CMD_JOIN_MCAST, j, sizeof(r));
	*mc = r.id;
	return ret;
}

/* LEAVE_MCAST of @mc: its reply (the join's events reported) is logged. */
static void expect_leave(const char *name, int fd, uint32_t mc)
{
	struct rdma_ucm_destroy_id l = { .id = mc };
	struct rdma_ucm_destroy_id_resp r = { .events_reported = ~0u };
	long rc;

	l.response = (uintptr_t)&r;
	rc = CMD(fd, RDMA_USER_CM_CMD_LEAVE_MCAST, l, sizeof(r));
	ktap_observe_rc(name, rc, rc ? errno : 0);
	ktap_result(rc == 0 && r.events_reported == 1, name, "rc %ld errno %d reported %u", rc,
		    rc ? errno : 0, r.events_reported);
	ktap_observe_reply(name, &r, sizeof(r));
}

/* A UDP id on rxe:7485: both JOINs, their MULTICAST_JOIN images, both LEAVEs. */
static void test_ud_join_leave(int fd)
{
	struct sockaddr_in a = rxe_port(7485), g = ipv4("239.1.7.1", 0);
	uint32_t id = ~0u, m1 = ~0u, m2 = ~0u;

	if (create_id(fd, 0xd1, RDMA_PS_UDP, &id) || expect_ok("diff_ud_bind", bind_ip(fd, id, &a)))
		return;
	query_all("ud", fd, id, 0);
	init_qp_attr("diff_ud_init_qp_attr_init", fd, id, IB_QPS_INIT);
	init_qp_attr("diff_ud_init_qp_attr_rtr", fd, id, IB_QPS_RTR);
	init_qp_attr("diff_ud_init_qp_attr_rts", fd, id, IB_QPS_RTS);
	if (expect_ok("diff_ud_join_ip_mcast", join_ip(fd, id, &g, &m1)) ||
	    expect_event("diff_ud_join_ip_mcast_event", fd, EV_MULTICAST_JOIN, 1, NULL) ||
	    expect_ok("diff_ud_join_mcast", join_mcast(fd, id, "239.1.7.2", MC_JOIN_FULLMEMBER, &m2)) ||
	    expect_event("diff_ud_join_mcast_event", fd, EV_MULTICAST_JOIN, 1, NULL))
		return;
	m1 = norm_mc_id(m1) == 0x101 ? m1 : ~0u;
	m2 = norm_mc_id(m2) == 0x102 ? m2 : ~0u;
	expect_leave("diff_ud_leave_ip_mcast", fd, m1);
	expect_leave("diff_ud_leave_mcast", fd, m2);
	expect_destroy("diff_ud_destroy", fd, id, 2);
}

/*
 * Every scenario runs to its end when all is well: a step that fails stops
 * its scenario, and the count no longer matches the group's plan.
 */
TEST_F_TIMEOUT(diff, connections, 60)
{
	ktap_header(64);
	test_connections(self->fd);
}

TEST_F_TIMEOUT(diff, ud_join_leave, 30)
{
	ktap_header(15);
	test_ud_join_leave(self->fd);
}

static void diff_init(void)
{
	rxe_addr = ucma_env.rxe;
}

int main(int argc, char **argv)
{
	return harness_main(argc, argv, UCMA_NEED_RXE, diff_init);
}
