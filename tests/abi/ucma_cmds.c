// SPDX-License-Identifier: GPL-2.0
/*
 * Raw-ABI selftest of the uCMA commands: errnos, replies and event
 * bookkeeping, written against what the C rdma_ucm does, so that it passes
 * unchanged with either module loaded. Covers the commands no stock tool
 * sends (BIND_IP, RESOLVE_IP, QUERY_ROUTE, JOIN_IP_MCAST, NOTIFY,
 * GET_OPTION, RESOLVE_IB_SERVICE, WRITE_CM_EVENT, QUERY IB_SERVICE) and the
 * state-machine misuse cases. Needs RXE_IP in the environment. On the
 * kernel's kselftest_harness.h (tests/lib/harness.h): one TEST_F per group
 * of cases, each in a process of its own with two files of its own. Prints
 * KTAP. "ucma_cmds GROUP" runs only the groups whose name contains GROUP;
 * "ucma_cmds --c-uaf-demo" is not a test (see c_uaf_demo()).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_user_cm.h>

#include "harness.h"
#include "ucma_cmd.h"

static void *bad_ptr;
static struct sockaddr_in rxe_addr;

/*
 * Two files of the device per group; the groups that need others open
 * their own.
 */
struct cmds_files {
	int fd1, fd2;
};

FIXTURE(cmds)
{
	struct cmds_files f;
};

FIXTURE_SETUP(cmds)
{
	self->f.fd1 = ucma_dev_open();
	self->f.fd2 = ucma_dev_open();
	ASSERT_LE(0, self->f.fd1) TH_LOG("open %s: %s", UCMA_DEV, strerror(errno));
	ASSERT_LE(0, self->f.fd2) TH_LOG("open %s: %s", UCMA_DEV, strerror(errno));
}

FIXTURE_TEARDOWN(cmds)
{
	close(self->f.fd1);
	close(self->f.fd2);
	ktap_group_end(_metadata);
}

/* Logs an event reply for the differential run, its id normalised. */
static void observe_event(const char *name, struct rdma_ucm_event_resp ev)
{
	ev.id = ktap_norm_id(ev.id);
	ktap_observe_reply(name, &ev, sizeof(ev));
}

static void test_create_destroy(struct cmds_files *self)
{
	struct rdma_ucm_create_id c = { .uid = 1, .ps = RDMA_PS_TCP };
	struct rdma_ucm_create_id_resp r;
	uint32_t a = ~0u, b = ~0u, rep = ~0u;

	c.response = (uintptr_t)&r;
	EXPECT_ERRNO("create_id_out_short_enospc", CMD(self->fd1, RDMA_USER_CM_CMD_CREATE_ID, c, 3), ENOSPC);
	c.ps = 0x999;
	EXPECT_ERRNO("create_id_bad_ps_einval", CMD(self->fd1, RDMA_USER_CM_CMD_CREATE_ID, c, 4), EINVAL);
	c.ps = RDMA_PS_TCP;

	/* A create whose reply faults leaves nothing: its id is reused. */
	create_id(self->fd1, 1, RDMA_PS_TCP, &a);
	destroy_id(self->fd1, a, NULL);
	c.response = (uintptr_t)bad_ptr;
	EXPECT_ERRNO("create_id_reply_fault_efault", CMD(self->fd1, RDMA_USER_CM_CMD_CREATE_ID, c, 4), EFAULT);
	create_id(self->fd1, 1, RDMA_PS_TCP, &b);
	ktap_result(a == b, "create_id_fault_leaves_no_context", "id %u then %u", a, b);
	EXPECT_ERRNO("faulted_id_is_not_visible", destroy_id(self->fd2, b + 1, NULL), ENOENT);

	EXPECT_ERRNO("destroy_foreign_fd_einval", destroy_id(self->fd2, b, NULL), EINVAL);
	ktap_result(destroy_id(self->fd1, b, &rep) == 0 && rep == 0, "destroy_reports_zero", "rep %u", rep);
	EXPECT_ERRNO("destroy_twice_enoent", destroy_id(self->fd1, b, NULL), ENOENT);
	EXPECT_ERRNO("destroy_huge_id_enoent", destroy_id(self->fd1, 0x80000001u, NULL), ENOENT);
	{
		struct rdma_ucm_destroy_id d = { .id = 0 };

		EXPECT_ERRNO("destroy_out_short_enospc", CMD(self->fd1, RDMA_USER_CM_CMD_DESTROY_ID, d, 3), ENOSPC);
	}
}

static void test_events(struct cmds_files *self)
{
	struct rdma_ucm_event_resp ev;
	struct pollfd p = { .events = POLLIN };
	uint32_t id = ~0u, id0 = ~0u, rep = ~0u;

	create_id(self->fd1, 0x1234, RDMA_PS_TCP, &id);
	create_id(self->fd1, 0, RDMA_PS_TCP, &id0);
	set_nonblock(self->fd1, 1);
	EXPECT_ERRNO("get_event_empty_nonblock_eagain", get_event(self->fd1, &ev, sizeof(ev)), EAGAIN);
	EXPECT_ERRNO("get_event_out_323_enospc", get_event(self->fd1, &ev, 323), ENOSPC);
	EXPECT_ERRNO("write_cm_event_bad_event_einval", write_user_event(self->fd1, id, 5, 0, 0), EINVAL);
	EXPECT_ERRNO("write_cm_event_uid0_einval", write_user_event(self->fd1, id0, EV_USER, 0, 0), EINVAL);
	EXPECT_ERRNO("write_cm_event_unknown_enoent", write_user_event(self->fd1, 0x7ffffff0, EV_USER, 0, 0), ENOENT);
	ktap_result(write_user_event(self->fd1, id, EV_USER, 77, 0x1122334455667788ull) == 0, "write_cm_event_ok",
		    "errno %d", errno);
	p.fd = self->fd1;
	ktap_result(poll(&p, 1, 0) == 1 && p.revents == (POLLIN), "poll_pollin_when_queued", "revents %#x",
		    p.revents);
	EXPECT_ERRNO("get_event_reply_fault_efault", get_event(self->fd1, bad_ptr, sizeof(ev)), EFAULT);
	memset(&ev, 0, sizeof(ev));
	ktap_result(get_event(self->fd1, &ev, sizeof(ev)) == 0 && ev.uid == 0x1234 && ev.id == id &&
			    ev.event == EV_USER && ev.status == 77 && ev.param.arg32[0] == 0x55667788 &&
			    ev.param.arg32[1] == 0x11223344,
		    "get_event_user_event_image", "uid %llx id %u event %u status %u arg %x %x",
		    (unsigned long long)ev.uid, ev.id, ev.event, ev.status, ev.param.arg32[0],
		    ev.param.arg32[1]);
	observe_event("get_event_user_event_image", ev);
	p.revents = 0;
	ktap_result(poll(&p, 1, 0) == 0, "poll_idle_after_fetch", "revents %#x", p.revents);

	/* MIGRATE_ID moves the queued events; counts stay exact. */
	write_user_event(self->fd1, id, EV_USER, 1, 0);
	{
		struct rdma_ucm_migrate_id m = { .id = id, .fd = self->fd1 };
		struct rdma_ucm_migrate_resp r = { .events_reported = ~0u };

		m.response = (uintptr_t)&r;
		ktap_result(CMD(self->fd2, RDMA_USER_CM_CMD_MIGRATE_ID, m, 0) == 0 && r.events_reported == 1,
			    "migrate_reports_delivered", "errno %d rep %u", errno, r.events_reported);
		m.fd = 9999;
		EXPECT_ERRNO("migrate_bad_fd_enoent", CMD(self->fd2, RDMA_USER_CM_CMD_MIGRATE_ID, m, 0), ENOENT);
		m.fd = 0;
		EXPECT_ERRNO("migrate_foreign_file_einval", CMD(self->fd2, RDMA_USER_CM_CMD_MIGRATE_ID, m, 0), EINVAL);
		m.fd = self->fd1;
		EXPECT_ERRNO("migrate_from_wrong_fd_einval", CMD(self->fd2, RDMA_USER_CM_CMD_MIGRATE_ID, m, 0), EINVAL);
	}
	EXPECT_ERRNO("migrated_event_left_old_fd", get_event(self->fd1, &ev, sizeof(ev)), EAGAIN);
	set_nonblock(self->fd2, 1);
	ktap_result(get_event(self->fd2, &ev, sizeof(ev)) == 0 && ev.id == id && ev.status == 1,
		    "migrated_event_on_new_fd", "errno %d", errno);
	EXPECT_ERRNO("destroy_via_old_fd_einval", destroy_id(self->fd1, id, NULL), EINVAL);
	ktap_result(destroy_id(self->fd2, id, &rep) == 0 && rep == 2, "destroy_reports_two", "rep %u", rep);

	/* Undelivered events are not counted. */
	create_id(self->fd1, 9, RDMA_PS_TCP, &id);
	write_user_event(self->fd1, id, EV_USER, 0, 0);
	ktap_result(destroy_id(self->fd1, id, &rep) == 0 && rep == 0, "undelivered_not_counted", "rep %u", rep);
	EXPECT_ERRNO("destroyed_ids_events_gone", get_event(self->fd1, &ev, sizeof(ev)), EAGAIN);
	destroy_id(self->fd1, id0, NULL);
	set_nonblock(self->fd1, 0);
	set_nonblock(self->fd2, 0);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void test_signal(struct cmds_files *self)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { .it_value = { .tv_usec = 200000 } };
	struct rdma_ucm_event_resp ev;

	sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART */
	setitimer(ITIMER_REAL, &it, NULL);
	EXPECT_ERRNO("blocking_get_event_eintr", get_event(self->fd1, &ev, sizeof(ev)), EINTR);
}

struct getter {
	int fd;
	long rc;
	int err;
	struct rdma_ucm_event_resp ev;
};

static void *blocking_getter(void *arg)
{
	struct getter *g = arg;

	g->rc = get_event(g->fd, &g->ev, sizeof(g->ev));
	g->err = errno;
	return NULL;
}

static void on_getter_usr1(int sig)
{
	(void)sig;
}

struct epoller {
	int ep;
	int n;
};

static void *epoll_waiter(void *arg)
{
	struct epoller *w = arg;
	struct epoll_event got;

	w->n = epoll_wait(w->ep, &got, 1, 10000);
	return NULL;
}

/*
 * A blocking GET_EVENT and an EPOLLEXCLUSIVE epoll entry on one file, the
 * epoll entry registered first and a thread in epoll_wait() on it: one
 * event must wake the GET_EVENT (C's GET_EVENT waits non-exclusively;
 * ucma-rs 0.2.0 slept as an exclusive waiter on the poll queue, and the
 * epoll entry, which counts as an exclusive wake-up while someone waits in
 * epoll_wait(), took the one wake-up).
 */
