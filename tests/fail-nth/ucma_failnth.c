// SPDX-License-Identifier: GPL-2.0
/*
 * fail-nth sweep of every uCMA command, in one state each (and QUERY and
 * SET_OPTION with several options). For each path, a scenario sets
 * up what the command needs (no fault), then runs the command with
 * /proc/thread-self/fail-nth = n, for n = 1, 2, ... until a run finishes
 * without reaching its n-th fault point. The points are every failslab,
 * fail_page_alloc and fail_usercopy site the syscall reaches, in ucma and in
 * the rdma_cm core below it. Each faulted run must return a plain errno
 * (1..133), or success only if the fault it took was one that the kernel
 * absorbs (see sweep()), and must leave nothing behind: after the files
 * are closed, the ids from the one the first context got are all free
 * again (ids are allocated lowest-free). kmemleak and the splat gate of
 * scripts/guest-init check the rest. Needs the debug kernel
 * (FAULT_INJECTION_DEBUG_FS) and RXE_IP; prints KTAP, one case per path,
 * and the number of injection points it hit. On the kernel's
 * kselftest_harness.h (tests/lib/harness.h): each path is a variant of the
 * fixture, "failnth.PATH.sweep", run in a process of its own (which opens
 * its own /proc/thread-self/fail-nth) under the sweep's timeout.
 * "ucma_failnth WORD" runs the paths whose name contains WORD.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "harness.h"
#include "kmsg.h"
#include "ucma_cmd.h"

#define MAX_POINTS 2000

/*
 * Context ids a run can take: a scenario's two files hold at most four
 * (listener, client, the request's child, the id CREATE_ID makes) on top
 * of the highest id handed out so far (ids_to_probe()); 16 covers them.
 */
#define ID_PROBE_MARGIN 16

static struct sockaddr_in rxe;
/* The first free id at the start. */
static uint32_t base_id;

/*
 * What the paths share, each run in a process of its own: the next port
 * (every setup binds a new one, across the whole run) and the totals
 * printed at the end. MAP_SHARED, mapped before the harness forks.
 */
static struct failnth_run {
	uint16_t next_port;
	unsigned int paths, points;
} *run;

/* What a scenario set up: two files and the ids on them. */
struct setup {
	int fd, fd2;
	uint32_t id, peer, child, mc;
	uint16_t port;
};

static void arm(int nth_fd, unsigned int n)
{
	char b[16];
	int len = snprintf(b, sizeof(b), "%u", n);

	if (pwrite(nth_fd, b, len, 0) != len)
		printf("# fail-nth write: %s\n", strerror(errno));
}

/*
 * Disarms; returns 1 if the armed fault was injected. Reading and writing
 * fail-nth copy to and from user space, which are fault sites themselves:
 * a count still armed is decremented by the read (whose copy fails if it
 * reaches 0: then the target did not consume the fault), and the write of
 * 0 either succeeds or consumes the last count. Either way it ends at 0.
 */
static int disarm(int nth_fd)
{
	char b[16] = "";
	ssize_t n = pread(nth_fd, b, sizeof(b) - 1, 0);
	int injected = n > 0 && b[0] == '0';

	if (n < 0 && errno != EFAULT)
		printf("# fail-nth read: %s\n", strerror(errno));
	if (pwrite(nth_fd, "0", 1, 0) != 1 && errno != EFAULT)
		printf("# fail-nth write: %s\n", strerror(errno));
	return injected;
}

/* One setup step: reports which one failed. */
#define STEP(x) (step_failed(#x, (x)))
static int step_failed(const char *what, long r)
{
	if (r)
		printf("# setup step failed: %s: %s\n", what, strerror(errno));
	return r != 0;
}

/* --- setups: each returns 0 when the state the command needs is reached. --- */

static int s_files(struct setup *s)
{
	s->fd = ucma_dev_open();
	s->fd2 = ucma_dev_open();
	s->port = run->next_port++;
	if (run->next_port > 100000)
		run->next_port = 20000;
	return STEP(s->fd < 0) ||
	       STEP(s->fd2 < 0 ? -1 : 0);
}

static int s_id(struct setup *s)
{
	return s_files(s) ||
	       STEP(create_id(s->fd, 7, RDMA_PS_TCP, &s->id));
}

