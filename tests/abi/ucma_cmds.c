// SPDX-License-Identifier: GPL-2.0
/*
 * Raw-ABI selftest of the uCMA commands: errnos, replies and event
 * bookkeeping, written against what the C rdma_ucm does, so that it passes
 * unchanged with either module loaded. Covers the commands no stock tool
 * sends (BIND_IP, RESOLVE_IP, QUERY_ROUTE, JOIN_IP_MCAST, NOTIFY,
 * GET_OPTION, RESOLVE_IB_SERVICE, WRITE_CM_EVENT, QUERY IB_SERVICE) and the
 * state-machine misuse cases. Needs RXE_IP in the environment. Prints KTAP.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <rdma/rdma_user_cm.h>

#include "ktap.h"
#include "ucma_cmd.h"

static int fd1, fd2;
static void *bad_ptr;
static struct sockaddr_in rxe_addr;

/* Logs an event reply for the differential run, its id normalised. */
static void observe_event(const char *name, struct rdma_ucm_event_resp ev)
{
	ev.id = ktap_norm_id(ev.id);
	ktap_observe_reply(name, &ev, sizeof(ev));
}

/*
 * Ephemeral ports are random: zero them in logged replies. @sa is a
 * sockaddr_in/in6 (port at byte 2) or a sockaddr_ib (port in sib_sid, the
 * 8 bytes at 24).
 */
static void zero_port(uint8_t *sa)
{
	if (sa[0] == AF_INET || sa[0] == AF_INET6)
		memset(sa + 2, 0, 2);
	else if (sa[0] == 27)
		memset(sa + 24, 0, 8);
}

static void test_create_destroy(void)
{
	struct rdma_ucm_create_id c = { .uid = 1, .ps = RDMA_PS_TCP };
	struct rdma_ucm_create_id_resp r;
	uint32_t a = ~0u, b = ~0u, rep = ~0u;

	c.response = (uintptr_t)&r;
	EXPECT_ERRNO("create_id_out_short_enospc", CMD(fd1, RDMA_USER_CM_CMD_CREATE_ID, c, 3), ENOSPC);
	c.ps = 0x999;
	EXPECT_ERRNO("create_id_bad_ps_einval", CMD(fd1, RDMA_USER_CM_CMD_CREATE_ID, c, 4), EINVAL);
	c.ps = RDMA_PS_TCP;

	/* A create whose reply faults leaves nothing: its id is reused. */
	create_id(fd1, 1, RDMA_PS_TCP, &a);
	destroy_id(fd1, a, NULL);
	c.response = (uintptr_t)bad_ptr;
	EXPECT_ERRNO("create_id_reply_fault_efault", CMD(fd1, RDMA_USER_CM_CMD_CREATE_ID, c, 4), EFAULT);
	create_id(fd1, 1, RDMA_PS_TCP, &b);
	ktap_result(a == b, "create_id_fault_leaves_no_context", "id %u then %u", a, b);
	EXPECT_ERRNO("faulted_id_is_not_visible", destroy_id(fd2, b + 1, NULL), ENOENT);

	EXPECT_ERRNO("destroy_foreign_fd_einval", destroy_id(fd2, b, NULL), EINVAL);
	ktap_result(destroy_id(fd1, b, &rep) == 0 && rep == 0, "destroy_reports_zero", "rep %u", rep);
	EXPECT_ERRNO("destroy_twice_enoent", destroy_id(fd1, b, NULL), ENOENT);
	EXPECT_ERRNO("destroy_huge_id_enoent", destroy_id(fd1, 0x80000001u, NULL), ENOENT);
	{
		struct rdma_ucm_destroy_id d = { .id = 0 };

		EXPECT_ERRNO("destroy_out_short_enospc", CMD(fd1, RDMA_USER_CM_CMD_DESTROY_ID, d, 3), ENOSPC);
	}
}