static void test_epoll_exclusive(struct cmds_files *self)
{
	struct sigaction sa = { .sa_handler = on_getter_usr1 };
	struct epoll_event ee = { .events = EPOLLIN | EPOLLEXCLUSIVE };
	struct getter g = { .fd = self->fd1, .rc = -2 };
	struct epoller w = { .n = -2 };
	struct timespec until;
	uint32_t id = ~0u;
	pthread_t t, tw;
	int ep, joined;

	sigaction(SIGUSR1, &sa, NULL); /* no SA_RESTART: frees a stuck getter */
	create_id(self->fd1, 0x3e, RDMA_PS_TCP, &id);
	ep = epoll_create1(0);
	epoll_ctl(ep, EPOLL_CTL_ADD, self->fd1, &ee);
	w.ep = ep;
	pthread_create(&tw, NULL, epoll_waiter, &w);
	pthread_create(&t, NULL, blocking_getter, &g);
	usleep(300000); /* both sleep: in epoll_wait() and in GET_EVENT */
	write_user_event(self->fd1, id, EV_USER, 0, 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	joined = pthread_timedjoin_np(t, NULL, &until) == 0;
	pthread_join(tw, NULL);
	ktap_result(joined && g.rc == 0 && g.ev.id == id, "get_event_woken_beside_epoll_exclusive",
		    "%s (rc %ld, errno %d); epoll_wait() returned %d",
		    joined ? "GET_EVENT returned" :
			     "GET_EVENT still asleep 5 s after the event was queued", g.rc, g.err, w.n);
	if (!joined) {
		pthread_kill(t, SIGUSR1);
		pthread_join(t, NULL);
	}
	close(ep);
	destroy_id(self->fd1, id, NULL);
}

static void test_resolved_queries(struct cmds_files *self, uint32_t id);

static void test_addressing(struct cmds_files *self)
{
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_query_route_resp qr;
	struct rdma_ucm_query q = { 0 };
	struct sockaddr_in src = rxe_addr;
	uint32_t id = ~0u, ud = ~0u;

	create_id(self->fd1, 5, RDMA_PS_TCP, &id);
	{
		struct rdma_ucm_connect c = { .id = id };

		c.conn_param.valid = 1;
		EXPECT_ERRNO("connect_unbound_einval", CMD(self->fd1, RDMA_USER_CM_CMD_CONNECT, c, 0), EINVAL);
		EXPECT_ERRNO("connect_short_in_einval", cmd(self->fd1, RDMA_USER_CM_CMD_CONNECT, &c, 279, 0), EINVAL);
		c.conn_param.valid = 0;
		EXPECT_ERRNO("connect_not_valid_einval", CMD(self->fd1, RDMA_USER_CM_CMD_CONNECT, c, 0), EINVAL);
	}
	{
		struct rdma_ucm_notify n = { .id = id };

		EXPECT_ERRNO("notify_unbound_einval", CMD(self->fd1, RDMA_USER_CM_CMD_NOTIFY, n, 0), EINVAL);
	}
	{
		struct rdma_ucm_init_qp_attr a = { .id = id, .qp_state = 1 };

		EXPECT_ERRNO("init_qp_attr_out_short_enospc",
			     CMD(self->fd1, RDMA_USER_CM_CMD_INIT_QP_ATTR, a, 143), ENOSPC);
		a.qp_state = 7;
		EXPECT_ERRNO("init_qp_attr_bad_state_einval", CMD(self->fd1, RDMA_USER_CM_CMD_INIT_QP_ATTR, a, 144),
			     EINVAL);
		a.qp_state = 1;
		EXPECT_ERRNO("init_qp_attr_unbound_einval", CMD(self->fd1, RDMA_USER_CM_CMD_INIT_QP_ATTR, a, 144),
			     EINVAL);
	}
	{
		struct rdma_ucm_resolve_ib_service r = { .id = id };

		EXPECT_ERRNO("resolve_ib_service_unbound_einval",
			     CMD(self->fd1, RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE, r, 0), EINVAL);
	}
	/* A fixed port: the replies logged below are the same in both runs. */
	src.sin_port = htons(7479);
	ktap_result(bind_ip(self->fd1, id, &src) == 0, "bind_ip_rxe", "errno %d", errno);
	EXPECT_ERRNO("bind_ip_twice_einval", bind_ip(self->fd1, id, &rxe_addr), EINVAL);
	{
		struct rdma_ucm_resolve_ib_service r = { .id = id };

		EXPECT_ERRNO("resolve_ib_service_roce_eopnotsupp",
			     CMD(self->fd1, RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE, r, 0), EOPNOTSUPP);
	}
	q.id = id;
	q.response = (uintptr_t)&qr;
	EXPECT_ERRNO("query_route_out_short_enospc", CMD(self->fd1, RDMA_USER_CM_CMD_QUERY_ROUTE, q, 199), ENOSPC);
	memset(&qr, 0xa5, sizeof(qr));
	ktap_result(CMD(self->fd1, RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof(qr)) == 0 &&
			    ((struct sockaddr_in *)&qr.src_addr)->sin_family == AF_INET &&
			    ((struct sockaddr_in *)&qr.src_addr)->sin_addr.s_addr ==
				    rxe_addr.sin_addr.s_addr &&
			    qr.node_guid != 0 && qr.port_num == 1 && qr.num_paths == 0,
		    "query_route_bound", "errno %d family %u guid %llx port %u paths %u", errno,
		    ((struct sockaddr_in *)&qr.src_addr)->sin_family, (unsigned long long)qr.node_guid,
		    qr.port_num, qr.num_paths);
	ktap_observe_reply("query_route_bound", &qr, sizeof(qr));
	q.option = RDMA_USER_CM_QUERY_IB_SERVICE;
	EXPECT_ERRNO("query_ib_service_out_short_enospc", CMD(self->fd1, RDMA_USER_CM_CMD_QUERY, q, 7), ENOSPC);
	EXPECT_ERRNO("query_ib_service_enodata", CMD(self->fd1, RDMA_USER_CM_CMD_QUERY, q, 8), ENODATA);
	q.option = 9;
	EXPECT_ERRNO("query_bad_option_enosys", CMD(self->fd1, RDMA_USER_CM_CMD_QUERY, q, 280), ENOSYS);
	{
		struct rdma_ucm_accept a = { .id = id };

		a.conn_param.valid = 1;
		EXPECT_ERRNO("accept_not_connecting_einval", CMD(self->fd1, RDMA_USER_CM_CMD_ACCEPT, a, 0), EINVAL);
	}
	{
		struct rdma_ucm_reject r = { .id = id, .reason = 5 };

		EXPECT_ERRNO("reject_bad_reason_einval", CMD(self->fd1, RDMA_USER_CM_CMD_REJECT, r, 0), EINVAL);
	}
	{
		/*
		 * The reason is checked before the id is looked up: on an id
		 * that does not exist, the reasons C takes (0, which means
		 * IB_CM_REJ_CONSUMER_DEFINED, 28 and 35, from ib_cm.h) reach the
		 * lookup (ENOENT) and every other is EINVAL.
		 */
		struct rdma_ucm_reject r = { .id = 0x7ffffff0 };
		int reason, want = 0, got = 0;
		long ret = 0;

		for (reason = 0; reason < 256; reason++) {
			r.reason = reason;
			want = (reason == 0 || reason == 28 || reason == 35) ? ENOENT : EINVAL;
			errno = 0;
			ret = CMD(self->fd1, RDMA_USER_CM_CMD_REJECT, r, 0);
			got = errno;
			if (ret != -1 || got != want)
				break;
		}
		ktap_result(reason == 256, "reject_reasons_as_c",
			    "reason %d: ret %ld errno %d (%s), want errno %d (%s)",
			    reason, ret, got, strerror(got), want, strerror(want));
	}
	{
		struct rdma_ucm_join_ip_mcast j = { .id = id };
		struct rdma_ucm_create_id_resp r;

		j.response = (uintptr_t)&r;
		EXPECT_ERRNO("join_ip_mcast_bad_family_einval",
			     CMD(self->fd1, RDMA_USER_CM_CMD_JOIN_IP_MCAST, j, 4), EINVAL);
	}
	{
		struct rdma_ucm_join_mcast j = { .id = id, .addr_size = sizeof(struct sockaddr_in) };
		struct sockaddr_in g = { .sin_family = AF_INET };
		struct rdma_ucm_create_id_resp r;

		inet_pton(AF_INET, "239.1.2.3", &g.sin_addr);
		memcpy(&j.addr, &g, sizeof(g));
		j.response = (uintptr_t)&r;
		j.join_flags = 2;
		EXPECT_ERRNO("join_mcast_bad_flags_einval", CMD(self->fd1, RDMA_USER_CM_CMD_JOIN_MCAST, j, 4), EINVAL);
		j.join_flags = 0;
		EXPECT_ERRNO("join_mcast_out_short_enospc", CMD(self->fd1, RDMA_USER_CM_CMD_JOIN_MCAST, j, 3), ENOSPC);
	}
	{
		struct rdma_ucm_destroy_id l = { .id = 0x7ffffff0 };
		struct rdma_ucm_destroy_id_resp r;

		l.response = (uintptr_t)&r;
		EXPECT_ERRNO("leave_mcast_unknown_enoent", CMD(self->fd1, RDMA_USER_CM_CMD_LEAVE_MCAST, l, 4), ENOENT);
		EXPECT_ERRNO("leave_mcast_out_short_enospc", CMD(self->fd1, RDMA_USER_CM_CMD_LEAVE_MCAST, l, 3),
			     ENOSPC);
	}
	{
		struct rdma_ucm_set_option s = { .id = id, .level = RDMA_OPTION_ID };
		uint8_t val[144] = { 0 };

		s.optval = (uintptr_t)val;
		s.optname = RDMA_OPTION_ID_TOS;
		s.optlen = 2;
		EXPECT_ERRNO("set_option_tos_len2_einval", CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0), EINVAL);
		s.optlen = 1;
		ktap_result(CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0) == 0, "set_option_tos_ok", "errno %d",
			    errno);
		/* AFONLY takes an int, on an id not yet resolved (this one is bound). */
		s.optname = RDMA_OPTION_ID_AFONLY;
		s.optlen = 1;
		EXPECT_ERRNO("set_option_afonly_len1_einval", CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0),
			     EINVAL);
		s.optlen = sizeof(int);
		val[0] = 1;
		ktap_result(CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0) == 0, "set_option_afonly_ok",
			    "errno %d", errno);
		/* ACK_TIMEOUT takes a u8, on an RC id (RDMA_PS_TCP). */
		s.optname = RDMA_OPTION_ID_ACK_TIMEOUT;
		s.optlen = sizeof(int);
		EXPECT_ERRNO("set_option_ack_timeout_len4_einval",
			     CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0), EINVAL);
		s.optlen = 1;
		val[0] = 14;
		ktap_result(CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0) == 0, "set_option_ack_timeout_ok",
			    "errno %d", errno);
		val[0] = 0;
		s.optname = 77;
		EXPECT_ERRNO("set_option_bad_name_enosys", CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0), ENOSYS);
		s.level = 9;
		EXPECT_ERRNO("set_option_bad_level_enosys", CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0), ENOSYS);
		s.optlen = 0x7fffffff;
		EXPECT_ERRNO("set_option_huge_optlen_einval", CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0),
			     EINVAL);
		s.level = RDMA_OPTION_IB;
		s.optname = RDMA_OPTION_IB_PATH;
		s.optlen = 71;
		EXPECT_ERRNO("set_option_ib_path_len_einval", CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0),
			     EINVAL);
		s.optlen = 72;
		EXPECT_ERRNO("set_option_ib_path_no_primary_einval",
			     CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0), EINVAL);
		s.optval = (uintptr_t)bad_ptr;
		EXPECT_ERRNO("set_option_optval_fault_efault", CMD(self->fd1, RDMA_USER_CM_CMD_SET_OPTION, s, 0),
			     EFAULT);
	}
	destroy_id(self->fd1, id, NULL);

	/*
	 * RESOLVE_IP to the rxe address: ADDR_RESOLVED arrives with the uid.
	 * Bound to a fixed port first, so the replies logged below (source
	 * addresses, and sib_sid in QUERY_GID's) are the same in both runs.
	 */
	create_id(self->fd1, 0xabc, RDMA_PS_UDP, &ud);
	src.sin_port = htons(7480);
	bind_ip(self->fd1, ud, &src);
	{
		struct rdma_ucm_resolve_ip r = { .id = ud, .timeout_ms = 2000 };

		memcpy(&r.dst_addr, &rxe_addr, sizeof(rxe_addr));
		ktap_result(CMD(self->fd1, RDMA_USER_CM_CMD_RESOLVE_IP, r, 0) == 0, "resolve_ip_rxe", "errno %d",
			    errno);
	}
	memset(&ev, 0, sizeof(ev));
	ktap_result(get_event(self->fd1, &ev, sizeof(ev)) == 0 && ev.event == EV_ADDR_RESOLVED && ev.status == 0 &&
			    ev.uid == 0xabc && ev.id == ud,
		    "addr_resolved_event", "event %u status %d uid %llx", ev.event, (int)ev.status,
		    (unsigned long long)ev.uid);
	observe_event("addr_resolved_event", ev);
	test_resolved_queries(self, ud);
	destroy_id(self->fd1, ud, NULL);
}

/* The replies of an address-resolved UD id: QUERY (addr, path, gid), INIT_QP_ATTR. */
static void test_resolved_queries(struct cmds_files *self, uint32_t id)
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
	rc = CMD(self->fd1, RDMA_USER_CM_CMD_QUERY, q, sizeof(qa));
	ktap_result(rc == 0 && qa.node_guid != 0 && qa.port_num == 1 && qa.src_size == 16 && qa.dst_size == 16,
		    "query_addr_resolved", "rc %ld errno %d port %u src_size %u dst_size %u", rc, errno,
		    qa.port_num, qa.src_size, qa.dst_size);
	ktap_observe_reply("query_addr_resolved", &qa, sizeof(qa));
	EXPECT_ERRNO("query_addr_out_271_enospc", CMD(self->fd1, RDMA_USER_CM_CMD_QUERY, q, 271), ENOSPC);
	memset(&qp, 0xa5, sizeof(qp));
	q.response = (uintptr_t)&qp;
	q.option = RDMA_USER_CM_QUERY_PATH;
	rc = CMD(self->fd1, RDMA_USER_CM_CMD_QUERY, q, sizeof(qp));
	ktap_result(rc == 0 && qp.num_paths == 0, "query_path_no_paths", "rc %ld errno %d paths %u", rc, errno,
		    qp.num_paths);
	ktap_observe_reply("query_path_no_paths", &qp, sizeof(qp));
	memset(&qa, 0xa5, sizeof(qa));
	q.response = (uintptr_t)&qa;
	q.option = RDMA_USER_CM_QUERY_GID;
	rc = CMD(self->fd1, RDMA_USER_CM_CMD_QUERY, q, sizeof(qa));
	ktap_result(rc == 0 && qa.src_size == 48 && qa.dst_size == 48, "query_gid_resolved",
		    "rc %ld errno %d src_size %u", rc, errno, qa.src_size);
	ktap_observe_reply("query_gid_resolved", &qa, sizeof(qa));
	q.response = (uintptr_t)bad_ptr;
	EXPECT_ERRNO("query_gid_reply_fault_efault", CMD(self->fd1, RDMA_USER_CM_CMD_QUERY, q, sizeof(qa)),
		     EFAULT);
	memset(&attr, 0xa5, sizeof(attr));
	ia.response = (uintptr_t)&attr;
	rc = CMD(self->fd1, RDMA_USER_CM_CMD_INIT_QP_ATTR, ia, sizeof(attr));
	ktap_result(rc == 0 && attr.qp_state == 1 && attr.port_num == 1 && attr.qkey != 0,
		    "init_qp_attr_ud_init", "rc %ld errno %d state %u port %u qkey %#x", rc, errno,
		    attr.qp_state, attr.port_num, attr.qkey);
	ktap_observe_reply("init_qp_attr_ud_init", &attr, sizeof(attr));
	ia.qp_state = 3;
	memset(&attr, 0xa5, sizeof(attr));
	rc = CMD(self->fd1, RDMA_USER_CM_CMD_INIT_QP_ATTR, ia, sizeof(attr));
	ktap_result(rc == 0 && attr.qp_state == 3, "init_qp_attr_ud_rts", "rc %ld errno %d state %u", rc,
		    errno, attr.qp_state);
	ktap_observe_reply("init_qp_attr_ud_rts", &attr, sizeof(attr));
}