static int s_ud_id(struct setup *s)
{
	return s_files(s) ||
	       STEP(create_id(s->fd, 7, RDMA_PS_UDP, &s->id));
}

static int s_bound(struct setup *s)
{
	struct sockaddr_in a = rxe;

	if (s_id(s))
		return -1;
	a.sin_port = htons(s->port);
	return STEP(bind_ip(s->fd, s->id, &a));
}

static int s_ud_bound(struct setup *s)
{
	return s_ud_id(s) ||
	       STEP(bind_ip(s->fd, s->id, &rxe));
}

static int s_resolved(struct setup *s)
{
	return s_ud_id(s) ||
	       STEP(resolve_ip(s->fd, s->id, &rxe)) ||
	       STEP(wait_event(s->fd, EV_ADDR_RESOLVED, NULL, 10000));
}

/* A listener on fd2, and a TCP id on fd with its route resolved to it. */
static int s_routed(struct setup *s)
{
	struct sockaddr_in a = rxe;
	const char *failed;

	if (s_files(s))
		return -1;
	a.sin_port = htons(s->port);
	failed = route_to_listener(s->fd2, s->fd, &a, &s->peer, &s->id);
	if (failed)
		printf("# setup step failed: %s: %s\n", failed, strerror(errno));
	return failed != NULL;
}

/* As s_routed, connected: the listener's file holds the CONNECT_REQUEST's child. */
static int s_requested(struct setup *s)
{
	struct rdma_ucm_event_resp ev;

	if (s_routed(s) || STEP(connect_id(s->fd, s->id, 0x123)) ||
	    STEP(wait_event(s->fd2, EV_CONNECT_REQUEST, &ev, 10000)))
		return -1;
	s->child = ev.id;
	return 0;
}

/* As s_requested, accepted and established (the active side sends RTU). */
static int s_established(struct setup *s)
{
	return s_requested(s) ||
	       STEP(accept_id(s->fd2, s->child, 0x456, 1)) ||
	       STEP(wait_event(s->fd, EV_CONNECT_RESPONSE, NULL, 10000)) ||
	       STEP(accept_id(s->fd, s->id, 0, 0)) ||
	       STEP(wait_event(s->fd2, EV_ESTABLISHED, NULL, 10000));
}

static int s_joined(struct setup *s)
{
	struct sockaddr_in g = ipv4("239.1.1.9", 0);

	return s_ud_bound(s) ||
	       STEP(join_ip(s->fd, s->id, &g, &s->mc)) ||
	       STEP(wait_event(s->fd, EV_MULTICAST_JOIN, NULL, 10000));
}

static int s_event_queued(struct setup *s)
{
	return s_id(s) ||
	       STEP(write_user_event(s->fd, s->id, EV_USER, 0, 1));
}

/* --- the faulted commands --- */

static long t_create(struct setup *s)
{
	uint32_t id;

	return create_id(s->fd, 1, RDMA_PS_TCP, &id);
}

static long t_destroy(struct setup *s)
{
	return destroy_id(s->fd, s->id, NULL);
}

static long t_bind_ip(struct setup *s)
{
	return bind_ip(s->fd, s->id, &rxe);
}

static long t_bind(struct setup *s)
{
	struct rdma_ucm_bind b = { .id = s->id, .addr_size = sizeof(rxe) };

	memcpy(&b.addr, &rxe, sizeof(rxe));
	return CMD(s->fd, RDMA_USER_CM_CMD_BIND, b, 0);
}

static long t_resolve_ip(struct setup *s)
{
	return resolve_ip(s->fd, s->id, &rxe);
}

static long t_resolve_addr(struct setup *s)
{
	struct rdma_ucm_resolve_addr r = { .id = s->id, .timeout_ms = 2000, .dst_size = sizeof(rxe) };

	memcpy(&r.dst_addr, &rxe, sizeof(rxe));
	return CMD(s->fd, RDMA_USER_CM_CMD_RESOLVE_ADDR, r, 0);
}

static long t_resolve_route(struct setup *s)
{
	return resolve_route(s->fd, s->id);
}

static long t_query_route(struct setup *s)
{
	struct rdma_ucm_query_route_resp r;
	struct rdma_ucm_query q = { .id = s->id, .response = (uintptr_t)&r };

	return CMD(s->fd, RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof(r));
}