static void test_events(void)
{
	struct rdma_ucm_event_resp ev;
	struct pollfd p = { .events = POLLIN };
	uint32_t id = ~0u, id0 = ~0u, rep = ~0u;

	create_id(fd1, 0x1234, RDMA_PS_TCP, &id);
	create_id(fd1, 0, RDMA_PS_TCP, &id0);
	set_nonblock(fd1, 1);
	EXPECT_ERRNO("get_event_empty_nonblock_eagain", get_event(fd1, &ev, sizeof(ev)), EAGAIN);
	EXPECT_ERRNO("get_event_out_323_enospc", get_event(fd1, &ev, 323), ENOSPC);
	EXPECT_ERRNO("write_cm_event_bad_event_einval", write_user_event(fd1, id, 5, 0, 0), EINVAL);
	EXPECT_ERRNO("write_cm_event_uid0_einval", write_user_event(fd1, id0, EV_USER, 0, 0), EINVAL);
	EXPECT_ERRNO("write_cm_event_unknown_enoent", write_user_event(fd1, 0x7ffffff0, EV_USER, 0, 0), ENOENT);
	ktap_result(write_user_event(fd1, id, EV_USER, 77, 0x1122334455667788ull) == 0, "write_cm_event_ok",
		    "errno %d", errno);
	p.fd = fd1;
	ktap_result(poll(&p, 1, 0) == 1 && p.revents == (POLLIN), "poll_pollin_when_queued", "revents %#x",
		    p.revents);
	EXPECT_ERRNO("get_event_reply_fault_efault", get_event(fd1, bad_ptr, sizeof(ev)), EFAULT);
	memset(&ev, 0, sizeof(ev));
	ktap_result(get_event(fd1, &ev, sizeof(ev)) == 0 && ev.uid == 0x1234 && ev.id == id &&
			    ev.event == EV_USER && ev.status == 77 && ev.param.arg32[0] == 0x55667788 &&
			    ev.param.arg32[1] == 0x11223344,
		    "get_event_user_event_image", "uid %llx id %u event %u status %u arg %x %x",
		    (unsigned long long)ev.uid, ev.id, ev.event, ev.status, ev.param.arg32[0],
		    ev.param.arg32[1]);
	observe_event("get_event_user_event_image", ev);
	p.revents = 0;
	ktap_result(poll(&p, 1, 0) == 0, "poll_idle_after_fetch", "revents %#x", p.revents);

	/* MIGRATE_ID moves the queued events; counts stay exact. */
	write_user_event(fd1, id, EV_USER, 1, 0);
	{
		struct rdma_ucm_migrate_id m = { .id = id, .fd = fd1 };
		struct rdma_ucm_migrate_resp r = { .events_reported = ~0u };

		m.response = (uintptr_t)&r;
		ktap_result(CMD(fd2, RDMA_USER_CM_CMD_MIGRATE_ID, m, 0) == 0 && r.events_reported == 1,
			    "migrate_reports_delivered", "errno %d rep %u", errno, r.events_reported);
		m.fd = 9999;
		EXPECT_ERRNO("migrate_bad_fd_enoent", CMD(fd2, RDMA_USER_CM_CMD_MIGRATE_ID, m, 0), ENOENT);
		m.fd = 0;
		EXPECT_ERRNO("migrate_foreign_file_einval", CMD(fd2, RDMA_USER_CM_CMD_MIGRATE_ID, m, 0), EINVAL);
		m.fd = fd1;
		EXPECT_ERRNO("migrate_from_wrong_fd_einval", CMD(fd2, RDMA_USER_CM_CMD_MIGRATE_ID, m, 0), EINVAL);
	}
	EXPECT_ERRNO("migrated_event_left_old_fd", get_event(fd1, &ev, sizeof(ev)), EAGAIN);
	set_nonblock(fd2, 1);
	ktap_result(get_event(fd2, &ev, sizeof(ev)) == 0 && ev.id == id && ev.status == 1,
		    "migrated_event_on_new_fd", "errno %d", errno);
	EXPECT_ERRNO("destroy_via_old_fd_einval", destroy_id(fd1, id, NULL), EINVAL);
	ktap_result(destroy_id(fd2, id, &rep) == 0 && rep == 2, "destroy_reports_two", "rep %u", rep);

	/* Undelivered events are not counted. */
	create_id(fd1, 9, RDMA_PS_TCP, &id);
	write_user_event(fd1, id, EV_USER, 0, 0);
	ktap_result(destroy_id(fd1, id, &rep) == 0 && rep == 0, "undelivered_not_counted", "rep %u", rep);
	EXPECT_ERRNO("destroyed_ids_events_gone", get_event(fd1, &ev, sizeof(ev)), EAGAIN);
	destroy_id(fd1, id0, NULL);
	set_nonblock(fd1, 0);
	set_nonblock(fd2, 0);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void test_signal(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { .it_value = { .tv_usec = 200000 } };
	struct rdma_ucm_event_resp ev;

	sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART */
	setitimer(ITIMER_REAL, &it, NULL);
	EXPECT_ERRNO("blocking_get_event_eintr", get_event(fd1, &ev, sizeof(ev)), EINTR);
}

static void test_resolved_queries(uint32_t id);

static void test_addressing(void)
{
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_query_route_resp qr;
	struct rdma_ucm_query q = { 0 };
	uint32_t id = ~0u, ud = ~0u;

	create_id(fd1, 5, RDMA_PS_TCP, &id);
	{
		struct rdma_ucm_connect c = { .id = id };

		c.conn_param.valid = 1;
		EXPECT_ERRNO("connect_unbound_einval", CMD(fd1, RDMA_USER_CM_CMD_CONNECT, c, 0), EINVAL);
		EXPECT_ERRNO("connect_short_in_einval", cmd(fd1, RDMA_USER_CM_CMD_CONNECT, &c, 279, 0), EINVAL);
		c.conn_param.valid = 0;
		EXPECT_ERRNO("connect_not_valid_einval", CMD(fd1, RDMA_USER_CM_CMD_CONNECT, c, 0), EINVAL);
	}
	{
		struct rdma_ucm_notify n = { .id = id };

		EXPECT_ERRNO("notify_unbound_einval", CMD(fd1, RDMA_USER_CM_CMD_NOTIFY, n, 0), EINVAL);
	}
	{
		struct rdma_ucm_init_qp_attr a = { .id = id, .qp_state = 1 };

		EXPECT_ERRNO("init_qp_attr_out_short_enospc",
			     CMD(fd1, RDMA_USER_CM_CMD_INIT_QP_ATTR, a, 143), ENOSPC);
		a.qp_state = 7;
		EXPECT_ERRNO("init_qp_attr_bad_state_einval", CMD(fd1, RDMA_USER_CM_CMD_INIT_QP_ATTR, a, 144),
			     EINVAL);
		a.qp_state = 1;
		EXPECT_ERRNO("init_qp_attr_unbound_einval", CMD(fd1, RDMA_USER_CM_CMD_INIT_QP_ATTR, a, 144),
			     EINVAL);
	}
	{
		struct rdma_ucm_resolve_ib_service r = { .id = id };

		EXPECT_ERRNO("resolve_ib_service_unbound_einval",
			     CMD(fd1, RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE, r, 0), EINVAL);
	}
	ktap_result(bind_ip(fd1, id, &rxe_addr) == 0, "bind_ip_rxe", "errno %d", errno);
	EXPECT_ERRNO("bind_ip_twice_einval", bind_ip(fd1, id, &rxe_addr), EINVAL);
	{
		struct rdma_ucm_resolve_ib_service r = { .id = id };

		EXPECT_ERRNO("resolve_ib_service_roce_eopnotsupp",
			     CMD(fd1, RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE, r, 0), EOPNOTSUPP);
	}
	q.id = id;
	q.response = (uintptr_t)&qr;
	EXPECT_ERRNO("query_route_out_short_enospc", CMD(fd1, RDMA_USER_CM_CMD_QUERY_ROUTE, q, 199), ENOSPC);
	memset(&qr, 0xa5, sizeof(qr));
	ktap_result(CMD(fd1, RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof(qr)) == 0 &&
			    ((struct sockaddr_in *)&qr.src_addr)->sin_family == AF_INET &&
			    ((struct sockaddr_in *)&qr.src_addr)->sin_addr.s_addr ==
				    rxe_addr.sin_addr.s_addr &&
			    qr.node_guid != 0 && qr.port_num == 1 && qr.num_paths == 0,
		    "query_route_bound", "errno %d family %u guid %llx port %u paths %u", errno,
		    ((struct sockaddr_in *)&qr.src_addr)->sin_family, (unsigned long long)qr.node_guid,
		    qr.port_num, qr.num_paths);
	zero_port((uint8_t *)&qr.src_addr);
	ktap_observe_reply("query_route_bound", &qr, sizeof(qr));
	q.option = RDMA_USER_CM_QUERY_IB_SERVICE;
	EXPECT_ERRNO("query_ib_service_out_short_enospc", CMD(fd1, RDMA_USER_CM_CMD_QUERY, q, 7), ENOSPC);
	EXPECT_ERRNO("query_ib_service_enodata", CMD(fd1, RDMA_USER_CM_CMD_QUERY, q, 8), ENODATA);
	q.option = 9;
	EXPECT_ERRNO("query_bad_option_enosys", CMD(fd1, RDMA_USER_CM_CMD_QUERY, q, 280), ENOSYS);
	{
		struct rdma_ucm_accept a = { .id = id };

		a.conn_param.valid = 1;
		EXPECT_ERRNO("accept_not_connecting_einval", CMD(fd1, RDMA_USER_CM_CMD_ACCEPT, a, 0), EINVAL);
	}
	{
		struct rdma_ucm_reject r = { .id = id, .reason = 5 };

		EXPECT_ERRNO("reject_bad_reason_einval", CMD(fd1, RDMA_USER_CM_CMD_REJECT, r, 0), EINVAL);
	}
	{
		struct rdma_ucm_join_ip_mcast j = { .id = id };
		struct rdma_ucm_create_id_resp r;

		j.response = (uintptr_t)&r;
		EXPECT_ERRNO("join_ip_mcast_bad_family_einval",
			     CMD(fd1, RDMA_USER_CM_CMD_JOIN_IP_MCAST, j, 4), EINVAL);
	}
	{
		struct rdma_ucm_join_mcast j = { .id = id, .addr_size = sizeof(struct sockaddr_in) };
		struct sockaddr_in g = { .sin_family = AF_INET };
		struct rdma_ucm_create_id_resp r;

		inet_pton(AF_INET, "239.1.2.3", &g.sin_addr);
		memcpy(&j.addr, &g, sizeof(g));
		j.response = (uintptr_t)&r;
		j.join_flags = 2;
		EXPECT_ERRNO("join_mcast_bad_flags_einval", CMD(fd1, RDMA_USER_CM_CMD_JOIN_MCAST, j, 4), EINVAL);
		j.join_flags = 0;
		EXPECT_ERRNO("join_mcast_out_short_enospc", CMD(fd1, RDMA_USER_CM_CMD_JOIN_MCAST, j, 3), ENOSPC);
	}
	{
		struct rdma_ucm_destroy_id l = { .id = 0x7ffffff0 };
		struct rdma_ucm_destroy_id_resp r;

		l.response = (uintptr_t)&r;
		EXPECT_ERRNO("leave_mcast_unknown_enoent", CMD(fd1, RDMA_USER_CM_CMD_LEAVE_MCAST, l, 4), ENOENT);
		EXPECT_ERRNO("leave_mcast_out_short_enospc", CMD(fd1, RDMA_USER_CM_CMD_LEAVE_MCAST, l, 3),
			     ENOSPC);
	}
	{
		struct rdma_ucm_set_option s = { .id = id, .level = RDMA_OPTION_ID };
		uint8_t val[144] = { 0 };

		s.optval = (uintptr_t)val;
		s.optname = RDMA_OPTION_ID_TOS;
		s.optlen = 2;
		EXPECT_ERRNO("set_option_tos_len2_einval", CMD(fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0), EINVAL);
		s.optlen = 1;
		ktap_result(CMD(fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0) == 0, "set_option_tos_ok", "errno %d",
			    errno);
		s.optname = 77;
		EXPECT_ERRNO("set_option_bad_name_enosys", CMD(fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0), ENOSYS);
		s.level = 9;
		EXPECT_ERRNO("set_option_bad_level_enosys", CMD(fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0), ENOSYS);
		s.optlen = 0x7fffffff;
		EXPECT_ERRNO("set_option_huge_optlen_einval", CMD(fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0),
			     EINVAL);
		s.level = RDMA_OPTION_IB;
		s.optname = RDMA_OPTION_IB_PATH;
		s.optlen = 71;
		EXPECT_ERRNO("set_option_ib_path_len_einval", CMD(fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0),
			     EINVAL);
		s.optlen = 72;
		EXPECT_ERRNO("set_option_ib_path_no_primary_einval",
			     CMD(fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0), EINVAL);
		s.optval = (uintptr_t)bad_ptr;
		EXPECT_ERRNO("set_option_optval_fault_efault", CMD(fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0),
			     EFAULT);
	}
	destroy_id(fd1, id, NULL);

	/* RESOLVE_IP to the rxe address: ADDR_RESOLVED arrives with the uid. */
	create_id(fd1, 0xabc, RDMA_PS_UDP, &ud);
	{
		struct rdma_ucm_resolve_ip r = { .id = ud, .timeout_ms = 2000 };

		memcpy(&r.dst_addr, &rxe_addr, sizeof(rxe_addr));
		ktap_result(CMD(fd1, RDMA_USER_CM_CMD_RESOLVE_IP, r, 0) == 0, "resolve_ip_rxe", "errno %d",
			    errno);
	}
	memset(&ev, 0, sizeof(ev));
	ktap_result(get_event(fd1, &ev, sizeof(ev)) == 0 && ev.event == EV_ADDR_RESOLVED && ev.status == 0 &&
			    ev.uid == 0xabc && ev.id == ud,
		    "addr_resolved_event", "event %u status %d uid %llx", ev.event, (int)ev.status,
		    (unsigned long long)ev.uid);
	observe_event("addr_resolved_event", ev);
	test_resolved_queries(ud);
	destroy_id(fd1, ud, NULL);
}

/* The replies of an address-resolved UD id: QUERY (addr, path, gid), INIT_QP_ATTR. */
static void test_resolved_queries(uint32_t id)
{
	struct rdma_ucm_query q = { .id = id };
	struct rdma_ucm_query_addr_resp qa;
	struct rdma_ucm_query_path_resp qp;
	struct rdma_ucm_init_qp_attr ia = { .id = id, .qp_state = 1 };
	struct ib_uverbs_qp_attr attr;
	long rc;

	memset(&qa, 0xa5, sizeof(qa));
	q.response = (uintptr_t)&qa;
	q.option = RDMA_USER_CM_QUERY_ADDR;
	rc = CMD(fd1, RDMA_USER_CM_CMD_QUERY, q, sizeof(qa));
	ktap_result(rc == 0 && qa.node_guid != 0 && qa.port_num == 1 && qa.src_size == 16 && qa.dst_size == 16,
		    "query_addr_resolved", "rc %ld errno %d port %u src_size %u dst_size %u", rc, errno,
		    qa.port_num, qa.src_size, qa.dst_size);
	zero_port((uint8_t *)&qa.src_addr);
	ktap_observe_reply("query_addr_resolved", &qa, sizeof(qa));
	EXPECT_ERRNO("query_addr_out_271_enospc", CMD(fd1, RDMA_USER_CM_CMD_QUERY, q, 271), ENOSPC);
	memset(&qp, 0xa5, sizeof(qp));
	q.response = (uintptr_t)&qp;
	q.option = RDMA_USER_CM_QUERY_PATH;
	rc = CMD(fd1, RDMA_USER_CM_CMD_QUERY, q, sizeof(qp));
	ktap_result(rc == 0 && qp.num_paths == 0, "query_path_no_paths", "rc %ld errno %d paths %u", rc, errno,
		    qp.num_paths);
	ktap_observe_reply("query_path_no_paths", &qp, sizeof(qp));
	memset(&qa, 0xa5, sizeof(qa));
	q.response = (uintptr_t)&qa;
	q.option = RDMA_USER_CM_QUERY_GID;
	rc = CMD(fd1, RDMA_USER_CM_CMD_QUERY, q, sizeof(qa));
	ktap_result(rc == 0 && qa.src_size == 48 && qa.dst_size == 48, "query_gid_resolved",
		    "rc %ld errno %d src_size %u", rc, errno, qa.src_size);
	zero_port((uint8_t *)&qa.src_addr);
	ktap_observe_reply("query_gid_resolved", &qa, sizeof(qa));
	q.response = (uintptr_t)bad_ptr;
	EXPECT_ERRNO("query_gid_reply_fault_efault", CMD(fd1, RDMA_USER_CM_CMD_QUERY, q, sizeof(qa)),
		     EFAULT);
	memset(&attr, 0xa5, sizeof(attr));
	ia.response = (uintptr_t)&attr;
	rc = CMD(fd1, RDMA_USER_CM_CMD_INIT_QP_ATTR, ia, sizeof(attr));
	ktap_result(rc == 0 && attr.qp_state == 1 && attr.port_num == 1 && attr.qkey != 0,
		    "init_qp_attr_ud_init", "rc %ld errno %d state %u port %u qkey %#x", rc, errno,
		    attr.qp_state, attr.port_num, attr.qkey);
	ktap_observe_reply("init_qp_attr_ud_init", &attr, sizeof(attr));
	ia.qp_state = 3;
	memset(&attr, 0xa5, sizeof(attr));
	rc = CMD(fd1, RDMA_USER_CM_CMD_INIT_QP_ATTR, ia, sizeof(attr));
	ktap_result(rc == 0 && attr.qp_state == 3, "init_qp_attr_ud_rts", "rc %ld errno %d state %u", rc,
		    errno, attr.qp_state);
	ktap_observe_reply("init_qp_attr_ud_rts", &attr, sizeof(attr));
}

/*
 * A context whose device is removed becomes a zombie: DEVICE_REMOVAL is
 * delivered, every command on it is ENXIO, DESTROY_ID still works and
 * counts the events. Uses its own rxe device (rxez on vethz0), so the
 * suite's rxe0/siw0 stay untouched.
 */
static void test_zombie(void)
{
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_query_route_resp qr;
	struct rdma_ucm_query q = { 0 };
	struct rdma_ucm_resolve_ip r = { .timeout_ms = 2000 };
	struct sockaddr_in z = { .sin_family = AF_INET };
	uint32_t id = ~0u, rep = ~0u;
	int up;

	up = system("ip link add vethz0 type veth peer name vethz1 && ip addr add 203.0.113.1/24 dev vethz0 && ip link set vethz0 up && ip link set vethz1 up && rdma link add rxez type rxe netdev vethz0 && for i in $(seq 50); do rdma link show rxez/1 | grep -q ACTIVE && exit 0; sleep 0.1; done; exit 1") == 0;
	if (!up) {
		ktap_result(0, "zombie_setup", "could not add rxez on vethz0");
		return;
	}
	inet_pton(AF_INET, "203.0.113.1", &z.sin_addr);
	create_id(fd1, 0x20b, RDMA_PS_UDP, &id);
	r.id = id;
	memcpy(&r.dst_addr, &z, sizeof(z));
	ktap_result(CMD(fd1, RDMA_USER_CM_CMD_RESOLVE_IP, r, 0) == 0 && get_event(fd1, &ev, sizeof(ev)) == 0 &&
			    ev.event == EV_ADDR_RESOLVED && ev.status == 0,
		    "zombie_resolved_on_rxez", "errno %d event %u status %d", errno, ev.event, ev.status);
	ktap_result(system("rdma link delete rxez") == 0, "zombie_device_deleted", "rdma link delete failed");
	memset(&ev, 0, sizeof(ev));
	ktap_result(get_event(fd1, &ev, sizeof(ev)) == 0 && ev.event == EV_DEVICE_REMOVAL && ev.id == id &&
			    ev.uid == 0x20b,
		    "zombie_device_removal_event", "errno %d event %u", errno, ev.event);
	observe_event("zombie_device_removal_event", ev);
	q.id = id;
	q.response = (uintptr_t)&qr;
	EXPECT_ERRNO("zombie_query_route_enxio", CMD(fd1, RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof(qr)), ENXIO);
	EXPECT_ERRNO("zombie_resolve_ip_enxio", CMD(fd1, RDMA_USER_CM_CMD_RESOLVE_IP, r, 0), ENXIO);
	EXPECT_ERRNO("zombie_write_cm_event_enxio", write_user_event(fd1, id, EV_USER, 0, 0), ENXIO);
	EXPECT_ERRNO("zombie_destroy_foreign_fd_einval", destroy_id(fd2, id, NULL), EINVAL);
	ktap_result(destroy_id(fd1, id, &rep) == 0 && rep == 2, "zombie_destroy_counts_events",
		    "errno %d rep %u", errno, rep);
	if (system("ip link delete vethz0"))
		ktap_result(0, "zombie_teardown", "ip link delete vethz0 failed");
}

int main(void)
{
	const char *ip = getenv("RXE_IP");

	signal(SIGPIPE, SIG_IGN);
	if (!ip) {
		printf("Bail out! RXE_IP not set (run through scripts/vm-run)\n");
		return 1;
	}
	rxe_addr.sin_family = AF_INET;
	inet_pton(AF_INET, ip, &rxe_addr.sin_addr);
	bad_ptr = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fd1 = open(DEV, O_RDWR | O_CLOEXEC);
	fd2 = open(DEV, O_RDWR | O_CLOEXEC);
	if (fd1 < 0 || fd2 < 0) {
		printf("Bail out! open %s: %s\n", DEV, strerror(errno));
		return 1;
	}
	printf("KTAP version 1\n");
	test_create_destroy();
	test_events();
	test_signal();
	test_addressing();
	test_zombie();
	printf("1..%d\n", ktap_n);
	close(fd1);
	close(fd2);
	return ktap_finish();
}