/*
 * A context whose device is removed becomes a zombie: DEVICE_REMOVAL is
 * delivered, QUERY_ROUTE, RESOLVE_IP and WRITE_CM_EVENT on it are ENXIO,
 * DESTROY_ID still works and counts the events. Uses its own rxe device
 * (rxez on vethz0), so the suite's rxe0/siw0 stay untouched.
 */
static void test_zombie(struct cmds_files *self)
{
	struct rdma_ucm_event_resp ev;
	struct rdma_ucm_query_route_resp qr;
	struct rdma_ucm_query q = { 0 };
	struct rdma_ucm_resolve_ip r = { .timeout_ms = 2000 };
	struct sockaddr_in z = { .sin_family = AF_INET };
	uint32_t id = ~0u, rep = ~0u;
	int up;

	/* Leftovers of a run killed at its timeout (no teardown) go first. */
	if (system("rdma link delete rxez 2>/dev/null; ip link delete vethz0 2>/dev/null; true"))
		printf("# the shell did not run\n");
	up = system("ip link add vethz0 type veth peer name vethz1 && ip addr add 203.0.113.1/24 dev vethz0 && ip link set vethz0 up && ip link set vethz1 up && rdma link add rxez type rxe netdev vethz0 && for i in $(seq 50); do rdma link show rxez/1 | grep -q ACTIVE && exit 0; sleep 0.1; done; exit 1") == 0;
	if (!up) {
		ktap_result(0, "zombie_setup", "could not add rxez on vethz0");
		return;
	}
	inet_pton(AF_INET, "203.0.113.1", &z.sin_addr);
	create_id(self->fd1, 0x20b, RDMA_PS_UDP, &id);
	r.id = id;
	memcpy(&r.dst_addr, &z, sizeof(z));
	ktap_result(CMD(self->fd1, RDMA_USER_CM_CMD_RESOLVE_IP, r, 0) == 0 && get_event(self->fd1, &ev, sizeof(ev)) == 0 &&
			    ev.event == EV_ADDR_RESOLVED && ev.status == 0,
		    "zombie_resolved_on_rxez", "errno %d event %u status %d", errno, ev.event, ev.status);
	ktap_result(system("rdma link delete rxez") == 0, "zombie_device_deleted", "rdma link delete failed");
	memset(&ev, 0, sizeof(ev));
	ktap_result(get_event(self->fd1, &ev, sizeof(ev)) == 0 && ev.event == EV_DEVICE_REMOVAL && ev.id == id &&
			    ev.uid == 0x20b,
		    "zombie_device_removal_event", "errno %d event %u", errno, ev.event);
	observe_event("zombie_device_removal_event", ev);
	q.id = id;
	q.response = (uintptr_t)&qr;
	EXPECT_ERRNO("zombie_query_route_enxio", CMD(self->fd1, RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof(qr)), ENXIO);
	EXPECT_ERRNO("zombie_resolve_ip_enxio", CMD(self->fd1, RDMA_USER_CM_CMD_RESOLVE_IP, r, 0), ENXIO);
	EXPECT_ERRNO("zombie_write_cm_event_enxio", write_user_event(self->fd1, id, EV_USER, 0, 0), ENXIO);
	EXPECT_ERRNO("zombie_destroy_foreign_fd_einval", destroy_id(self->fd2, id, NULL), EINVAL);
	ktap_result(destroy_id(self->fd1, id, &rep) == 0 && rep == 2, "zombie_destroy_counts_events",
		    "errno %d rep %u", errno, rep);
	if (system("ip link delete vethz0"))
		ktap_result(0, "zombie_teardown", "ip link delete vethz0 failed");
}

/*
 * ECE in CONNECT and ACCEPT: the C module uses the user's rdma_ucm_ece only
 * when `in` reaches offsetofend(ece); a write that stops inside the field
 * sends no ECE at all. One listener and one client in this process over
 * rxe, on their own files; a fake qp_num will do (no QP is ever used).
 */
#define ECE_VENDOR 0x12345678u
#define ECE_ATTR 0x9abcdef0u

static long connect_ece(int fd, uint32_t id, uint16_t in_len)
{
	struct rdma_ucm_connect c = { .id = id };

	c.conn_param.valid = 1;
	c.conn_param.qp_num = 0x123;
	c.conn_param.responder_resources = 1;
	c.conn_param.initiator_depth = 1;
	c.conn_param.retry_count = 7;
	c.conn_param.rnr_retry_count = 7;
	c.ece.vendor_id = ECE_VENDOR;
	c.ece.attr_mod = ECE_ATTR;
	return cmd(fd, RDMA_USER_CM_CMD_CONNECT, &c, in_len, 0);
}

static long accept_ece(int fd, uint32_t id, uint16_t in_len)
{
	struct rdma_ucm_accept a = { .id = id, .uid = 0x5e };

	a.conn_param.valid = 1;
	a.conn_param.qp_num = 0x456;
	a.conn_param.responder_resources = 1;
	a.conn_param.initiator_depth = 1;
	a.ece.vendor_id = ECE_VENDOR;
	a.ece.attr_mod = ECE_ATTR;
	return cmd(fd, RDMA_USER_CM_CMD_ACCEPT, &a, in_len, 0);
}

/*
 * One connection on @port: CONNECT with @in_c bytes of `in`, ACCEPT with
 * @in_a. @req gets the ECE of the listener's CONNECT_REQUEST, @rep that of
 * the client's CONNECT_RESPONSE. Returns NULL or the step that failed.
 */
static const char *ece_exchange(uint16_t port, uint16_t in_c, uint16_t in_a,
				struct rdma_ucm_ece *req, struct rdma_ucm_ece *rep)
{
	struct sockaddr_in a = rxe_addr;
	struct rdma_ucm_event_resp ev;
	int fl = ucma_dev_open();
	int fc = ucma_dev_open();
	uint32_t l = ~0u, c = ~0u;
	const char *failed;

	a.sin_port = htons(port);
	failed = route_to_listener(fl, fc, &a, &l, &c);
	if (!failed && connect_ece(fc, c, in_c))
		failed = "connect";
	if (!failed && wait_event(fl, EV_CONNECT_REQUEST, &ev, 10000))
		failed = "no CONNECT_REQUEST";
	if (!failed) {
		*req = ev.ece;
		if (accept_ece(fl, ev.id, in_a))
			failed = "accept";
	}
	if (!failed && wait_event(fc, EV_CONNECT_RESPONSE, &ev, 10000))
		failed = "no CONNECT_RESPONSE";
	if (!failed) {
		*rep = ev.ece;
		accept_id(fc, c, 0, 0); /* RTU */
	}
	close(fc);
	close(fl);
	return failed;
}

static void test_ece(void)
{
	const uint16_t half_c = offsetof(struct rdma_ucm_connect, ece) + 4;
	const uint16_t half_a = offsetof(struct rdma_ucm_accept, ece) + 4;
	struct rdma_ucm_ece req = { ~0u, ~0u }, rep = { ~0u, ~0u };
	const char *failed;

	/* vendor_id inside `in`, attr_mod not: neither is sent. */
	failed = ece_exchange(7471, half_c, half_a, &req, &rep);
	ktap_result(!failed && req.vendor_id == 0 && req.attr_mod == 0,
		    "connect_ece_needs_whole_field",
		    "%s; CONNECT with in %u: the request carried ECE %#x/%#x, want none",
		    failed ? failed : "connected", half_c, req.vendor_id, req.attr_mod);
	ktap_observe_reply("connect_ece_needs_whole_field", &req, sizeof(req));
	ktap_result(!failed && rep.vendor_id == 0 && rep.attr_mod == 0,
		    "accept_ece_needs_whole_field",
		    "%s; ACCEPT with in %u: the reply carried ECE %#x/%#x, want none",
		    failed ? failed : "connected", half_a, rep.vendor_id, rep.attr_mod);
	ktap_observe_reply("accept_ece_needs_whole_field", &rep, sizeof(rep));

	/* The control: the whole field goes through ib_cm (REQ and REP). */
	memset(&req, 0xff, sizeof(req));
	memset(&rep, 0xff, sizeof(rep));
	failed = ece_exchange(7472, sizeof(struct rdma_ucm_connect), sizeof(struct rdma_ucm_accept),
			      &req, &rep);
	printf("# ece over rxe: sent %#x/%#x; REQ delivered %#x/%#x, REP delivered %#x/%#x\n",
	       ECE_VENDOR, ECE_ATTR, req.vendor_id, req.attr_mod, rep.vendor_id, rep.attr_mod);
	ktap_result(!failed && req.vendor_id == (ECE_VENDOR & 0xffffff) && req.attr_mod == ECE_ATTR,
		    "connect_ece_whole_field_delivered", "%s; the request carried ECE %#x/%#x",
		    failed ? failed : "connected", req.vendor_id, req.attr_mod);
	ktap_observe_reply("connect_ece_whole_field_delivered", &req, sizeof(req));
	ktap_result(!failed && rep.vendor_id == (ECE_VENDOR & 0xffffff) && rep.attr_mod == ECE_ATTR,
		    "accept_ece_whole_field_delivered", "%s; the reply carried ECE %#x/%#x",
		    failed ? failed : "connected", rep.vendor_id, rep.attr_mod);
	ktap_observe_reply("accept_ece_whole_field_delivered", &rep, sizeof(rep));
}

/*
 * MIGRATE_ID onto the file the id is already on: the C module has no
 * special case, so the id's queued events move to the tail of the queue.
 */
static void test_migrate_same_file(void)
{
	struct rdma_ucm_event_resp e1, e2;
	struct rdma_ucm_migrate_resp r = { .events_reported = ~0u };
	struct rdma_ucm_migrate_id m = { .response = (uintptr_t)&r };
	uint32_t a = ~0u, b = ~0u;
	int fd = ucma_dev_open();
	long rc, g1, g2;

	set_nonblock(fd, 1);
	create_id(fd, 0xa, RDMA_PS_TCP, &a);
	create_id(fd, 0xb, RDMA_PS_TCP, &b);
	write_user_event(fd, a, EV_USER, 1, 0);
	write_user_event(fd, b, EV_USER, 2, 0);
	m.id = a;
	m.fd = fd;
	rc = CMD(fd, RDMA_USER_CM_CMD_MIGRATE_ID, m, sizeof(r));
	memset(&e1, 0, sizeof(e1));
	memset(&e2, 0, sizeof(e2));
	g1 = get_event(fd, &e1, sizeof(e1));
	g2 = get_event(fd, &e2, sizeof(e2));
	ktap_result(rc == 0 && r.events_reported == 0 && g1 == 0 && g2 == 0 && e1.id == b &&
			    e2.id == a,
		    "migrate_same_file_moves_events_to_tail",
		    "migrate rc %ld reported %u; events of id %u then %u (a %u, b %u)", rc,
		    r.events_reported, e1.id, e2.id, a, b);
	observe_event("migrate_same_file_moves_events_to_tail", e1);
	observe_event("migrate_same_file_moves_events_to_tail", e2);
	close(fd);
}

/*
 * A connect request queued on a listener's file, the listener migrated
 * to a second file (its queued request with it), then the second file
 * closed: the request's new id dies with its listener, and the peer hears
 * of it at once (ib_cm's REJ), as with the C module. (ucma-rs 0.2.0 left
 * the new id on the first file, holding the peer's request until
 * that file closed.)
 */