static long query(struct setup *s, uint32_t option)
{
	struct rdma_ucm_query_addr_resp r;
	struct rdma_ucm_query q = { .id = s->id, .response = (uintptr_t)&r, .option = option };

	return CMD(s->fd, RDMA_USER_CM_CMD_QUERY, q, sizeof(r));
}

static long t_query_addr(struct setup *s)
{
	return query(s, RDMA_USER_CM_QUERY_ADDR);
}

static long t_query_path(struct setup *s)
{
	return query(s, RDMA_USER_CM_QUERY_PATH);
}

static long t_query_gid(struct setup *s)
{
	return query(s, RDMA_USER_CM_QUERY_GID);
}

static long t_connect(struct setup *s)
{
	return connect_id(s->fd, s->id, 0x123);
}

static long t_listen(struct setup *s)
{
	return listen_id(s->fd, s->id, 4);
}

static long t_accept(struct setup *s)
{
	return accept_id(s->fd2, s->child, 0x456, 1);
}

static long t_reject(struct setup *s)
{
	struct rdma_ucm_reject r = { .id = s->child, .private_data_len = 4 };

	return CMD(s->fd2, RDMA_USER_CM_CMD_REJECT, r, 0);
}

static long t_disconnect(struct setup *s)
{
	struct rdma_ucm_disconnect d = { .id = s->child };

	return CMD(s->fd2, RDMA_USER_CM_CMD_DISCONNECT, d, 0);
}

static long t_init_qp_attr(struct setup *s)
{
	struct ib_uverbs_qp_attr attr;
	struct rdma_ucm_init_qp_attr a = { .id = s->id, .qp_state = 1, .response = (uintptr_t)&attr };

	return CMD(s->fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, a, sizeof(attr));
}

static long t_get_event(struct setup *s)
{
	struct rdma_ucm_event_resp ev;

	set_nonblock(s->fd, 1);
	return get_event(s->fd, &ev, sizeof(ev));
}

/*
 * GET_EVENT after the first touch of a page this process never wrote: the
 * page fault is a fault point of its own (sweep() makes it none).
 */
static long t_get_event_first_touch(struct setup *s)
{
	static char untouched[1 << 16];

	untouched[1 << 15] = 1;
	/* the store is kept: the array may be read through the pointer */
	asm volatile("" : : "r"(untouched) : "memory");
	return t_get_event(s);
}

static long t_get_option(struct setup *s)
{
	return cmd(s->fd, RDMA_USER_CM_CMD_GET_OPTION, NULL, 0, 0);
}

static long t_set_option_tos(struct setup *s)
{
	uint8_t tos = 0x10;
	struct rdma_ucm_set_option o = { .id = s->id, .level = RDMA_OPTION_ID,
					 .optname = RDMA_OPTION_ID_TOS, .optlen = 1,
					 .optval = (uintptr_t)&tos };

	return CMD(s->fd, RDMA_USER_CM_CMD_SET_OPTION, o, 0);
}

/*
 * A large optlen with a valid buffer (the C module takes up to
 * KMALLOC_MAX_SIZE): the copy of optval is a high-order allocation that
 * userspace sized, so its failure must be silent (memdup_user():
 * GFP_USER | __GFP_NOWARN). TOS then refuses the length (EINVAL).
 */
static uint8_t huge_optval[4 << 20];

static long set_option_len(struct setup *s, uint32_t optlen)
{
	struct rdma_ucm_set_option o = { .id = s->id, .level = RDMA_OPTION_ID,
					 .optname = RDMA_OPTION_ID_TOS, .optlen = optlen,
					 .optval = (uintptr_t)huge_optval };

	return CMD(s->fd, RDMA_USER_CM_CMD_SET_OPTION, o, 0);
}

static long t_set_option_1m(struct setup *s)
{
	return set_option_len(s, 1 << 20);
}

static long t_set_option_kmalloc_max(struct setup *s)
{
	return set_option_len(s, sizeof(huge_optval));
}

/* IB_PATH: a primary path record, which makes rdma_cm fake ROUTE_RESOLVED. */
static long t_set_option_ib_path(struct setup *s)
{
	struct ib_path_rec_data p[1];
	struct rdma_ucm_set_option o = { .id = s->id, .level = RDMA_OPTION_IB,
					 .optname = RDMA_OPTION_IB_PATH, .optlen = sizeof(p),
					 .optval = (uintptr_t)p };

	memset(p, 0, sizeof(p));
	p[0].flags = IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL;
	return CMD(s->fd, RDMA_USER_CM_CMD_SET_OPTION, o, 0);
}

static long t_notify(struct setup *s)
{
	struct rdma_ucm_notify n = { .id = s->id };

	return CMD(s->fd, RDMA_USER_CM_CMD_NOTIFY, n, 0);
}

static long t_join_ip(struct setup *s)
{
	struct sockaddr_in g = ipv4("239.1.1.7", 0);

	return join_ip(s->fd, s->id, &g, NULL);
}

static long t_join(struct setup *s)
{
	struct sockaddr_in g = ipv4("239.1.1.8", 0);
	struct rdma_ucm_create_id_resp r;
	struct rdma_ucm_join_mcast j = { .id = s->id, .addr_size = sizeof(g), .join_flags = 1,
					 .response = (uintptr_t)&r };

	memcpy(&j.addr, &g, sizeof(g));
	return CMD(s->fd, RDMA_USER_CM_CMD_JOIN_MCAST, j, sizeof(r));
}

static long t_leave(struct setup *s)
{
	return leave_mc(s->fd, s->mc);
}

static long t_migrate(struct setup *s)
{
	return migrate_id(s->fd2, s->id, s->fd);
}

static long t_resolve_ib_service(struct setup *s)
{
	struct rdma_ucm_resolve_ib_service r = { .id = s->id };

	return CMD(s->fd, RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE, r, 0);
}

static long t_write_cm_event(struct setup *s)
{
	return write_user_event(s->fd, s->id, EV_USER, 3, 4);
}

/* Releasing a file with an id, an event and a listener on it. */
static long t_close(struct setup *s)
{
	long r = close(s->fd2);

	s->fd2 = -1;
	return r;
}

static long t_open(struct setup *s)
{
	int fd = ucma_dev_open();

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/*
 * The first poll() of a file, through epoll (which registers its wait
 * once, in EPOLL_CTL_ADD): ucma_rs makes the file's poll wait queue then,
 * and without memory for it registers on the device's shared one. Either
 * way an event queued afterwards must wake the epoll_wait(); one that
 * times out (or reports EPOLLERR) returns errno 0, which the sweep counts
 * as no plain errno.
 */
static long t_first_poll(struct setup *s)
{
	struct epoll_event want = { .events = EPOLLIN }, got = { 0 };
	int ep = epoll_create1(EPOLL_CLOEXEC), n, e;

	if (ep < 0)
		return -1;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, s->fd, &want) ||
	    write_user_event(s->fd, s->id, EV_USER, 0, 1)) {
		e = errno;
		close(ep);
		errno = e;
		return -1;
	}
	n = epoll_wait(ep, &got, 1, 5000);
	e = errno;
	close(ep);
	if (n < 0) {
		errno = e;
		return -1;
	}
	if (n != 1 || !(got.events & EPOLLIN) || (got.events & EPOLLERR)) {
		errno = 0;
		return -1;
	}
	return 0;
}

/*
 * A scenario marked NOWARN must also fail its allocations without a report
 * in the kernel log: warn_alloc()'s "page allocation failure", or (what an
 * injected page allocation failure prints instead, the injection coming
 * before the allocator's slow path) the fault injector's "forcing a
 * failure", which honours __GFP_NOWARN the same way (FAULT_NOWARN).
 */
#define NOWARN 1
/*
 * The C module may answer 0 after an injected allocation failure here, by
 * design: see sweep().
 */
#define C_SWALLOWS 2
/*
 * The kernel below the module absorbs some reported faults on this path
 * (a teardown cannot fail, a control message is best effort), so the
 * command may answer 0 after one, in either module: see sweep(). Each was
 * traced (FAILNTH_TRACE) to the site named at its scenario.
 */
#define ABSORBS 4

/* A path: the state its setup reaches, the command its target runs. */
struct scenario {
	const char *name;
	int (*setup)(struct setup *s);
	long (*target)(struct setup *s);
	int flags;
};