static void test_migrated_listener_close(void)
{
	struct sockaddr_in addr = rxe_addr;
	struct rdma_ucm_event_resp ev;
	int fa = ucma_dev_open(), fb = ucma_dev_open(), fc = ucma_dev_open();
	struct pollfd p = { .fd = fa, .events = POLLIN };
	uint32_t l = ~0u, c = ~0u;
	const char *failed;
	long got = -1;

	addr.sin_port = htons(7473);
	failed = route_to_listener(fa, fc, &addr, &l, &c);
	if (!failed && connect_id(fc, c, 0x123))
		failed = "connect";
	if (!failed && poll(&p, 1, 10000) != 1)
		failed = "no CONNECT_REQUEST queued on the listener's file";
	if (!failed && migrate_id(fb, l, fa))
		failed = "migrate the listener";
	if (!failed) {
		close(fb);
		fb = -1;
		memset(&ev, 0, sizeof(ev));
		got = next_event(fc, &ev, 10000);
	}
	ktap_result(!failed && got == 0 &&
			    (ev.event == EV_REJECTED || ev.event == EV_UNREACHABLE ||
			     ev.event == EV_CONNECT_ERROR),
		    "closing_migration_target_rejects_queued_request",
		    "%s; after the listener's new file closed, the client's next event within 10 s: %s %u (status %d), want REJECTED",
		    failed ? failed : "request queued and moved", got ? "none" : "event",
		    got ? 0 : ev.event, got ? 0 : ev.status);
	if (fb >= 0)
		close(fb);
	close(fc);
	close(fa);
}

/*
 * A SIDR request with private data @pd from UD id @client on @fc to the
 * listener at @a on @fl: the client's address and route resolved, its
 * CONNECT sent, the listener's CONNECT_REQUEST fetched into @ev. Returns
 * NULL, or the step that failed.
 */
static const char *sidr_request(int fl, int fc, uint32_t client, const struct sockaddr_in *a,
				const uint8_t *pd, uint8_t pd_len, struct rdma_ucm_event_resp *ev)
{
	struct rdma_ucm_connect c = { .id = client };

	if (resolve_ip(fc, client, a) || wait_event(fc, EV_ADDR_RESOLVED, NULL, 10000))
		return "resolve address";
	if (resolve_route(fc, client) || wait_event(fc, EV_ROUTE_RESOLVED, NULL, 10000))
		return "resolve route";
	c.conn_param.valid = 1;
	c.conn_param.qp_num = 0x789;
	c.conn_param.qkey = 0x11111111;
	c.conn_param.private_data_len = pd_len;
	memcpy(c.conn_param.private_data, pd, pd_len);
	if (CMD(fc, RDMA_USER_CM_CMD_CONNECT, c, 0))
		return "connect (SIDR)";
	if (wait_event(fl, EV_CONNECT_REQUEST, ev, 10000))
		return "no CONNECT_REQUEST";
	return NULL;
}

/*
 * The CONNECT_REQUEST event's param is built with the listener's QP type
 * (conn or ud branch), not the new id's. An RDMA_PS_IB listener created
 * with qp_type 0 accepts both REQ and SIDR REQ (cma_ib_check_req_qp_type);
 * a SIDR request from a PS_IB UD client gives it a UD child, and the event
 * still has the conn layout: private data at conn.private_data, its length
 * in conn.private_data_len, nothing in ud.private_data_len.
 */
static void test_connect_request_layout(void)
{
	static const uint8_t pd[8] = "layout!";
	struct rdma_ucm_create_id cr = { .uid = 0x1b, .ps = RDMA_PS_IB, .qp_type = QPT_UD };
	struct rdma_ucm_create_id_resp r = { .id = ~0u };
	struct rdma_ucm_event_resp ev;
	struct sockaddr_in a = rxe_addr;
	int fl = ucma_dev_open();
	int fc = ucma_dev_open();
	const char *failed = NULL;
	uint32_t l = ~0u;

	a.sin_port = htons(7473);
	memset(&ev, 0xa5, sizeof(ev));
	if (create_id(fl, 8, RDMA_PS_IB, &l) || bind_ip(fl, l, &a) || listen_id(fl, l, 4))
		failed = "PS_IB listener";
	cr.response = (uintptr_t)&r;
	if (!failed && CMD(fc, RDMA_USER_CM_CMD_CREATE_ID, cr, sizeof(r)))
		failed = "create PS_IB UD client";
	if (!failed)
		failed = sidr_request(fl, fc, r.id, &a, pd, sizeof(pd), &ev);
	ktap_result(!failed && ev.param.conn.private_data_len != 0 &&
			    !memcmp(ev.param.conn.private_data, pd, sizeof(pd)) &&
			    ev.param.ud.private_data_len == 0,
		    "connect_request_layout_follows_listener_qp_type",
		    "%s; conn.private_data_len %u, ud.private_data_len %u, want the conn layout",
		    failed ? failed : "requested", ev.param.conn.private_data_len,
		    ev.param.ud.private_data_len);
	ktap_observe_reply("connect_request_layout_follows_listener_qp_type", &ev.param,
			   sizeof(ev.param));
	close(fc);
	close(fl);
}

/*
 * An event's param holds nothing of an earlier event on the file. The C
 * module allocates every event zeroed; ucma_rs reuses the memory of
 * fetched events, so an event written into one must clear what it does not
 * set. The longest image is a UD CONNECT_REQUEST's (a SIDR request from a
 * PS_UDP client to a PS_UDP listener): ud.private_data_len, at byte 296 of
 * the param, is past all of the conn layout's 272 bytes. After it is
 * fetched, an address resolution on the listener's file (a TCP id) must
 * bring an ADDR_RESOLVED whose param is all zero, as in C.
 */
static void test_spare_event_param(void)
{
	static const uint8_t pd[8] = "spare!";
	struct rdma_ucm_event_resp ev;
	struct sockaddr_in a = rxe_addr;
	int fl = ucma_dev_open();
	int fc = ucma_dev_open();
	const char *failed = NULL;
	uint32_t l = ~0u, u = ~0u, t = ~0u;
	uint8_t ud_len = 0;
	size_t nonzero = 0;

	a.sin_port = htons(7474);
	if (create_id(fl, 8, RDMA_PS_UDP, &l) || bind_ip(fl, l, &a) || listen_id(fl, l, 4))
		failed = "PS_UDP listener";
	if (!failed && create_id(fc, 7, RDMA_PS_UDP, &u))
		failed = "create PS_UDP client";
	if (!failed)
		failed = sidr_request(fl, fc, u, &a, pd, sizeof(pd), &ev);
	ud_len = failed ? 0 : ev.param.ud.private_data_len;
	if (!failed && !ud_len)
		failed = "the UD request carried no ud.private_data_len";
	if (!failed && create_id(fl, 9, RDMA_PS_TCP, &t))
		failed = "create TCP id";
	memset(&ev, 0xa5, sizeof(ev));
	if (!failed && (resolve_ip(fl, t, &a) || wait_event(fl, EV_ADDR_RESOLVED, &ev, 10000)))
		failed = "resolve address on the listener's file";
	for (size_t i = 0; !failed && i < sizeof(ev.param); i++)
		nonzero += ((const uint8_t *)&ev.param)[i] != 0;
	ktap_result(!failed && !nonzero, "event_param_clear_after_ud_request",
		    "%s; the UD request's ud.private_data_len %u; %zu nonzero bytes in ADDR_RESOLVED's param (byte 296: %u)",
		    failed ? failed : "resolved", ud_len, nonzero, ((const uint8_t *)&ev.param)[296]);
	close(fc);
	close(fl);
}

/* QUERY IB_SERVICE where no service record was resolved: ENOSPC, then ENODATA. */
static void test_query_ib_service(struct cmds_files *self)
{
	struct {
		struct rdma_ucm_query_ib_service_resp h;
		struct ib_user_service_rec rec;
	} resp;
	struct rdma_ucm_query q = { .option = RDMA_USER_CM_QUERY_IB_SERVICE,
				    .response = (uintptr_t)&resp };
	uint32_t id = ~0u;

	q.id = 0x7ffffff0;
	EXPECT_ERRNO("query_ib_service_unknown_id_enoent_first", CMD(self->fd1, RDMA_USER_CM_CMD_QUERY, q, 0),
		     ENOENT);
	create_id(self->fd1, 0x1b5, RDMA_PS_TCP, &id);
	q.id = id;
	EXPECT_ERRNO("query_ib_service_unbound_out_short_enospc",
		     CMD(self->fd1, RDMA_USER_CM_CMD_QUERY, q, sizeof(resp.h) - 1), ENOSPC);
	EXPECT_ERRNO("query_ib_service_unbound_enodata",
		     CMD(self->fd1, RDMA_USER_CM_CMD_QUERY, q, sizeof(resp)), ENODATA);
	destroy_id(self->fd1, id, NULL);
}

/* JOIN_IP_MCAST of @group on @id with user cookie @uid. */
static long join_uid(int fd, uint32_t id, const char *group, uint64_t uid, uint32_t *mc)
{
	struct sockaddr_in g = ipv4(group, 0);
	struct rdma_ucm_join_ip_mcast j = { .id = id, .uid = uid };
	struct rdma_ucm_create_id_resp r = { .id = ~0u };
	long ret;

	memcpy(&j.addr, &g, sizeof(g));
	j.response = (uintptr_t)&r;
	ret = CMD(fd, RDMA_USER_CM_CMD_JOIN_IP_MCAST, j, sizeof(r));
	if (mc)
		*mc = r.id;
	return ret;
}

/*
 * A file's close frees the ids of its ids' multicast joins, as a
 * DESTROY_ID does: a join made after the close gets the id the closed
 * file's join had (join ids are lowest free first; no other join lives
 * meanwhile). A join id the close kept would also keep its context.
 */
static void test_close_frees_joins(void)
{
	uint32_t id = ~0u, mc[2] = { ~0u, ~0u };
	const char *failed = NULL;

	for (int round = 0; round < 2 && !failed; round++) {
		int fd = ucma_dev_open();

		if (create_id(fd, 0x3c, RDMA_PS_UDP, &id) || bind_ip(fd, id, &rxe_addr))
			failed = "UDP id on rxe";
		else if (join_uid(fd, id, "239.1.5.3", 0xd, &mc[round]))
			failed = "JOIN_IP_MCAST";
		close(fd);
	}
	if (!failed && mc[1] != mc[0])
		failed = "the join after the close got another id";
	ktap_result(!failed, "close_frees_join_ids", "%s: join id %u, after the close %u", failed,
		    mc[0], mc[1]);
}

/*
 * Two joins of one address on one id (a deliberate difference, see
 * Documentation/abi.rst). In the C module LEAVE of the first tears down
 * rdma_cm's join of the second (rdma_leave_multicast() takes the first
 * match, the newest), and the first's stays in rdma_cm with the freed
 * ucma_multicast as its context: a use-after-free on its next event.
 * ucma_rs refuses the second join with EADDRINUSE. Never run against the C
 * module (it would corrupt the kernel's memory): --c-uaf-demo shows it.
 */
static void test_mcast_same_address(void)
{
	const char *mod = getenv("UCMA_MODULE");
	uint32_t id = ~0u, a = ~0u, b = ~0u, c = ~0u;
	const char *failed = NULL;
	int fd, e = 0;
	long r;

	if ((mod && !strcmp(mod, "c")) || c_module_loaded()) {
		ktap_skipped("mcast_same_address_twice", "C module: use-after-free, see abi.rst");
		return;
	}
	fd = ucma_dev_open();
	if (create_id(fd, 0x3a, RDMA_PS_UDP, &id) || bind_ip(fd, id, &rxe_addr))
		failed = "UDP id on rxe";
	else if (join_uid(fd, id, "239.1.5.1", 0xa, &a))
		failed = "JOIN A(239.1.5.1)";
	if (!failed) {
		errno = 0;
		r = join_uid(fd, id, "239.1.5.1", 0xb, &b);
		e = errno;
		ktap_observe_rc("mcast_same_address_twice", r, e);
		if (r != -1 || e != EADDRINUSE)
			failed = "JOIN B(239.1.5.1) on the same id is not EADDRINUSE";
		/* Joined twice: leave the newest first, the one rdma_cm finds first. */
		if (r == 0)
			leave_mc(fd, b);
	}
	if (!failed && join_uid(fd, id, "239.1.5.2", 0xc, &c))
		failed = "JOIN C(239.1.5.2)";
	if (!failed && leave_mc(fd, a))
		failed = "LEAVE A";
	if (!failed && destroy_id(fd, id, NULL))
		failed = "DESTROY_ID";
	if (failed && strncmp(failed, "JOIN B", 6))
		e = errno;
	ktap_result(!failed, "mcast_same_address_twice", "%s: errno %d (%s)", failed, e, strerror(e));
	close(fd);
}