/*
 * The fail-nth file of the thread that runs the sweep: the harness's
 * process for the path (one opened by main() would arm main()'s thread).
 */
FIXTURE(failnth)
{
	int nth_fd;
};

/* The paths: one variant of the fixture each ("failnth.NAME.sweep"), NAME its case. */
FIXTURE_VARIANT(failnth)
{
	struct scenario sc;
};

FIXTURE_VARIANT_ADD(failnth, open)
{
	.sc = { "open", s_files, t_open, 0 },
};

/*
 * ucma_rs absorbs one fault here by design: the allocation of the file's
 * poll wait queue (PollCondVarBox::new in the module's poll, traced), whose
 * failure puts the file on the device's shared queue.
 */
FIXTURE_VARIANT_ADD(failnth, first_poll)
{
	.sc = { "first_poll", s_id, t_first_poll, ABSORBS },
};

FIXTURE_VARIANT_ADD(failnth, create_id)
{
	.sc = { "create_id", s_files, t_create, 0 },
};

FIXTURE_VARIANT_ADD(failnth, destroy_id)
{
	.sc = { "destroy_id", s_id, t_destroy, 0 },
};

/*
 * A teardown: the REJ that ib_cm sends to the pending request
 * (cm_send_rej_locked(): its AH and MAD) is best effort.
 */
FIXTURE_VARIANT_ADD(failnth, destroy_id_listener_with_request)
{
	.sc = { "destroy_id_listener_with_request", s_requested, t_destroy, ABSORBS },
};

FIXTURE_VARIANT_ADD(failnth, bind_ip)
{
	.sc = { "bind_ip", s_id, t_bind_ip, 0 },
};

FIXTURE_VARIANT_ADD(failnth, bind)
{
	.sc = { "bind", s_id, t_bind, 0 },
};

FIXTURE_VARIANT_ADD(failnth, resolve_ip)
{
	.sc = { "resolve_ip", s_ud_id, t_resolve_ip, 0 },
};

FIXTURE_VARIANT_ADD(failnth, resolve_addr)
{
	.sc = { "resolve_addr", s_ud_id, t_resolve_addr, 0 },
};

/* rdma_resolve_route() ignores a failed cma_add_id_to_tree() (RoCE). */
FIXTURE_VARIANT_ADD(failnth, resolve_route)
{
	.sc = { "resolve_route", s_resolved, t_resolve_route, ABSORBS },
};

FIXTURE_VARIANT_ADD(failnth, query_route)
{
	.sc = { "query_route", s_resolved, t_query_route, 0 },
};

FIXTURE_VARIANT_ADD(failnth, query_addr)
{
	.sc = { "query_addr", s_resolved, t_query_addr, 0 },
};

FIXTURE_VARIANT_ADD(failnth, query_path)
{
	.sc = { "query_path", s_resolved, t_query_path, 0 },
};

FIXTURE_VARIANT_ADD(failnth, query_gid)
{
	.sc = { "query_gid", s_resolved, t_query_gid, 0 },
};

FIXTURE_VARIANT_ADD(failnth, connect)
{
	.sc = { "connect", s_routed, t_connect, 0 },
};

FIXTURE_VARIANT_ADD(failnth, listen)
{
	.sc = { "listen", s_bound, t_listen, 0 },
};

FIXTURE_VARIANT_ADD(failnth, accept)
{
	.sc = { "accept", s_requested, t_accept, 0 },
};

FIXTURE_VARIANT_ADD(failnth, reject)
{
	.sc = { "reject", s_requested, t_reject, 0 },
};

/* rdma_disconnect() answers 0 when its DREQ cannot be allocated. */
FIXTURE_VARIANT_ADD(failnth, disconnect)
{
	.sc = { "disconnect", s_established, t_disconnect, ABSORBS },
};

FIXTURE_VARIANT_ADD(failnth, init_qp_attr)
{
	.sc = { "init_qp_attr", s_resolved, t_init_qp_attr, 0 },
};

FIXTURE_VARIANT_ADD(failnth, get_event)
{
	.sc = { "get_event", s_event_queued, t_get_event, 0 },
};

FIXTURE_VARIANT_ADD(failnth, get_event_first_touch)
{
	.sc = { "get_event_first_touch", s_event_queued, t_get_event_first_touch, 0 },
};

FIXTURE_VARIANT_ADD(failnth, get_option)
{
	.sc = { "get_option", s_files, t_get_option, 0 },
};

FIXTURE_VARIANT_ADD(failnth, set_option_tos)
{
	.sc = { "set_option_tos", s_id, t_set_option_tos, 0 },
};

/*
 * C sets the path, then makes the ROUTE_RESOLVED event: when that
 * allocation fails, ucma_event_handler() drops the event and the
 * command answers 0. ucma_rs allocates the event first (ENOMEM).
 */
FIXTURE_VARIANT_ADD(failnth, set_option_ib_path)
{
	.sc = { "set_option_ib_path", s_resolved, t_set_option_ib_path, C_SWALLOWS },
};

FIXTURE_VARIANT_ADD(failnth, set_option_huge_optlen_no_warn)
{
	.sc = { "set_option_huge_optlen_no_warn", s_id, t_set_option_1m, NOWARN },
};

FIXTURE_VARIANT_ADD(failnth, set_option_kmalloc_max_optlen_no_warn)
{
	.sc = { "set_option_kmalloc_max_optlen_no_warn", s_id, t_set_option_kmalloc_max, NOWARN },
};

FIXTURE_VARIANT_ADD(failnth, notify)
{
	.sc = { "notify", s_bound, t_notify, 0 },
};

/* On RoCE the join joins the IP group (cma_igmp_send()): best effort. */
FIXTURE_VARIANT_ADD(failnth, join_ip_mcast)
{
	.sc = { "join_ip_mcast", s_ud_bound, t_join_ip, ABSORBS },
};

FIXTURE_VARIANT_ADD(failnth, join_mcast)
{
	.sc = { "join_mcast", s_ud_bound, t_join, 0 },
};

/* And the leave leaves it (the netlink notification's skb). */
FIXTURE_VARIANT_ADD(failnth, leave_mcast)
{
	.sc = { "leave_mcast", s_joined, t_leave, ABSORBS },
};

FIXTURE_VARIANT_ADD(failnth, migrate_id)
{
	.sc = { "migrate_id", s_event_queued, t_migrate, 0 },
};

FIXTURE_VARIANT_ADD(failnth, resolve_ib_service)
{
	.sc = { "resolve_ib_service", s_bound, t_resolve_ib_service, 0 },
};

FIXTURE_VARIANT_ADD(failnth, write_cm_event)
{
	.sc = { "write_cm_event", s_id, t_write_cm_event, 0 },
};

/* close() cannot fail: as destroy_id_listener_with_request. */
FIXTURE_VARIANT_ADD(failnth, close_with_listener_and_request)
{
	.sc = { "close_with_listener_and_request", s_requested, t_close, ABSORBS },
};

static void teardown(struct setup *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->fd2 >= 0)
		close(s->fd2);
}

static int set_knob(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(val, f) < 0 || fclose(f)) {
		printf("# cannot set %s\n", path);
		return -1;
	}
	return 0;
}

#define FAILSLAB_VERBOSE "/sys/kernel/debug/failslab/verbose"
#define FAIL_PAGE_ALLOC_VERBOSE "/sys/kernel/debug/fail_page_alloc/verbose"
#define FAIL_USERCOPY_VERBOSE "/sys/kernel/debug/fail_usercopy/verbose"

static int is_c;	/* the C module serves the device */

/*
 * Runs @sc's command with its n-th fault point failed, for every n.
 *
 * A run that took its fault and still answered 0 (swallowed) is allowed
 * only if the fault was one the kernel absorbs. The injector reports every
 * fault it forces in the kernel log ("FAULT_INJECTION: forcing a failure",
 * verbose 1) except at sites that asked for silence (__GFP_NOWARN: the
 * xarray's node allocation under its lock, which xa_alloc() retries with
 * the caller's flags; kmemleak's own object, which it takes from a reserve
 * pool instead; slab's high-order page, retried at the minimum order): the
 * sites that have a fallback. A silent fault is absorbed; a reported one is
 * an allocation or copy the command needed, so it must fail (unless the
 * scenario is C_SWALLOWS and the C module runs).
 */