/*
 * ucma_cmds --c-uaf-demo: the C module's use-after-free that
 * test_mcast_same_address stays clear of, done on purpose, to be shown by
 * hand on the debug kernel (KASAN):
 *
 *   scripts/vm-run --kernel debug --module c -- bash -c \
 *     'sysctl -w kernel.panic_on_warn=0; tests/build/ucma_cmds --c-uaf-demo'
 *
 * (with panic_on_warn the guest dies on the report, which vm-run's output
 * then does not show; without it guest-init's splat gate prints it:
 * "BUG: KASAN: slab-use-after-free in ucma_create_uevent", the object
 * allocated in ucma_process_join and freed in ucma_leave_multicast).
 * On RoCE rdma_join_multicast() only queues the join's event, as work on
 * rdma_cm's ordered workqueue (cma_wq); cma_iboe_join_work_handler() later
 * calls the uCMA handler with the join's context, the ucma_multicast.
 * The queue is backed up first: send-only joins of other groups, whose
 * events go to a file watched by thousands of epoll instances, so that the
 * wake-up of each of those events (every watcher's callback) takes
 * milliseconds. Then JOIN A(X), JOIN B(X) and LEAVE A: LEAVE A tears down
 * rdma_cm's join of B (the newest match) and frees A while A's work is
 * still queued. When it runs, ucma_create_uevent() reads the freed A
 * (KASAN: slab-use-after-free in ucma_create_uevent), and GET_EVENT of the
 * event it queued writes to it. On a kernel without KASAN this corrupts
 * memory: never in the suite. Exits 0 when an event of A came after LEAVE
 * A (and the kernel survived), 2 when A's work ran before LEAVE A or the
 * module refused JOIN B.
 */
#define DEMO_WATCHERS 8192
#define DEMO_IDS 4
#define DEMO_GROUPS 63

/* Fetches up to @max events of @fd: those queued now, or (@wait) waiting for each. */
static int demo_fetch(int fd, int max, int wait)
{
	struct rdma_ucm_event_resp ev;
	int n = 0;

	set_nonblock(fd, 1);
	while (n < max && !(wait ? next_event(fd, &ev, 120000) : get_event(fd, &ev, sizeof(ev))))
		n++;
	return n;
}

static long usecs(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000L + (b->tv_nsec - a->tv_nsec) / 1000;
}

static int c_uaf_demo(void)
{
	struct rlimit rl = { .rlim_cur = DEMO_WATCHERS + 64, .rlim_max = DEMO_WATCHERS + 64 };
	struct epoll_event ee = { .events = EPOLLIN | EPOLLET };
	struct rdma_ucm_create_id_resp r;
	struct rdma_ucm_join_mcast j = { .addr_size = sizeof(struct sockaddr_in),
					 .join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
					 .response = (uintptr_t)&r };
	struct sockaddr_in g = { .sin_family = AF_INET };
	struct rdma_ucm_event_resp ev;
	struct timespec t0, t1, t2;
	uint32_t ids[DEMO_IDS], id = ~0u, a = ~0u, b = ~0u;
	int bfd, fd, ep, i, k, watchers = 0, joined = 0, early, fetched, uaf = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("# c-uaf-demo: uCMA module %s\n", c_module_loaded() ? "rdma_ucm (C)" : "ucma_rs");
	bfd = ucma_dev_open();
	fd = ucma_dev_open();
	if (setrlimit(RLIMIT_NOFILE, &rl))
		printf("# setrlimit: %s\n", strerror(errno));
	for (i = 0; i < DEMO_WATCHERS; i++) {
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, bfd, &ee))
			break;
		watchers++;
	}
	for (i = 0; i < DEMO_IDS; i++)
		if (create_id(bfd, 0x10 + i, RDMA_PS_UDP, &ids[i]) || bind_ip(bfd, ids[i], &rxe_addr)) {
			printf("Bail out! backlog id: %s\n", strerror(errno));
			return 1;
		}
	if (create_id(fd, 0xd0, RDMA_PS_UDP, &id) || bind_ip(fd, id, &rxe_addr)) {
		printf("Bail out! demo id: %s\n", strerror(errno));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < DEMO_IDS; i++) {
		for (k = 0; k < DEMO_GROUPS; k++) {
			g.sin_addr.s_addr = htonl(0xef030000u | i << 8 | (k + 1));
			memcpy(&j.addr, &g, sizeof(g));
			j.id = ids[i];
			j.uid = 0x100 + k;
			joined += CMD(bfd, RDMA_USER_CM_CMD_JOIN_MCAST, j, sizeof(r)) == 0;
		}
	}
	if (join_uid(fd, id, "239.4.0.1", 0xa, &a)) {
		printf("Bail out! JOIN A(239.4.0.1): %s\n", strerror(errno));
		return 1;
	}
	if (join_uid(fd, id, "239.4.0.1", 0xb, &b)) {
		printf("# JOIN B(239.4.0.1) on the same id: %s: the module refuses it, nothing to show\n",
		       strerror(errno));
		return 2;
	}
	if (leave_mc(fd, a)) {
		printf("Bail out! LEAVE A: %s\n", strerror(errno));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* rdma_cm's queue is ordered: A's work runs right after the backlog's. */
	early = demo_fetch(bfd, joined, 0);
	fetched = early + demo_fetch(bfd, joined - early, 1);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	usleep(500000);
	printf("# %d epoll watchers, %d backlog joins, then JOIN A, JOIN B, LEAVE A: %ld ms; %d backlog events were in then, the last of %d %ld ms later\n",
	       watchers, joined, usecs(&t0, &t1) / 1000, early, fetched, usecs(&t1, &t2) / 1000);
	/*
	 * B's join event may be queued (its work ran before LEAVE A cancelled
	 * it); any other event of this file is A's, made from the freed A (or
	 * whatever reuses its memory by now).
	 */
	set_nonblock(fd, 1);
	while (get_event(fd, &ev, sizeof(ev)) == 0) {
		printf("# after LEAVE A: event %u, join id %u, uid %#llx\n", ev.event, ev.id,
		       (unsigned long long)ev.uid);
		if (ev.uid != 0xb)
			uaf = 1;
	}
	printf(uaf ? "# an event of A was delivered after LEAVE A freed A: use-after-free (A was join %u, B %u)\n"
		   : "# no event of A after LEAVE A: its work ran first, nothing shown (A was join %u, B %u)\n",
	       a, b);
	close(fd);
	close(bfd);
	return uaf ? 0 : 2;
}

/*
 * Behaviour users rely on (issue 13 item 11), each case on files of its
 * own: the max_backlog clamp of LISTEN, SIGKILL and SA_RESTART during a
 * blocking GET_EVENT, a forked child holding the file, epoll, and ids
 * created inside a network namespace. Forked children cannot write to an
 * inherited file (the credential check, see ucma_abi.c): a child that
 * must block in GET_EVENT opens a file of its own.
 */
#define MAX_BACKLOG_SYSCTL "/proc/sys/net/rdma_ucm/max_backlog"
#define BACKLOG_CLIENTS 4
/* Nothing answers ARP for it on veth0: its resolve ends in ADDR_ERROR. */
#define UNREACHABLE_IP "192.0.2.99"


static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%ld\n", v) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/*
 * Waits up to 5 s until thread @tid of @pid is in a write(2) to its file
 * descriptor @fd (/proc/PID/task/TID/syscall: write's number, then @fd).
 */
static int wait_in_write(pid_t pid, pid_t tid, int fd)
{
	char path[64], buf[256];
	unsigned long arg0;
	int i, nr;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	for (i = 0; i < 500; i++) {
		f = fopen(path, "r");
		nr = -1;
		if (f) {
			if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%d %lx", &nr, &arg0) != 2)
				nr = -1;
			fclose(f);
		}
		if (nr == SYS_write && arg0 == (unsigned long)fd)
			return 0;
		usleep(10000);
	}
	return -1;
}

/* Reaps @pid if it exits within @ms; -1 if it is still there. */
static int reap_within(pid_t pid, int ms, int *status)
{
	int i;

	for (i = 0; i <= ms / 10; i++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return 0;
		usleep(10000);
	}
	return -1;
}

/*
 * LISTEN clamps its backlog to net.rdma_ucm.max_backlog, and the backlog
 * bounds the unfetched CONNECT_REQUESTs: with max_backlog 2, a listener
 * asked for 100 gets two of four requests. The other two are refused with
 * -ENOMEM, which ib_cm answers with no REJ (the client retries after its
 * ~8 s REQ timeout), so the count is taken well before that.
 */
static void test_max_backlog(void)
{
	struct sockaddr_in a = rxe_addr;
	struct pollfd p = { .events = POLLIN };
	struct rdma_ucm_event_resp ev;
	long old = read_long(MAX_BACKLOG_SYSCTL);
	int fl, fc, i, reqs = 0, others = 0;
	const char *failed = NULL;
	uint32_t l = ~0u, c = ~0u;

	if (old < 0 || write_long(MAX_BACKLOG_SYSCTL, 2)) {
		ktap_result(0, "max_backlog_clamps_listen_backlog", "cannot set %s: %s",
			    MAX_BACKLOG_SYSCTL, strerror(errno));
		return;
	}
	fl = ucma_dev_open();
	fc = ucma_dev_open();
	a.sin_port = htons(7474);
	if (create_id(fl, 0xb1, RDMA_PS_TCP, &l) || bind_ip(fl, l, &a) || listen_id(fl, l, 100))
		failed = "listener";
	for (i = 0; !failed && i < BACKLOG_CLIENTS; i++) {
		if (create_id(fc, 0xc0 + i, RDMA_PS_TCP, &c) || resolve_ip(fc, c, &a) ||
		    wait_event(fc, EV_ADDR_RESOLVED, NULL, 10000) || resolve_route(fc, c) ||
		    wait_event(fc, EV_ROUTE_RESOLVED, NULL, 10000))
			failed = "client route";
		else if (connect_id(fc, c, 0x100 + i))
			failed = "connect";
	}
	if (!failed) {
		p.fd = fl;
		poll(&p, 1, 5000);
		usleep(1500000);
		set_nonblock(fl, 1);
		while (get_event(fl, &ev, sizeof(ev)) == 0) {
			if (ev.event == EV_CONNECT_REQUEST)
				reqs++;
			else
				others++;
		}
	}
	ktap_result(!failed && reqs == 2 && others == 0, "max_backlog_clamps_listen_backlog",
		    "%s: max_backlog 2, LISTEN backlog 100, %d CONNECTs: %d CONNECT_REQUESTs and %d other events, want 2 and 0",
		    failed ? failed : "connected", BACKLOG_CLIENTS, reqs, others);
	close(fc);
	close(fl);
	if (write_long(MAX_BACKLOG_SYSCTL, old) || read_long(MAX_BACKLOG_SYSCTL) != old)
		ktap_result(0, "max_backlog_restored", "could not restore %s to %ld", MAX_BACKLOG_SYSCTL,
			    old);
}

/*
 * A child blocked in GET_EVENT on a file of its own is killed with
 * SIGKILL: it exits at once (the sleep is interruptible), and the file it
 * inherited from the parent, with the parent's id and queued event, is left
 * alone. The child's resolve to an unreachable address ends its wait after
 * 4 s even if the sleep ignored SIGKILL.
 */
static void test_sigkill_get_event(void)
{
	struct sockaddr_in far = ipv4(UNREACHABLE_IP, 0);
	struct rdma_ucm_event_resp ev;
	int fd = ucma_dev_open();
	int blocked, gone, st = 0, ok, own = -1, ready[2];
	uint32_t id = ~0u;
	pid_t pid;

	create_id(fd, 0x51, RDMA_PS_TCP, &id);
	write_user_event(fd, id, EV_USER, 1, 0);
	if (pipe2(ready, O_CLOEXEC)) {
		ktap_result(0, "sigkill_during_get_event_exits_promptly", "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct rdma_ucm_resolve_ip r = { .timeout_ms = 4000 };
		uint32_t cid = ~0u;

		own = ucma_dev_open();
		create_id(own, 0x52, RDMA_PS_TCP, &cid);
		r.id = cid;
		memcpy(&r.dst_addr, &far, sizeof(far));
		CMD(own, RDMA_USER_CM_CMD_RESOLVE_IP, r, 0);
		/* Its next write to @own is GET_EVENT. */
		if (write(ready[1], &own, sizeof(own)) != sizeof(own))
			_exit(2);
		get_event(own, &ev, sizeof(ev));
		_exit(3);
	}
	close(ready[1]);
	blocked = read(ready[0], &own, sizeof(own)) == sizeof(own) && wait_in_write(pid, pid, own) == 0;
	close(ready[0]);
	kill(pid, SIGKILL);
	gone = reap_within(pid, 1500, &st) == 0;
	if (!gone)
		waitpid(pid, &st, 0);
	ktap_result(blocked && gone && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		    "sigkill_during_get_event_exits_promptly",
		    "child %s in GET_EVENT; %s within 1.5 s of SIGKILL (status %#x)",
		    blocked ? "slept" : "never slept", gone ? "exited" : "still there", st);
	set_nonblock(fd, 1);
	memset(&ev, 0, sizeof(ev));
	ok = get_event(fd, &ev, sizeof(ev)) == 0 && ev.id == id && ev.uid == 0x51 && ev.status == 1;
	ok = ok && write_user_event(fd, id, EV_USER, 2, 0) == 0 && get_event(fd, &ev, sizeof(ev)) == 0 &&
	     ev.status == 2 && destroy_id(fd, id, NULL) == 0;
	ktap_result(ok, "sigkill_child_leaves_parent_fd_and_ids",
		    "errno %d: the parent's id %u or its queued event is gone (event %u status %u)", errno,
		    id, ev.event, ev.status);
	close(fd);
}

/* Read only after calls the compiler cannot see through. */
static sig_atomic_t usr1_seen;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_seen++;
}

struct kick {
	pthread_t target;
	pid_t tid;
	int fd;
	uint32_t id;
	int ready;
};

/*
 * Signals the GET_EVENT of @k->tid (its only write to @k->fd once this
 * thread runs), then writes an event 300 ms later.
 */
static void *kick_get_event(void *arg)
{
	struct kick *k = arg;

	k->ready = wait_in_write(getpid(), k->tid, k->fd) == 0;
	pthread_kill(k->target, SIGUSR1);
	usleep(300000);
	write_user_event(k->fd, k->id, EV_USER, 0x5e5, 0);
	return NULL;
}

/*
 * A signal handled during a blocking GET_EVENT: with SA_RESTART the write()
 * is restarted (ERESTARTSYS) and returns the event written after the
 * signal; without, it fails with EINTR and the event stays queued.
 */
static void get_event_signalled(int restart)
{
	const char *name = restart ? "sa_restart_get_event_restarts" : "no_sa_restart_get_event_eintr";
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = restart ? SA_RESTART : 0 };
	struct sigaction old;
	struct kick k = { .target = pthread_self(), .tid = gettid() };
	struct rdma_ucm_event_resp ev;
	pthread_t t;
	long rc;
	int e;

	k.fd = ucma_dev_open();
	create_id(k.fd, 0x5a, RDMA_PS_TCP, &k.id);
	usr1_seen = 0;
	sigaction(SIGUSR1, &sa, &old);
	memset(&ev, 0, sizeof(ev));
	pthread_create(&t, NULL, kick_get_event, &k);
	rc = get_event(k.fd, &ev, sizeof(ev));
	e = errno;
	pthread_join(t, NULL);
	sigaction(SIGUSR1, &old, NULL);
	if (restart) {
		ktap_result(k.ready && usr1_seen == 1 && rc == 0 && ev.id == k.id && ev.status == 0x5e5, name,
			    "slept %d, handler ran %d times; GET_EVENT rc %ld errno %d (%s), event status %#x, want the event written after the signal",
			    k.ready, (int)usr1_seen, rc, e, strerror(e), ev.status);
	} else {
		set_nonblock(k.fd, 1);
		ktap_result(k.ready && usr1_seen == 1 && rc == -1 && e == EINTR &&
				    get_event(k.fd, &ev, sizeof(ev)) == 0 && ev.status == 0x5e5,
			    name, "slept %d, handler ran %d times; GET_EVENT rc %ld errno %d (%s), want EINTR, then the later event queued",
			    k.ready, (int)usr1_seen, rc, e, strerror(e));
	}
	ktap_observe_rc(name, rc, e);
	close(k.fd);
}

static void test_get_event_signals(void)
{
	get_event_signalled(1);
	get_event_signalled(0);
}

/*
 * A forked child shares the parent's file: it sees the parent's queued
 * event, and its close and exit are not the file's release. Only the last
 * close, whichever process makes it, destroys the ids.
 */
static void test_fork(void)
{
	int fd = ucma_dev_open();
	int other = ucma_dev_open();
	struct rdma_ucm_event_resp ev;
	int pipefd[2], st = -1, ok, held;
	uint32_t id = ~0u, id2 = ~0u;
	long first, last;
	pid_t pid;
	char c = 0;

	create_id(fd, 0xf0, RDMA_PS_TCP, &id);
	write_user_event(fd, id, EV_USER, 1, 0);
	pid = fork();
	if (pid == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		ok = poll(&p, 1, 0) == 1 && p.revents == POLLIN;
		close(fd);
		_exit(ok ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	set_nonblock(fd, 1);
	memset(&ev, 0, sizeof(ev));
	ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	ok = ok && get_event(fd, &ev, sizeof(ev)) == 0 && ev.id == id && ev.status == 1;
	ok = ok && write_user_event(fd, id, EV_USER, 2, 0) == 0 && get_event(fd, &ev, sizeof(ev)) == 0 &&
	     ev.status == 2;
	ktap_result(ok, "fork_child_exit_leaves_parent_ids",
		    "child status %#x (0: it saw POLLIN); errno %d: the parent's id %u or its event is gone", st,
		    errno, id);
	close(fd);

	/* The parent closes first: the child's reference keeps the ids. */
	fd = ucma_dev_open();
	create_id(fd, 0xf1, RDMA_PS_TCP, &id2);
	if (pipe2(pipefd, O_CLOEXEC)) {
		ktap_result(0, "fork_last_close_destroys_ids", "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(pipefd[1]);
		held = read(pipefd[0], &c, 1);
		_exit(held < 0);
	}
	close(pipefd[0]);
	close(fd);
	errno = 0;
	first = destroy_id(other, id2, NULL);
	held = errno;
	close(pipefd[1]);
	waitpid(pid, &st, 0);
	errno = 0;
	last = destroy_id(other, id2, NULL);
	ktap_result(first == -1 && held == EINVAL && last == -1 && errno == ENOENT,
		    "fork_last_close_destroys_ids",
		    "id %u after the parent's close: errno %d, want EINVAL (alive, another file's); after the child's exit: errno %d, want ENOENT",
		    id2, held, errno);
	close(other);
}

struct later_event {
	int fd;
	uint32_t id;
};

static void *write_event_later(void *arg)
{
	struct later_event *l = arg;

	usleep(100000);
	write_user_event(l->fd, l->id, EV_USER, 0xe9, 0);
	return NULL;
}

/*
 * epoll, edge-triggered: an epoll_wait() blocked when an event is queued
 * wakes with EPOLLIN; the event, still unfetched, is not reported again;
 * the next event is a new edge.
 */
static void test_epoll(void)
{
	struct epoll_event ee = { .events = EPOLLIN | EPOLLET }, out[2];
	struct later_event l = { .fd = ucma_dev_open() };
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int idle, woke, again, edge;
	pthread_t t;

	create_id(l.fd, 0xe9, RDMA_PS_TCP, &l.id);
	epoll_ctl(ep, EPOLL_CTL_ADD, l.fd, &ee);
	idle = epoll_wait(ep, out, 2, 0);
	pthread_create(&t, NULL, write_event_later, &l);
	memset(out, 0, sizeof(out));
	woke = epoll_wait(ep, out, 2, 3000);
	pthread_join(t, NULL);
	woke = woke == 1 && out[0].events == EPOLLIN ? 1 : -woke;
	again = epoll_wait(ep, out, 2, 0);
	write_user_event(l.fd, l.id, EV_USER, 0xea, 0);
	memset(out, 0, sizeof(out));
	edge = epoll_wait(ep, out, 2, 1000);
	edge = edge == 1 && out[0].events == EPOLLIN ? 1 : -edge;
	ktap_result(idle == 0 && woke == 1 && again == 0 && edge == 1, "epoll_et_pollin_once_per_event",
		    "epoll_wait: idle %d (want 0), woken by an event %d (want 1), again %d (want 0), next event %d (want 1)",
		    idle, woke, again, edge);
	close(ep);
	close(l.fd);
}

struct netns_result {
	int unshared;
	long host_bind_in_ns, host_bind_in_init;
	int host_bind_errno;
	long port_init, port_ns;
	int port_errno;
};

/*
 * rdma_create_user_id() puts an id in its creator's network namespace. A
 * child creates two ids, unshares its network namespace, and creates two
 * more: the new ones cannot bind the rxe address (EADDRNOTAVAIL: no
 * netdev of that namespace has it) while one made before can, and their
 * port space is the new namespace's (the same port bound in both).
 */
static void test_netns(void)
{
	struct netns_result *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct sockaddr_in any = ipv4("0.0.0.0", 7481);
	int st = -1;
	pid_t pid;

	if (r == MAP_FAILED) {
		ktap_result(0, "netns_id_cannot_bind_host_address", "mmap: %s", strerror(errno));
		return;
	}
	memset(r, 0, sizeof(*r));
	r->host_bind_in_ns = r->port_ns = 99;
	pid = fork();
	if (pid == 0) {
		int fd = ucma_dev_open();
		uint32_t init_a = ~0u, init_b = ~0u, ns_a = ~0u, ns_b = ~0u;

		create_id(fd, 0x4e1, RDMA_PS_TCP, &init_a);
		create_id(fd, 0x4e2, RDMA_PS_TCP, &init_b);
		r->unshared = unshare(CLONE_NEWNET) == 0;
		if (!r->unshared)
			_exit(1);
		create_id(fd, 0x4e3, RDMA_PS_TCP, &ns_a);
		create_id(fd, 0x4e4, RDMA_PS_TCP, &ns_b);
		r->host_bind_in_ns = bind_ip(fd, ns_a, &rxe_addr);
		r->host_bind_errno = errno;
		r->host_bind_in_init = bind_ip(fd, init_a, &rxe_addr);
		r->port_init = bind_ip(fd, init_b, &any);
		r->port_ns = bind_ip(fd, ns_b, &any);
		r->port_errno = errno;
		close(fd);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	ktap_result(r->unshared && r->host_bind_in_ns == -1 && r->host_bind_errno == EADDRNOTAVAIL &&
			    r->host_bind_in_init == 0,
		    "netns_id_cannot_bind_host_address",
		    "unshare %d; BIND_IP %s from an id made in the new netns: rc %ld errno %d (%s), want EADDRNOTAVAIL; from one made before: rc %ld, want 0",
		    r->unshared, inet_ntoa(rxe_addr.sin_addr), r->host_bind_in_ns, r->host_bind_errno,
		    strerror(r->host_bind_errno), r->host_bind_in_init);
	ktap_observe_rc("netns_id_cannot_bind_host_address", r->host_bind_in_ns, r->host_bind_errno);
	ktap_result(r->unshared && r->port_init == 0 && r->port_ns == 0, "netns_port_space_per_namespace",
		    "unshare %d; 0.0.0.0:7481 bound by an id of the initial netns: rc %ld; then by one of the new netns: rc %ld errno %d (%s), want 0 and 0",
		    r->unshared, r->port_init, r->port_ns, r->port_errno, strerror(r->port_errno));
	munmap(r, sizeof(*r));
}

static void test_relied_on(void)
{
	test_max_backlog();
	test_sigkill_get_event();
	test_get_event_signals();
	test_fork();
	test_epoll();
	test_netns();
}

/*
 * /proc/<pid>/fdinfo/<fd> of an rdma_cm file (ucma_rs only; the C module
 * prints the kernel's generic lines and nothing else): one "key:\tvalue"
 * line per count below, then one "rdma_cm_listener:\t<id> backlog
 * <used>/<limit>" line per listening id, in creation order.
 */
#define FDINFO_MAX_LISTENERS 4
#define FDINFO_MISSING -1
#define FDINFO_REPEATED -2
#define FDINFO_MALFORMED -3

struct fdinfo_listener {
	uint32_t id;
	long used, limit;
};

struct fdinfo {
	long ids, idle, bound, addr_resolved, route_resolved, listening, connecting, connected;
	long disconnected, device_removed, queued, delivered, mcast_joins;
	int listeners;
	struct fdinfo_listener listener[FDINFO_MAX_LISTENERS];
};

static const struct {
	const char *key;
	size_t off;
} fdinfo_keys[] = {
	{ "rdma_cm_ids", offsetof(struct fdinfo, ids) },
	{ "rdma_cm_ids_idle", offsetof(struct fdinfo, idle) },
	{ "rdma_cm_ids_bound", offsetof(struct fdinfo, bound) },
	{ "rdma_cm_ids_addr_resolved", offsetof(struct fdinfo, addr_resolved) },
	{ "rdma_cm_ids_route_resolved", offsetof(struct fdinfo, route_resolved) },
	{ "rdma_cm_ids_listening", offsetof(struct fdinfo, listening) },
	{ "rdma_cm_ids_connecting", offsetof(struct fdinfo, connecting) },
	{ "rdma_cm_ids_connected", offsetof(struct fdinfo, connected) },
	{ "rdma_cm_ids_disconnected", offsetof(struct fdinfo, disconnected) },
	{ "rdma_cm_ids_device_removed", offsetof(struct fdinfo, device_removed) },
	{ "rdma_cm_events_queued", offsetof(struct fdinfo, queued) },
	{ "rdma_cm_events_delivered", offsetof(struct fdinfo, delivered) },
	{ "rdma_cm_mcast_joins", offsetof(struct fdinfo, mcast_joins) },
};

static long *fdinfo_field(struct fdinfo *fi, unsigned int k)
{
	return (long *)((char *)fi + fdinfo_keys[k].off);
}

static long fdinfo_value(const struct fdinfo *fi, unsigned int k)
{
	return *(const long *)((const char *)fi + fdinfo_keys[k].off);
}

/* One line of fdinfo ("key:\tvalue\n") into @fi; other keys are left alone. */
static void fdinfo_parse_line(struct fdinfo *fi, char *line)
{
	char *colon = strchr(line, ':'), *end;
	struct fdinfo_listener *ls;
	unsigned int k;
	long *v, n;
	int len = 0;

	if (!colon)
		return;
	*colon = '\0';
	if (!strcmp(line, "rdma_cm_listener")) {
		if (fi->listeners++ >= FDINFO_MAX_LISTENERS)
			return;
		ls = &fi->listener[fi->listeners - 1];
		if (colon[1] != '\t' || sscanf(colon + 2, "%u backlog %ld/%ld%n", &ls->id,
						&ls->used, &ls->limit, &len) != 3 ||
		    (colon[2 + len] != '\n' && colon[2 + len]))
			ls->used = ls->limit = FDINFO_MALFORMED;
		return;
	}
	for (k = 0; k < ARRAY_SIZE(fdinfo_keys); k++) {
		if (strcmp(line, fdinfo_keys[k].key))
			continue;
		v = fdinfo_field(fi, k);
		if (*v != FDINFO_MISSING) {
			*v = FDINFO_REPEATED;
			return;
		}
		*v = FDINFO_MALFORMED;
		if (colon[1] != '\t')
			return;
		errno = 0;
		n = strtol(colon + 2, &end, 10);
		if (end != colon + 2 && (*end == '\n' || !*end) && !errno && n >= 0)
			*v = n;
	}
}

/* Reads /proc/self/fdinfo/@fd into @fi; -1 (errno set) if it cannot be read. */
static int read_fdinfo(int fd, struct fdinfo *fi)
{
	char path[64], line[256];
	unsigned int k;
	FILE *f;

	memset(fi, 0, sizeof(*fi));
	for (k = 0; k < ARRAY_SIZE(fdinfo_keys); k++)
		*fdinfo_field(fi, k) = FDINFO_MISSING;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		fdinfo_parse_line(fi, line);
	fclose(f);
	return 0;
}

static const char *fdinfo_got(long v, char *buf, size_t len)
{
	if (v == FDINFO_MISSING)
		return "no line";
	if (v == FDINFO_REPEATED)
		return "two lines";
	if (v == FDINFO_MALFORMED)
		return "a malformed line";
	snprintf(buf, len, "%ld", v);
	return buf;
}

/*
 * The first difference between the fdinfo of file @what (@fd) and @want,
 * written to @msg; 0 if there is none.
 */
static int fdinfo_differs(const char *what, int fd, const struct fdinfo *want, char *msg,
			  size_t len)
{
	const struct fdinfo_listener *g, *w;
	struct fdinfo got;
	unsigned int k;
	char buf[32];
	int i;

	if (read_fdinfo(fd, &got)) {
		snprintf(msg, len, "%s: /proc/self/fdinfo/%d: %s", what, fd, strerror(errno));
		return 1;
	}
	for (k = 0; k < ARRAY_SIZE(fdinfo_keys); k++) {
		if (fdinfo_value(&got, k) != fdinfo_value(want, k)) {
			snprintf(msg, len, "%s: %s: got %s, want %ld", what, fdinfo_keys[k].key,
				 fdinfo_got(fdinfo_value(&got, k), buf, sizeof(buf)),
				 fdinfo_value(want, k));
			return 1;
		}
	}
	if (got.listeners != want->listeners) {
		snprintf(msg, len, "%s: rdma_cm_listener: got %d lines, want %d", what,
			 got.listeners, want->listeners);
		return 1;
	}
	for (i = 0; i < want->listeners && i < FDINFO_MAX_LISTENERS; i++) {
		g = &got.listener[i];
		w = &want->listener[i];
		if (g->used == FDINFO_MALFORMED) {
			snprintf(msg, len, "%s: rdma_cm_listener %d: got a malformed line", what,
				 i + 1);
			return 1;
		}
		if (g->id != w->id || g->used != w->used || g->limit != w->limit) {
			snprintf(msg, len,
				 "%s: rdma_cm_listener %d: got %u backlog %ld/%ld, want %u backlog %ld/%ld",
				 what, i + 1, g->id, g->used, g->limit, w->id, w->used, w->limit);
			return 1;
		}
	}
	return 0;
}

struct fdinfo_check {
	const char *what;
	int fd;
	const struct fdinfo *want;
};

/*
 * One case: every count of every file in @checks as wanted, unless the
 * workload failed at step @failed (errno @err). ucma_rs only (the C run
 * skips the case), so it stays out of the differential log.
 */
static void fdinfo_case(const char *name, const char *failed, int err,
			const struct fdinfo_check *checks, unsigned int n)
{
	char msg[256] = "";
	unsigned int i;
	FILE *obs;
	int bad = 0;

	if (failed) {
		snprintf(msg, sizeof(msg), "workload: %s: errno %d (%s)", failed, err,
			 strerror(err));
		bad = 1;
	}
	for (i = 0; !bad && i < n; i++)
		bad = fdinfo_differs(checks[i].what, checks[i].fd, checks[i].want, msg,
				     sizeof(msg));
	obs = ktap_obs_file();
	ktap_obs = NULL;
	ktap_result(!bad, name, "%s", msg);
	ktap_obs = obs;
}

/* The workload's failed step, with errno kept for fdinfo_case(). */
static const char *fdinfo_fail(const char *step, int *err)
{
	*err = errno;
	return step;
}

/* The next event of @fd within 10 s, which must be of @type (else EPROTO). */
static long fdinfo_event(int fd, uint32_t type)
{
	struct rdma_ucm_event_resp ev;

	memset(&ev, 0, sizeof(ev));
	if (next_event(fd, &ev, 10000))
		return -1;
	if (ev.event != type) {
		printf("# fdinfo: event %u (status %d), want %u\n", ev.event, ev.status, type);
		errno = EPROTO;
		return -1;
	}
	return 0;
}

/* An RC id on @fd with its address and route resolved to @dst: two events fetched. */
static const char *fdinfo_client(int fd, const struct sockaddr_in *dst, uint64_t uid,
				 uint32_t *id, int *err)
{
	if (create_id(fd, uid, RDMA_PS_TCP, id))
		return fdinfo_fail("G: create client", err);
	if (resolve_ip(fd, *id, dst) || fdinfo_event(fd, EV_ADDR_RESOLVED))
		return fdinfo_fail("G: resolve address", err);
	if (resolve_route(fd, *id) || fdinfo_event(fd, EV_ROUTE_RESOLVED))
		return fdinfo_fail("G: resolve route", err);
	return NULL;
}

/*
 * Waits up to @ms for the first event of @fd (poll), then up to @ms more
 * until fdinfo counts @n queued, none fetched.
 */
static int fdinfo_wait_queued(int fd, long n, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct fdinfo fi;

	if (poll(&p, 1, ms) != 1)
		ms = 0;
	for (; ms > 0; ms -= 20) {
		if (read_fdinfo(fd, &fi) == 0 && fi.queued >= n)
			return 0;
		usleep(20000);
	}
	errno = ETIMEDOUT;
	return -1;
}

/*
 * Every count of the fdinfo, step by step, over a known workload on three
 * fresh files over rxe: H (one idle id, one UD id bound to rxe), F (a
 * listener on rxe:7476, backlog 5) and G (three RC clients of F), and a
 * fourth, M, that MIGRATE_ID moves ids to.
 * The UD id joins its groups while only bound (as mcast_same_address does:
 * rdma_cm takes a join on a bound id), and a join changes no state, so it
 * is counted bound throughout. Until step 6 nobody answers the CONNECTs:
 * the clients and the listener's new ids stay connecting (a request that
 * reached the listener is answered with MRAs, so no client times out while
 * the group runs). Steps 6 and 7 accept one request (connected on both
 * sides) and reject another (disconnected on both sides); the third stays
 * connecting. Nobody disconnects, so no DISCONNECTED or TIMEWAIT_EXIT comes.
 * Its results stay out of the differential log (see fdinfo_case()).
 */
static void test_fdinfo(void)
{
	static const char *const names[] = {
		"fdinfo_resolved", "fdinfo_requests_queued", "fdinfo_request_fetched",
		"fdinfo_joins", "fdinfo_leave", "fdinfo_established", "fdinfo_rejected",
		"fdinfo_migrated", "fdinfo_fresh_file_zero",
	};
	const char *mod = getenv("UCMA_MODULE");
	struct sockaddr_in a = rxe_addr, g10 = ipv4("239.1.2.10", 0), g11 = ipv4("239.1.2.11", 0);
	struct fdinfo want_f3, want_g3;
	uint32_t idle = ~0u, ud = ~0u, l = ~0u, c[3] = { ~0u, ~0u, ~0u }, mc10 = ~0u, mc11 = ~0u;
	uint32_t child = ~0u;
	struct rdma_ucm_event_resp ev;
	const char *failed = NULL;
	long old_max = read_long(MAX_BACKLOG_SYSCTL);
	unsigned int i;
	int h, f, g, m = -1, z, err = 0;

	if ((mod && !strcmp(mod, "c")) || c_module_loaded()) {
		for (i = 0; i < ARRAY_SIZE(names); i++)
			ktap_skipped(names[i], "C module: no rdma_cm fdinfo");
		return;
	}
	/*
	 * The backlog's limit is LISTEN's 5 only under a larger max_backlog
	 * (the fuzzer leaves it random): 1024, the default, for the group.
	 */
	if (old_max < 0 || write_long(MAX_BACKLOG_SYSCTL, 1024))
		failed = fdinfo_fail("set " MAX_BACKLOG_SYSCTL " to 1024", &err);
	a.sin_port = htons(7476);
	h = ucma_dev_open();
	f = ucma_dev_open();
	g = ucma_dev_open();
	if (!failed && (h < 0 || f < 0 || g < 0))
		failed = fdinfo_fail("open " UCMA_DEV, &err);

	/* 1: H idle and bound; F listening; G's three clients route resolved. */
	if (!failed && (create_id(h, 0xf1, RDMA_PS_TCP, &idle) ||
			create_id(h, 0xf2, RDMA_PS_UDP, &ud) || bind_ip(h, ud, &rxe_addr)))
		failed = fdinfo_fail("H: idle id and bound UD id", &err);
	if (!failed && (create_id(f, 0xf3, RDMA_PS_TCP, &l) || bind_ip(f, l, &a) ||
			listen_id(f, l, 5)))
		failed = fdinfo_fail("F: listener on rxe:7476, backlog 5", &err);
	for (i = 0; !failed && i < 3; i++)
		failed = fdinfo_client(g, &a, 0xf4 + i, &c[i], &err);
	{
		const struct fdinfo want_g = {
			.ids = 3, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 3,
			.listening = 0, .connecting = 0, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 0, .delivered = 6, .mcast_joins = 0,
			.listeners = 0,
		};
		const struct fdinfo want_f = {
			.ids = 1, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
			.listening = 1, .connecting = 0, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 0, .delivered = 0, .mcast_joins = 0,
			.listeners = 1, .listener[0] = { .id = l, .used = 0, .limit = 5 },
		};
		const struct fdinfo want_h = {
			.ids = 2, .idle = 1, .bound = 1, .addr_resolved = 0, .route_resolved = 0,
			.listening = 0, .connecting = 0, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 0, .delivered = 0, .mcast_joins = 0,
			.listeners = 0,
		};
		const struct fdinfo_check checks[] = {
			{ "G", g, &want_g }, { "F", f, &want_f }, { "H", h, &want_h },
		};

		fdinfo_case("fdinfo_resolved", failed, err, checks, ARRAY_SIZE(checks));
	}

	/* 2: G connects; F has three CONNECT_REQUESTs queued, not fetched. */
	for (i = 0; !failed && i < 3; i++)
		if (connect_id(g, c[i], 0x300 + i))
			failed = fdinfo_fail("G: connect", &err);
	if (!failed && fdinfo_wait_queued(f, 3, 10000))
		failed = fdinfo_fail("F: three events queued within 10 s", &err);
	{
		const struct fdinfo want_f = {
			.ids = 4, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
			.listening = 1, .connecting = 3, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 3, .delivered = 0, .mcast_joins = 0,
			.listeners = 1, .listener[0] = { .id = l, .used = 3, .limit = 5 },
		};
		const struct fdinfo want_g = {
			.ids = 3, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
			.listening = 0, .connecting = 3, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 0, .delivered = 6, .mcast_joins = 0,
			.listeners = 0,
		};
		const struct fdinfo want_h = {
			.ids = 2, .idle = 1, .bound = 1, .addr_resolved = 0, .route_resolved = 0,
			.listening = 0, .connecting = 0, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 0, .delivered = 0, .mcast_joins = 0,
			.listeners = 0,
		};
		const struct fdinfo_check checks[] = {
			{ "F", f, &want_f }, { "G", g, &want_g }, { "H", h, &want_h },
		};

		fdinfo_case("fdinfo_requests_queued", failed, err, checks, ARRAY_SIZE(checks));
	}

	/* 3: F fetches one CONNECT_REQUEST: its backlog slot is free again. */
	memset(&ev, 0, sizeof(ev));
	if (!failed && (next_event(f, &ev, 10000) || ev.event != EV_CONNECT_REQUEST))
		failed = fdinfo_fail("F: GET_EVENT of a CONNECT_REQUEST", &err);
	child = ev.id;
	/* F and G from here on: no other command reaches them before they are closed. */
	want_f3 = (struct fdinfo){
		.ids = 4, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
		.listening = 1, .connecting = 3, .connected = 0, .disconnected = 0,
		.device_removed = 0, .queued = 2, .delivered = 1, .mcast_joins = 0,
		.listeners = 1, .listener[0] = { .id = l, .used = 2, .limit = 5 },
	};
	want_g3 = (struct fdinfo){
		.ids = 3, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
		.listening = 0, .connecting = 3, .connected = 0, .disconnected = 0,
		.device_removed = 0, .queued = 0, .delivered = 6, .mcast_joins = 0,
		.listeners = 0,
	};
	{
		const struct fdinfo want_h = {
			.ids = 2, .idle = 1, .bound = 1, .addr_resolved = 0, .route_resolved = 0,
			.listening = 0, .connecting = 0, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 0, .delivered = 0, .mcast_joins = 0,
			.listeners = 0,
		};
		const struct fdinfo_check checks[] = {
			{ "F", f, &want_f3 }, { "G", g, &want_g3 }, { "H", h, &want_h },
		};

		fdinfo_case("fdinfo_request_fetched", failed, err, checks, ARRAY_SIZE(checks));
	}

	/* 4: H's bound UD id joins two groups; both MULTICAST_JOINs fetched. */
	if (!failed && (join_ip(h, ud, &g10, &mc10) || join_ip(h, ud, &g11, &mc11)))
		failed = fdinfo_fail("H: JOIN_IP_MCAST 239.1.2.10 and 239.1.2.11", &err);
	if (!failed && (fdinfo_event(h, EV_MULTICAST_JOIN) || fdinfo_event(h, EV_MULTICAST_JOIN)))
		failed = fdinfo_fail("H: two MULTICAST_JOIN events", &err);
	{
		const struct fdinfo want_h = {
			.ids = 2, .idle = 1, .bound = 1, .addr_resolved = 0, .route_resolved = 0,
			.listening = 0, .connecting = 0, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 0, .delivered = 2, .mcast_joins = 2,
			.listeners = 0,
		};
		const struct fdinfo_check checks[] = {
			{ "H", h, &want_h }, { "F", f, &want_f3 }, { "G", g, &want_g3 },
		};

		fdinfo_case("fdinfo_joins", failed, err, checks, ARRAY_SIZE(checks));
	}

	/* LEAVE of one: one join left. */
	if (!failed && leave_mc(h, mc10))
		failed = fdinfo_fail("H: LEAVE_MCAST 239.1.2.10", &err);
	{
		const struct fdinfo want_h = {
			.ids = 2, .idle = 1, .bound = 1, .addr_resolved = 0, .route_resolved = 0,
			.listening = 0, .connecting = 0, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 0, .delivered = 2, .mcast_joins = 1,
			.listeners = 0,
		};
		const struct fdinfo_check checks[] = {
			{ "H", h, &want_h }, { "F", f, &want_f3 }, { "G", g, &want_g3 },
		};

		fdinfo_case("fdinfo_leave", failed, err, checks, ARRAY_SIZE(checks));
	}

	/*
	 * 6: a connection: F accepts the fetched request (a fake QP number, as
	 * the clients'), G's client gets CONNECT_RESPONSE (no kernel QP) and
	 * sends the RTU (ACCEPT without parameters: connected on G), and F's new
	 * id gets ESTABLISHED (connected on F, the event queued behind the two
	 * requests). Neither side gets another event: nobody disconnects.
	 */
	if (!failed) {
		struct rdma_ucm_accept acc = { .uid = 0xf8, .id = child };

		acc.conn_param.valid = 1;
		acc.conn_param.qp_num = 0x310;
		acc.conn_param.responder_resources = 1;
		acc.conn_param.initiator_depth = 1;
		if (CMD(f, RDMA_USER_CM_CMD_ACCEPT, acc, 0))
			failed = fdinfo_fail("F: ACCEPT of the fetched request", &err);
	}
	memset(&ev, 0, sizeof(ev));
	if (!failed && (next_event(g, &ev, 10000) || ev.event != EV_CONNECT_RESPONSE))
		failed = fdinfo_fail("G: CONNECT_RESPONSE", &err);
	if (!failed) {
		struct rdma_ucm_accept rtu = { .id = ev.id };

		if (CMD(g, RDMA_USER_CM_CMD_ACCEPT, rtu, 0))
			failed = fdinfo_fail("G: ACCEPT without parameters (the RTU)", &err);
	}
	if (!failed && fdinfo_wait_queued(f, 3, 10000))
		failed = fdinfo_fail("F: ESTABLISHED queued within 10 s", &err);
	{
		const struct fdinfo want_f = {
			.ids = 4, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
			.listening = 1, .connecting = 2, .connected = 1, .disconnected = 0,
			.device_removed = 0, .queued = 3, .delivered = 1, .mcast_joins = 0,
			.listeners = 1, .listener[0] = { .id = l, .used = 2, .limit = 5 },
		};
		const struct fdinfo want_g = {
			.ids = 3, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
			.listening = 0, .connecting = 2, .connected = 1, .disconnected = 0,
			.device_removed = 0, .queued = 0, .delivered = 7, .mcast_joins = 0,
			.listeners = 0,
		};
		const struct fdinfo_check checks[] = { { "F", f, &want_f }, { "G", g, &want_g } };

		fdinfo_case("fdinfo_established", failed, err, checks, ARRAY_SIZE(checks));
	}

	/*
	 * 7: F fetches the next request and REJECTs it (disconnected on F; its
	 * client gets REJECTED, disconnected on G, the event left queued). A
	 * DISCONNECT on the listener, whatever rdma_cm answers, leaves it
	 * listening.
	 */
	memset(&ev, 0, sizeof(ev));
	if (!failed && (next_event(f, &ev, 10000) || ev.event != EV_CONNECT_REQUEST))
		failed = fdinfo_fail("F: GET_EVENT of the second CONNECT_REQUEST", &err);
	if (!failed) {
		struct rdma_ucm_reject rej = { .id = ev.id };

		if (CMD(f, RDMA_USER_CM_CMD_REJECT, rej, 0))
			failed = fdinfo_fail("F: REJECT of the second request", &err);
	}
	if (!failed) {
		struct rdma_ucm_disconnect d = { .id = l };

		(void)CMD(f, RDMA_USER_CM_CMD_DISCONNECT, d, 0);
	}
	if (!failed && fdinfo_wait_queued(g, 1, 10000))
		failed = fdinfo_fail("G: REJECTED queued within 10 s", &err);
	{
		const struct fdinfo want_f = {
			.ids = 4, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
			.listening = 1, .connecting = 1, .connected = 1, .disconnected = 1,
			.device_removed = 0, .queued = 2, .delivered = 2, .mcast_joins = 0,
			.listeners = 1, .listener[0] = { .id = l, .used = 1, .limit = 5 },
		};
		const struct fdinfo want_g = {
			.ids = 3, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
			.listening = 0, .connecting = 1, .connected = 1, .disconnected = 1,
			.device_removed = 0, .queued = 1, .delivered = 7, .mcast_joins = 0,
			.listeners = 0,
		};
		const struct fdinfo_check checks[] = { { "F", f, &want_f }, { "G", g, &want_g } };

		fdinfo_case("fdinfo_rejected", failed, err, checks, ARRAY_SIZE(checks));
	}

	/*
	 * 8: MIGRATE_ID moves F's listener (its queued CONNECT_REQUEST with it)
	 * and H's bound UD id (its one join with it) to a fresh file M: their
	 * states, joins and the listener's line go to M; the events delivered
	 * stay with the file that delivered them.
	 */
	m = ucma_dev_open();
	if (!failed && m < 0)
		failed = fdinfo_fail("open " UCMA_DEV " for M", &err);
	if (!failed && (migrate_id(m, l, f) < 0 || migrate_id(m, ud, h) < 0))
		failed = fdinfo_fail("M: MIGRATE_ID of F's listener and H's UD id", &err);
	{
		const struct fdinfo want_m = {
			.ids = 2, .idle = 0, .bound = 1, .addr_resolved = 0, .route_resolved = 0,
			.listening = 1, .connecting = 0, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 1, .delivered = 0, .mcast_joins = 1,
			.listeners = 1, .listener[0] = { .id = l, .used = 1, .limit = 5 },
		};
		const struct fdinfo want_f = {
			.ids = 3, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
			.listening = 0, .connecting = 1, .connected = 1, .disconnected = 1,
			.device_removed = 0, .queued = 1, .delivered = 2, .mcast_joins = 0,
			.listeners = 0,
		};
		const struct fdinfo want_h = {
			.ids = 1, .idle = 1, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
			.listening = 0, .connecting = 0, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 0, .delivered = 2, .mcast_joins = 0,
			.listeners = 0,
		};
		const struct fdinfo_check checks[] = {
			{ "M", m, &want_m }, { "F", f, &want_f }, { "H", h, &want_h },
		};

		fdinfo_case("fdinfo_migrated", failed, err, checks, ARRAY_SIZE(checks));
	}

	/* 9: the last close of each file destroys its ids; a fresh file counts nothing. */
	if (m >= 0)
		close(m);
	close(f);
	close(g);
	close(h);
	z = ucma_dev_open();
	if (z < 0)
		failed = fdinfo_fail("open " UCMA_DEV " again", &err);
	{
		const struct fdinfo want_z = {
			.ids = 0, .idle = 0, .bound = 0, .addr_resolved = 0, .route_resolved = 0,
			.listening = 0, .connecting = 0, .connected = 0, .disconnected = 0,
			.device_removed = 0, .queued = 0, .delivered = 0, .mcast_joins = 0,
			.listeners = 0,
		};
		const struct fdinfo_check checks[] = { { "fresh file", z, &want_z } };

		/* Only this file's own failure counts here: the others were closed. */
		fdinfo_case("fdinfo_fresh_file_zero", z < 0 ? failed : NULL, err, checks,
			    ARRAY_SIZE(checks));
	}
	if (z >= 0)
		close(z);
	if (old_max >= 0)
		write_long(MAX_BACKLOG_SYSCTL, old_max);
}

/*
 * The groups, each in a process of its own (kselftest_harness.h), with its
 * number of cases (the plan of its subtest: a case added to a group must
 * be counted here) and its timeout: three times its longest run on the
 * debug kernel.
 */
TEST_F_TIMEOUT(cmds, create_destroy, 30)
{
	ktap_header(10);
	test_create_destroy(&self->f);
}

TEST_F_TIMEOUT(cmds, events, 30)
{
	ktap_header(20);
	test_events(&self->f);
}

TEST_F_TIMEOUT(cmds, signal, 30)
{
	ktap_header(1);
	test_signal(&self->f);
}

TEST_F_TIMEOUT(cmds, epoll_exclusive, 30)
{
	ktap_header(1);
	test_epoll_exclusive(&self->f);
}

TEST_F_TIMEOUT(cmds, addressing, 30)
{
	ktap_header(45);
	test_addressing(&self->f);
}

TEST_F_TIMEOUT(cmds, zombie, 75)
{
	ktap_header(8);
	test_zombie(&self->f);
}

TEST_F_TIMEOUT(cmds, ece, 30)
{
	ktap_header(4);
	test_ece();
}

TEST_F_TIMEOUT(cmds, migrate_same_file, 30)
{
	ktap_header(1);
	test_migrate_same_file();
}

TEST_F_TIMEOUT(cmds, migrated_listener_close, 45)
{
	ktap_header(1);
	test_migrated_listener_close();
}

TEST_F_TIMEOUT(cmds, layout, 30)
{
	ktap_header(1);
	test_connect_request_layout();
}

TEST_F_TIMEOUT(cmds, spare_event_param, 30)
{
	ktap_header(1);
	test_spare_event_param();
}

TEST_F_TIMEOUT(cmds, query_ib_service, 30)
{
	ktap_header(3);
	test_query_ib_service(&self->f);
}

TEST_F_TIMEOUT(cmds, mcast_same_address, 30)
{
	ktap_header(1);
	test_mcast_same_address();
}

TEST_F_TIMEOUT(cmds, close_frees_joins, 30)
{
	ktap_header(1);
	test_close_frees_joins();
}

TEST_F_TIMEOUT(cmds, relied_on, 30)
{
	ktap_header(10);
	test_relied_on();
}

TEST_F_TIMEOUT(cmds, fdinfo, 30)
{
	ktap_header(9);
	test_fdinfo();
}

static void cmds_init(void)
{
	rxe_addr = ucma_env.rxe;
	bad_ptr = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bad_ptr == MAP_FAILED)
		ucma_bail_out("mmap: %s", strerror(errno));
}

/*
 * Usage: ucma_cmds [GROUP...]: runs every group of cases, or those whose
 * name contains a GROUP. ucma_cmds --c-uaf-demo: see c_uaf_demo().
 */
int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && !strcmp(argv[1], "--c-uaf-demo")) {
		ucma_setup(UCMA_NEED_RXE);
		rxe_addr = ucma_env.rxe;
		return c_uaf_demo();
	}
	return harness_main(argc, argv, UCMA_NEED_RXE, cmds_init);
}