static void sweep(const struct scenario *sc, uint32_t base_id, int nth_fd)
{
	static const char *const forced[] = { "page allocation failure",
					      "FAULT_INJECTION: forcing a failure",
					      /* FAILNTH_TRACE: the stack's frames too */
					      "+0x" };
	unsigned int n, points = 0, ok_runs = 0, bad_errno = 0, leaked = 0, setup_failed = 0;
	unsigned int swallowed = 0, absorbed = 0;
	int errnos[134] = { 0 }, e, kfd, noisy = 0, nowarn_ok = 1, cm_ids, mc_ok, reports;
	int may_swallow = (sc->flags & ABSORBS) || ((sc->flags & C_SWALLOWS) && is_c);
	int trace = getenv("FAILNTH_TRACE") != NULL;
	char seen[256] = "", where[96] = "";
	uint32_t taken = ~0u;

	/*
	 * The faults report themselves while this runs. In a NOWARN scenario
	 * any report of a slab or page allocation failure is one too many;
	 * the user copies stay quiet there.
	 */
	/*
	 * fail-nth counts every fault point this task reaches, its own page
	 * faults too: the first touch of a page in the armed window (a stack
	 * frame deeper than before, a page the fork left copy-on-write) fails
	 * the page allocation, the kernel reports it and retries the fault,
	 * and the command then succeeds. Every page this process maps, now
	 * and later, is made present and its own before any run.
	 */
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
		ktap_result(0, sc->name, "mlockall: %s", strerror(errno));
		return;
	}
	kfd = kmsg_open(1);
	if (kfd < 0 || ((sc->flags & NOWARN) && set_knob(FAIL_USERCOPY_VERBOSE, "0")))
		nowarn_ok = 0;

	for (n = 1; n <= MAX_POINTS; n++) {
		struct setup s = { .fd = -1, .fd2 = -1 };
		long r;
		int injected;

		if (sc->setup(&s)) {
			setup_failed++;
			teardown(&s);
			break;
		}
		if (kfd >= 0)
			kmsg_count(kfd, forced, 0, NULL, 0);
		arm(nth_fd, n);
		r = sc->target(&s);
		e = errno;
		injected = disarm(nth_fd);
		reports = kfd >= 0 ? kmsg_count(kfd, forced, ARRAY_SIZE(forced) - !trace, NULL,
						(sc->flags & NOWARN) || trace) : 0;
		teardown(&s);
		if (sc->flags & NOWARN)
			noisy += reports;
		if (r == 0)
			ok_runs++;
		else if (e >= 1 && e <= 133)
			errnos[e]++;
		else
			bad_errno++;
		if (trace && r == 0 && injected && reports)
			printf("# %s: point %u: success after the reported fault above\n", sc->name,
			       n);
		if (r == 0 && injected && reports && !may_swallow) {
			if (!swallowed++)
				snprintf(where, sizeof(where), " (first: point %u)", n);
		} else if (r == 0 && injected) {
			absorbed++;
		}
		if (!ids_free_from_at(base_id, ids_to_probe(base_id, ID_PROBE_MARGIN), &taken)) {
			if (!leaked++ && taken != ~0u)
				printf("# %s: point %u left id %u taken\n", sc->name, n, taken);
		}
		if (!injected)
			break;
		points++;
	}
	/*
	 * Nothing any run left behind, beyond the lowest context id checked
	 * after each: no rdma_cm id (a listener's child, or a context whose id
	 * was freed), and no join in the first multicast ids.
	 */
	cm_ids = listed_cm_ids_after(2000);
	mc_ok = multicast_table_empty(&rxe, 8);
	for (e = 1; e <= 133; e++)
		if (errnos[e])
			snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), " %s:%d",
				 strerrorname_np(e), errnos[e]);
	run->points += points;
	run->paths++;
	printf("# %s: %u injection points; succeeded %u: %u after a %s fault, %u after a reported one; errnos%s\n",
	       sc->name, points, ok_runs, absorbed,
	       may_swallow ? "silent or reported (allowed here)" : "silent", swallowed,
	       seen[0] ? seen : " none");
	if (kfd >= 0)
		close(kfd);
	if (sc->flags & NOWARN) {
		if (set_knob(FAIL_USERCOPY_VERBOSE, "1"))
			nowarn_ok = 0;
		if (noisy)
			printf("# %s: %d allocation failure reports in the kernel log\n", sc->name,
			       noisy);
		nowarn_ok = nowarn_ok && !noisy && errnos[ENOMEM];
	}
	ktap_result(!setup_failed && !bad_errno && !leaked && !cm_ids && mc_ok && n <= MAX_POINTS &&
		    points > 0 && nowarn_ok && kfd >= 0 && !swallowed, sc->name,
		    "setup failed %u, bad errnos %u, runs leaving a context %u, cm_ids left %d, multicast ids 0..7 %s, points %u, ENOMEM %d, allocation failure reports %d, successes after a reported fault %u%s",
		    setup_failed, bad_errno, leaked, cm_ids, mc_ok ? "free" : "taken", points,
		    errnos[ENOMEM], noisy, swallowed, where);
}

/*
 * Every fault site fails when its turn comes, sleeping allocations
 * included, and reports itself in the kernel log (unless __GFP_NOWARN).
 */
static int configure(void)
{
	static const char *const knobs[][2] = {
		{ "/sys/kernel/debug/failslab/ignore-gfp-wait", "N" },
		{ "/sys/kernel/debug/failslab/verbose", "1" },
		{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N" },
		{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", "N" },
		{ "/sys/kernel/debug/fail_page_alloc/min-order", "0" },
		{ "/sys/kernel/debug/fail_page_alloc/verbose", "1" },
		{ "/sys/kernel/debug/fail_usercopy/verbose", "1" },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(knobs); i++) {
		FILE *f = fopen(knobs[i][0], "w");
		const char *v = knobs[i][1];

		/*
		 * FAILNTH_TRACE (a diagnosis, not a test: the splat gate fails
		 * the boot on the stacks): every forced fault dumps its stack,
		 * echoed here with the run it failed.
		 */
		if (getenv("FAILNTH_TRACE") && !strcmp(v, "1"))
			v = "2";
		if (!f || fputs(v, f) < 0 || fclose(f)) {
			printf("# cannot set %s\n", knobs[i][0]);
			return -1;
		}
	}
	return 0;
}

FIXTURE_SETUP(failnth)
{
	self->nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->nth_fd) TH_LOG("open /proc/thread-self/fail-nth: %s", strerror(errno));
}

FIXTURE_TEARDOWN(failnth)
{
	close(self->nth_fd);
	ktap_group_end(_metadata);
}

/* Three times the longest sweep on the debug kernel. */
TEST_F_TIMEOUT(failnth, sweep, 30)
{
	ktap_header(1);
	sweep(&variant->sc, base_id, self->nth_fd);
}

static void failnth_summary(void)
{
	printf("# fail-nth: %u command paths, %u injection points\n", run->paths, run->points);
}

static void failnth_init(void)
{
	if (!ucma_env.rxe_ip || configure())
		ucma_bail_out("RXE_IP not set or fault injection not configurable");
	rxe = ucma_env.rxe;
	is_c = (getenv("UCMA_MODULE") && !strcmp(getenv("UCMA_MODULE"), "c")) || c_module_loaded();
	run = harness_shared(sizeof(*run));
	run->next_port = 20000;
	base_id = start_ids_free(&rxe, ID_PROBE_MARGIN);
	atexit(failnth_summary);
}

/* Usage: ucma_failnth [WORD...]: every path, or those whose name contains a WORD. */
int main(int argc, char **argv)
{
	const char *kernel = getenv("UCMA_KERNEL");
	int i, fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-l") || !strcmp(argv[i], "-h"))
			return harness_main(argc, argv, 0, NULL);
	ucma_setup(0);
	fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		/*
		 * One case of its own, not on the harness: visible in the tally
		 * as a skip on the default kernel; on the debug kernel, which
		 * has fault injection, a failure.
		 */
		ktap_header(1);
		if (kernel && !strcmp(kernel, "debug"))
			ktap_result(0, "failnth_available", "no /proc/thread-self/fail-nth on the debug kernel");
		else
			ktap_skipped("failnth_available", "no /proc/thread-self/fail-nth (needs the debug kernel)");
		return ktap_finish();
	}
	close(fd);
	return harness_main(argc, argv, 0, failnth_init);
}
