// SPDX-License-Identifier: GPL-2.0
/*
 * The uCMA against a second host (issue 13, item 8): a network namespace at
 * the far end of veth pairs, with its own rxe and siw devices (ucma_peer.h),
 * gives the events one host never produces:
 *
 *   - real neighbour resolution (ARP across the link) and ADDR_ERROR (no
 *     host answers for the address);
 *   - REJECTED from a peer without a listener (RoCE: REJ "invalid service
 *     id"; iWARP: the TCP connect is refused, CONNECT fails at once) and
 *     from a listener's REJECT, private data carried both ways;
 *   - ESTABLISHED on both sides, DISCONNECTED, and on RoCE TIMEWAIT_EXIT;
 *   - UNREACHABLE when the peer's MAC changes under ids that resolved a
 *     route to it (rdma_cm's netevent notifier);
 *   - ADDR_CHANGE when an active-backup bond under an rxe device fails
 *     over to a slave with another MAC (NETDEV_BONDING_FAILOVER);
 *   - a client's connect still waiting for the peer's reply, where ACCEPT
 *     or REJECT on it must not leave its destroy to iw_cm's BUG (iWARP) or
 *     to the REQ's retries (RoCE).
 *
 * ROUTE_ERROR is not among them: in 7.3 only an IB SA path query reports it
 * (cma_query_handler()); on RoCE and iWARP a route resolution fails before
 * any work is queued, which ucma_races class18 checks.
 *
 * Each case requires the exact event sequence and status, and leaves
 * nothing behind: every id destroyed, rdma_cm listing none, every context
 * id it can have used free again (see end_case()). Needs root, rdma_rxe,
 * siw, veth, bonding.
 *
 * On the kernel's kselftest_harness.h (tests/lib/harness.h): one TEST_F
 * per case ("peer.neighbour_resolution", its case
 * "peer_neighbour_resolution"), each in a process of its own; the peer's
 * namespace, its devices and their QPs are made once, by main(), before
 * the first and removed after the last. "ucma_peer WORD" runs the cases
 * whose name contains WORD. Prints KTAP.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>

#include "harness.h"
#include "ucma_cmd.h"
#include "ucma_peer.h"

#define EV_ADDR_ERROR 1
#define EV_DISCONNECTED 10
#define EV_ADDR_CHANGE 14
#define EV_TIMEWAIT_EXIT 15

#define IB_CM_REJ_INVALID_SERVICE_ID 8
#define IB_CM_REJ_CONSUMER_DEFINED 28

static const char *const event_names[] = {
	"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR", "CONNECT_REQUEST",
	"CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED",
	"DISCONNECTED", "DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE",
	"TIMEWAIT_EXIT",
};

static uint32_t base_id;
static char why[512];
static int failed_step;

static const char *ev_name(uint32_t e)
{
	return e < ARRAY_SIZE(event_names) ? event_names[e] : "?";
}

/* Records the first failure of a case. */
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (failed_step)
		return;
	failed_step = 1;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
}

/* Each case in a process of its own, with the bookkeeping of fail() fresh. */
FIXTURE(peer) {};

FIXTURE_SETUP(peer)
{
	failed_step = 0;
	why[0] = 0;
}

FIXTURE_TEARDOWN(peer)
{
	ktap_group_end(_metadata);
}

/*
 * Context ids a case may have taken beyond the highest it was handed
 * (ids_to_probe()): a peer's request child never fetched, one at a time
 * here. 64 covers them many times over, for 64 CREATE_IDs per case.
 */
#define ID_PROBE_MARGIN 64

/*
 * Ends a case: its own checks, then nothing left behind: rdma_cm lists no
 * id, and every context id the case can have used is free again.
 */
static void end_case(const char *name)
{
	int cm_ids = listed_cm_ids_after(3000);
	unsigned int n = ids_to_probe(base_id, ID_PROBE_MARGIN);
	uint32_t taken;
	int ids_ok = ids_free_after(base_id, n, 3000, &taken);

	if (!failed_step && cm_ids)
		fail("%d cm_ids left", cm_ids);
	if (!failed_step && !ids_ok && taken == ~0u)
		fail("the id probe failed: %s", strerror(errno));
	else if (!failed_step && !ids_ok)
		fail("id %u of %u..%u still taken", taken, base_id, base_id + n - 1);
	ktap_result(!failed_step, name, "%s", why);
}

/*
 * The next event on @fd must be @type with @status, within @ms: 0, or -1
 * after recording what came instead.
 */
static int expect(int fd, const char *side, uint32_t type, int32_t status,
		  struct rdma_ucm_event_resp *ev, int ms)
{
	struct rdma_ucm_event_resp tmp;

	if (!ev)
		ev = &tmp;
	if (next_event(fd, ev, ms)) {
		fail("%s: no %s within %d ms (%s)", side, ev_name(type), ms, strerror(errno));
		return -1;
	}
	if (ev->event != type || (int32_t)ev->status != status) {
		fail("%s: %s status %d, wanted %s status %d", side, ev_name(ev->event),
		     (int32_t)ev->status, ev_name(type), status);
		return -1;
	}
	return 0;
}

/* No event may be queued on @fd within @ms. */
static void expect_quiet(int fd, const char *side, int ms)
{
	struct rdma_ucm_event_resp ev;

	if (next_event(fd, &ev, ms) == 0)
		fail("%s: unexpected %s status %d", side, ev_name(ev.event), (int32_t)ev.status);
}

/* The next port, across the cases (shared: each runs in a process of its own). */
static uint16_t *next_port;

/*
 * A TCP listener of the peer on @ip (a new port): created, bound and
 * listening from inside its namespace. 0, or -1 (recorded).
 */
static int peer_listen(int fd, const char *ip, struct sockaddr_in *addr, uint32_t *id)
{
	const char *step = NULL;

	*addr = ipv4(ip, (*next_port)++);
	if (peer_enter())
		step = "enter the peer's namespace";
	else if (create_id(fd, 0x9e, RDMA_PS_TCP, id))
		step = "create the peer's listener";
	else if (bind_ip(fd, *id, addr))
		step = "bind the peer's listener";
	else if (listen_id(fd, *id, 8))
		step = "listen";
	if (peer_leave() && !step)
		step = "leave the peer's namespace";
	if (step)
		fail("%s: %s", step, strerror(errno));
	return step ? -1 : 0;
}

/* A TCP id here with address and route resolved to @addr: 0, or -1. */
static int client_to(int fd, const struct sockaddr_in *addr, uint32_t *id)
{
	if (create_id(fd, 0xc1, RDMA_PS_TCP, id)) {
		fail("create client: %s", strerror(errno));
		return -1;
	}
	if (resolve_ip(fd, *id, addr)) {
		fail("RESOLVE_IP: %s", strerror(errno));
		return -1;
	}
	if (expect(fd, "client", EV_ADDR_RESOLVED, 0, NULL, 10000))
		return -1;
	if (resolve_route(fd, *id)) {
		fail("RESOLVE_ROUTE: %s", strerror(errno));
		return -1;
	}
	return expect(fd, "client", EV_ROUTE_RESOLVED, 0, NULL, 10000);
}

static long reject_pd(int fd, uint32_t id, const char *pd)
{
	struct rdma_ucm_reject r = { .id = id };

	r.private_data_len = strlen(pd);
	memcpy(r.private_data, pd, strlen(pd));
	return CMD(fd, RDMA_USER_CM_CMD_REJECT, r, 0);
}

static long disconnect_id(int fd, uint32_t id)
{
	struct rdma_ucm_disconnect d = { .id = id };

	return CMD(fd, RDMA_USER_CM_CMD_DISCONNECT, d, 0);
}

/* The event's private data must begin with the string @pd (no NUL). */
static void expect_pd(const struct rdma_ucm_event_resp *ev, const char *side, const char *pd)
{
	const struct rdma_ucm_conn_param *c = &ev->param.conn;

	if (c->private_data_len < strlen(pd) || memcmp(c->private_data, pd, strlen(pd)))
		fail("%s: %s carries %u bytes of private data, not \"%s\"", side,
		     ev_name(ev->event), c->private_data_len, pd);
}

static void destroy_or_fail(int fd, uint32_t id, const char *what)
{
	if (destroy_id(fd, id, NULL))
		fail("destroy %s: %s", what, strerror(errno));
}

/* --- neighbours --- */

static int neigh_lladdr(const char *ip, const char *dev, char *mac)
{
	char cmdline[160];
	FILE *f;
	int ok;

	snprintf(cmdline, sizeof(cmdline),
		 "ip neigh show %s dev %s | sed -n 's/.*lladdr \\([0-9a-f:]*\\).*/\\1/p'", ip, dev);
	f = popen(cmdline, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%17s", mac) == 1;
	pclose(f);
	return ok ? 0 : -1;
}

/*
 * RESOLVE_IP of the peer with no neighbour entry: the kernel asks by ARP
 * across the link, and the entry it learns holds the peer's MAC.
 */
TEST_F_TIMEOUT(peer, neighbour_resolution, 45)
{
	struct sockaddr_in a = ipv4(PEER_RXE_IP, 0);
	char want[18] = "", got[18] = "";
	int fd = ucma_dev_open();
	uint32_t id;

	ktap_header(1);
	peer_sh("ip neigh flush dev vethn0");
	if (neigh_lladdr(PEER_RXE_IP, "vethn0", got) == 0)
		fail("a neighbour entry survived the flush: %s", got);
	if (peer_mac("vethn1", want))
		fail("the peer's MAC could not be read");
	if (create_id(fd, 1, RDMA_PS_TCP, &id) == 0) {
		if (resolve_ip(fd, id, &a))
			fail("RESOLVE_IP: %s", strerror(errno));
		else if (expect(fd, "client", EV_ADDR_RESOLVED, 0, NULL, 10000) == 0 &&
			 (neigh_lladdr(PEER_RXE_IP, "vethn0", got) || strcmp(got, want)))
			fail("neighbour entry '%s', the peer's MAC is %s", got, want);
		destroy_or_fail(fd, id, "client");
	} else {
		fail("CREATE_ID: %s", strerror(errno));
	}
	close(fd);
	end_case(__func__);
}

/*
 * No host answers ARP for 10.77.0.99: ADDR_ERROR (-ETIMEDOUT), and the id
 * resolves again.
 */
TEST_F_TIMEOUT(peer, addr_error, 30)
{
	struct sockaddr_in gone = ipv4("10.77.0.99", 0), a = ipv4(PEER_RXE_IP, 0);
	struct rdma_ucm_event_resp ev;
	int fd = ucma_dev_open();
	uint32_t id;

	ktap_header(1);
	if (create_id(fd, 1, RDMA_PS_TCP, &id)) {
		fail("CREATE_ID: %s", strerror(errno));
	} else {
		if (resolve_ip_ms(fd, id, &gone, 1500))
			fail("RESOLVE_IP: %s", strerror(errno));
		else if (next_event(fd, &ev, 15000))
			fail("no event within 15 s");
		else if (ev.event != EV_ADDR_ERROR || (int32_t)ev.status != -ETIMEDOUT)
			fail("%s status %d, wanted ADDR_ERROR -ETIMEDOUT", ev_name(ev.event),
			     (int32_t)ev.status);
		/* After ADDR_ERROR the id is back to idle and may resolve again. */
		if (!failed_step && resolve_ip(fd, id, &a))
			fail("RESOLVE_IP after ADDR_ERROR: %s", strerror(errno));
		else if (!failed_step)
			expect(fd, "client", EV_ADDR_RESOLVED, 0, NULL, 10000);
		destroy_or_fail(fd, id, "client");
	}
	close(fd);
	end_case(__func__);
}

/* --- connections --- */

enum transport { ROCE, IWARP };

struct side {
	const char *ip, *here_dev, *peer_dev;
	struct verbs_qps here, peer;
};

static struct side sides[2] = {
	[ROCE] = { PEER_RXE_IP, "rxen", "rxep" },
	[IWARP] = { PEER_SIW_IP, "siwn", "siwp" },
};

/*
 * CONNECT to a port of the peer where nothing listens. RoCE: the peer's CM
 * answers REJ (invalid service id), REJECTED. iWARP: the TCP connect is
 * refused inside CONNECT itself (siw connects synchronously).
 */
static void rejected_without_listener(enum transport t, const char *name)
{
	struct sockaddr_in a = ipv4(sides[t].ip, (*next_port)++);
	int fd = ucma_dev_open();
	uint32_t id;

	if (client_to(fd, &a, &id) == 0) {
		long ret = connect_id(fd, id, sides[t].here.qp[0]->qp_num);

		if (t == ROCE) {
			if (ret)
				fail("CONNECT: %s", strerror(errno));
			else
				expect(fd, "client", EV_REJECTED, IB_CM_REJ_INVALID_SERVICE_ID,
				       NULL, 10000);
		} else if (ret == 0 || errno != ECONNREFUSED) {
			fail("CONNECT: %s, wanted ECONNREFUSED", ret ? strerror(errno) : "success");
		}
		expect_quiet(fd, "client", 200);
		destroy_or_fail(fd, id, "client");
	}
	close(fd);
	end_case(name);
}

TEST_F_TIMEOUT(peer, rejected_without_listener_rxe, 30)
{
	ktap_header(1);
	rejected_without_listener(ROCE, __func__);
}

TEST_F_TIMEOUT(peer, rejected_without_listener_siw, 30)
{
	ktap_header(1);
	rejected_without_listener(IWARP, __func__);
}

/*
 * The peer's listener gets the CONNECT_REQUEST with the client's private
 * data and REJECTs it with its own, which the client's REJECTED carries:
 * status 28 (consumer defined) on RoCE; on iWARP the MPA reject resets the
 * stream (-ECONNRESET).
 */
static void rejected_by_listener(enum transport t, const char *name)
{
	int32_t status = t == ROCE ? IB_CM_REJ_CONSUMER_DEFINED : -ECONNRESET;
	int fp = ucma_dev_open(), fc = ucma_dev_open();
	struct rdma_ucm_event_resp ev;
	struct sockaddr_in a;
	uint32_t l, c;

	if (peer_listen(fp, sides[t].ip, &a, &l) == 0) {
		if (client_to(fc, &a, &c) == 0) {
			if (connect_pd(fc, c, sides[t].here.qp[2]->qp_num, "ucma-peer: request"))
				fail("CONNECT: %s", strerror(errno));
			else if (expect(fp, "peer", EV_CONNECT_REQUEST, 0, &ev, 10000) == 0) {
				expect_pd(&ev, "peer", "ucma-peer: request");
				if (reject_pd(fp, ev.id, "ucma-peer: no"))
					fail("REJECT: %s", strerror(errno));
				else if (expect(fc, "client", EV_REJECTED, status, &ev, 10000) == 0)
					expect_pd(&ev, "client", "ucma-peer: no");
			}
			expect_quiet(fc, "client", 200);
			destroy_or_fail(fc, c, "client");
		}
		destroy_or_fail(fp, l, "listener");
	}
	close(fc);
	close(fp);
	end_case(name);
}

TEST_F_TIMEOUT(peer, rejected_by_listener_rxe, 30)
{
	ktap_header(1);
	rejected_by_listener(ROCE, __func__);
}

TEST_F_TIMEOUT(peer, rejected_by_listener_siw, 30)
{
	ktap_header(1);
	rejected_by_listener(IWARP, __func__);
}

/*
 * The end of a case between the peer's file @fp and the client's @fc: the
 * peer's child @child and listener @l destroyed (each if there is one:
 * ~0u if not), both files closed, then end_case().
 */
static void peer_case_end(int fp, int fc, uint32_t l, uint32_t child, const char *name)
{
	if (child != ~0u)
		destroy_or_fail(fp, child, "the peer's child");
	if (l != ~0u)
		destroy_or_fail(fp, l, "listener");
	close(fc);
	close(fp);
	end_case(name);
}

/*
 * After the peer's ACCEPT: the connection established on both sides (on
 * RoCE the client gets CONNECT_RESPONSE and sends the RTU with ACCEPT, as
 * librdmacm does; on iWARP it gets ESTABLISHED), recorded with fail().
 */
static void established(enum transport t, int fc, uint32_t c, int fp)
{
	if (t == ROCE && expect(fc, "client", EV_CONNECT_RESPONSE, 0, NULL, 10000) == 0 &&
	    accept_id(fc, c, 0, 0))
		fail("the client's ACCEPT (RTU): %s", strerror(errno));
	if (!failed_step && t == IWARP)
		expect(fc, "client", EV_ESTABLISHED, 0, NULL, 10000);
	if (!failed_step)
		expect(fp, "peer", EV_ESTABLISHED, 0, NULL, 10000);
}

/*
 * A connection across the link: CONNECT_REQUEST and ACCEPT on the peer;
 * on iWARP ESTABLISHED on both sides; on RoCE, where the kernel has no QP
 * of the client's, the client gets CONNECT_RESPONSE and ACCEPTs to send the
 * RTU (librdmacm then reports ESTABLISHED itself), the peer ESTABLISHED.
 * Then the client's DISCONNECT: DISCONNECTED on the peer, which on RoCE
 * answers with its own DISCONNECT (the DREP), then on the client; on RoCE
 * TIMEWAIT_EXIT on both once the CM's timewait is over.
 */
static void connect_disconnect(enum transport t, const char *name)
{
	int fp = ucma_dev_open(), fc = ucma_dev_open();
	struct rdma_ucm_event_resp ev;
	uint32_t l = ~0u, c, child = ~0u;
	struct sockaddr_in a;

	if (peer_listen(fp, sides[t].ip, &a, &l) == 0) {
		if (client_to(fc, &a, &c) == 0) {
			if (connect_pd(fc, c, sides[t].here.qp[1]->qp_num, "ucma-peer: hello"))
				fail("CONNECT: %s", strerror(errno));
			else if (expect(fp, "peer", EV_CONNECT_REQUEST, 0, &ev, 10000) == 0) {
				child = ev.id;
				expect_pd(&ev, "peer", "ucma-peer: hello");
				if (accept_id(fp, child, sides[t].peer.qp[1]->qp_num, 1))
					fail("ACCEPT: %s", strerror(errno));
			}
			if (!failed_step)
				established(t, fc, c, fp);
			if (!failed_step && disconnect_id(fc, c))
				fail("DISCONNECT: %s", strerror(errno));
			if (!failed_step)
				expect(fp, "peer", EV_DISCONNECTED, 0, NULL, 10000);
			/* On RoCE the DREP is the peer's DISCONNECT (as librdmacm sends it). */
			if (!failed_step && t == ROCE && disconnect_id(fp, child))
				fail("the peer's DISCONNECT: %s", strerror(errno));
			if (!failed_step)
				expect(fc, "client", EV_DISCONNECTED, 0, NULL, 10000);
			if (!failed_step && t == ROCE)
				expect(fc, "client", EV_TIMEWAIT_EXIT, 0, NULL, 20000);
			if (!failed_step && t == ROCE)
				expect(fp, "peer", EV_TIMEWAIT_EXIT, 0, NULL, 20000);
			if (!failed_step)
				expect_quiet(fc, "client", 200);
			destroy_or_fail(fc, c, "client");
		}
	}
	peer_case_end(fp, fc, l, child, name);
}

TEST_F_TIMEOUT(peer, connect_disconnect_rxe, 30)
{
	ktap_header(1);
	connect_disconnect(ROCE, __func__);
}

TEST_F_TIMEOUT(peer, connect_disconnect_siw, 30)
{
	ktap_header(1);
	connect_disconnect(IWARP, __func__);
}

/*
 * ACCEPT or REJECT on the active side of a connection whose CONNECT waits
 * for the peer's reply (the peer's listener holds the request, unanswered):
 * EINVAL, and the client's DESTROY_ID returns within ANSWER_DESTROY_MS.
 * ucma_rs refuses both until rdma_cm has reported CONNECT_RESPONSE
 * (Documentation/abi.rst). The C module passes them on, with two outcomes
 * no user should be able to cause:
 *
 *   - iWARP: iw_cm_accept() and iw_cm_reject() fail (EINVAL) but clear the
 *     id's connect-wait flag, so the client's DESTROY_ID no longer waits for
 *     the MPA reply and finds the iw_cm id in CONN_SENT: "kernel BUG at
 *     drivers/infiniband/core/iwcm.c:427" (destroy_cm_id());
 *   - RoCE: ib_cm's reject (REJECT answers 0; ACCEPT's failed REP or RTU
 *     is followed by one) resets the id to idle but leaves its REQ MAD
 *     posted, so the DESTROY_ID waits out the MAD's retries: over a minute.
 *
 * On iWARP the destroy waits for the peer's REJECT, sent a second later.
 * Never run against the C module: "ucma_peer --c-answer-demo CASE" runs a
 * case whichever module is loaded (iWARP with the C module: the BUG).
 */
#define ANSWER_DESTROY_MS 5000

struct late_reject {
	int fd;
	uint32_t id;
	long ret;
	int err;
};

/* A thread (a forked writer would be refused: not the opener's creds). */
static void *reject_late(void *arg)
{
	struct late_reject *lr = arg;

	sleep(1);
	lr->ret = reject_pd(lr->fd, lr->id, "ucma-peer: late");
	lr->err = errno;
	return NULL;
}

static long monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void answer_connecting_id(enum transport t, int reject, const char *name, int demo)
{
	int fp = ucma_dev_open(), fc = ucma_dev_open(), rejecting = 0;
	const char *what = reject ? "REJECT" : "ACCEPT";
	struct rdma_ucm_event_resp ev;
	uint32_t l = ~0u, c, child = ~0u;
	struct late_reject lr;
	struct sockaddr_in a;
	pthread_t rejecter;
	long r, t0, ms;

	if (peer_listen(fp, sides[t].ip, &a, &l) == 0) {
		if (client_to(fc, &a, &c) == 0) {
			if (connect_id(fc, c, sides[t].here.qp[3]->qp_num))
				fail("CONNECT: %s", strerror(errno));
			else if (expect(fp, "peer", EV_CONNECT_REQUEST, 0, &ev, 10000) == 0)
				child = ev.id;
			if (!failed_step) {
				errno = 0;
				r = reject ? reject_pd(fc, c, "ucma-peer: no") :
					     accept_id(fc, c, sides[t].here.qp[3]->qp_num, 1);
				if (demo)
					printf("# %s of the connecting client: %ld (%s)\n", what, r,
					       strerror(errno));
				if (r != -1 || errno != EINVAL)
					fail("the client's %s: %ld (%s), wanted EINVAL", what, r,
					     strerror(errno));
			}
			if ((!failed_step || demo) && t == IWARP && child != ~0u) {
				/* The reply the destroy below waits for. */
				lr = (struct late_reject){ .fd = fp, .id = child };
				rejecting = !pthread_create(&rejecter, NULL, reject_late, &lr);
				if (!rejecting)
					fail("pthread_create");
			}
			if (demo)
				printf("# DESTROY_ID of the client now\n");
			t0 = monotonic_ms();
			destroy_or_fail(fc, c, "client");
			ms = monotonic_ms() - t0;
			printf("# %s: the client's DESTROY_ID took %ld ms\n", name, ms);
			if (!failed_step && ms > ANSWER_DESTROY_MS)
				fail("the client's DESTROY_ID took %ld ms (at most %d)", ms,
				     ANSWER_DESTROY_MS);
			if (rejecting) {
				pthread_join(rejecter, NULL);
				if (!failed_step && lr.ret)
					fail("the peer's REJECT: %s", strerror(lr.err));
			}
		}
	}
	peer_case_end(fp, fc, l, child, name);
}

/*
 * The start of a case ucma_rs runs and the C boot skips, a deliberate
 * difference (@c_why, see Documentation/abi.rst): its plan, and under the
 * C module its skip. Nonzero if the case is to run.
 */
static int rust_only(const char *name, const char *c_why)
{
	char reason[128];

	ktap_header(1);
	if (!c_module_loaded())
		return 1;
	snprintf(reason, sizeof(reason), "C module: %s, see abi.rst", c_why);
	ktap_skipped(name, reason);
	return 0;
}

#define IW_BUG "kernel BUG at iwcm.c:427"
#define REQ_RETRIES "the destroy waits out the REQ's retries"

TEST_F_TIMEOUT(peer, accept_on_connecting_iwarp_id, 30)
{
	if (rust_only(__func__, IW_BUG))
		answer_connecting_id(IWARP, 0, __func__, 0);
}

TEST_F_TIMEOUT(peer, reject_on_connecting_iwarp_id, 30)
{
	if (rust_only(__func__, IW_BUG))
		answer_connecting_id(IWARP, 1, __func__, 0);
}

TEST_F_TIMEOUT(peer, accept_on_connecting_rxe_id, 30)
{
	if (rust_only(__func__, REQ_RETRIES))
		answer_connecting_id(ROCE, 0, __func__, 0);
}

TEST_F_TIMEOUT(peer, reject_on_connecting_rxe_id, 30)
{
	if (rust_only(__func__, REQ_RETRIES))
		answer_connecting_id(ROCE, 1, __func__, 0);
}

/*
 * A second answer to one connect request: the peer ACCEPTs its child, then
 * ACCEPTs or REJECTs it again before the connection is established.
 * EINVAL, and the connection goes on: on RoCE the client gets
 * CONNECT_RESPONSE, sends the RTU (ACCEPT) and the peer gets ESTABLISHED;
 * on iWARP both get ESTABLISHED. The C module passes the second answer
 * on: on RoCE the REP is followed by a REJ (REJECT answers 0, ACCEPT
 * EINVAL after rdma_accept()'s reject), and the client gets REJECTED; on
 * iWARP, until iw_cm's ESTABLISHED work has run, iw_cm lets it through
 * to siw, whose siw_accept() and siw_reject() drop the connection
 * endpoint's reference again: a use-after-free (Documentation/abi.rst).
 * Never run against the C module.
 */
static void answer_twice(enum transport t, int reject, int q, const char *name)
{
	int fp = ucma_dev_open(), fc = ucma_dev_open();
	const char *what = reject ? "REJECT" : "ACCEPT";
	struct rdma_ucm_event_resp ev;
	uint32_t l = ~0u, c, child = ~0u;
	struct sockaddr_in a;
	long r;

	if (peer_listen(fp, sides[t].ip, &a, &l) == 0 && client_to(fc, &a, &c) == 0) {
		if (connect_id(fc, c, sides[t].here.qp[q]->qp_num))
			fail("CONNECT: %s", strerror(errno));
		else if (expect(fp, "peer", EV_CONNECT_REQUEST, 0, &ev, 10000) == 0)
			child = ev.id;
		if (!failed_step && accept_id(fp, child, sides[t].peer.qp[q]->qp_num, 1))
			fail("the peer's ACCEPT: %s", strerror(errno));
		if (!failed_step) {
			errno = 0;
			r = reject ? reject_pd(fp, child, "ucma-peer: changed my mind") :
				     accept_id(fp, child, sides[t].peer.qp[q]->qp_num, 1);
			if (r != -1 || errno != EINVAL)
				fail("the peer's second answer (%s): %ld (%s), wanted EINVAL", what, r,
				     strerror(errno));
		}
		if (!failed_step)
			established(t, fc, c, fp);
		destroy_or_fail(fc, c, "client");
	}
	peer_case_end(fp, fc, l, child, name);
}

#define SECOND_REJECTS "the second answer rejects the connection"
#define SIW_PUT_TWICE "siw puts its endpoint twice"

TEST_F_TIMEOUT(peer, accept_then_accept_rxe, 30)
{
	if (rust_only(__func__, SECOND_REJECTS))
		answer_twice(ROCE, 0, 4, __func__);
}

TEST_F_TIMEOUT(peer, accept_then_reject_rxe, 30)
{
	if (rust_only(__func__, SECOND_REJECTS))
		answer_twice(ROCE, 1, 5, __func__);
}

TEST_F_TIMEOUT(peer, accept_then_accept_siw, 30)
{
	if (rust_only(__func__, SIW_PUT_TWICE))
		answer_twice(IWARP, 0, 4, __func__);
}

TEST_F_TIMEOUT(peer, accept_then_reject_siw, 30)
{
	if (rust_only(__func__, SIW_PUT_TWICE))
		answer_twice(IWARP, 1, 5, __func__);
}

/*
 * REJECT with more private data than an InfiniBand REJ carries (148
 * bytes; the command takes 196): EINVAL, and the request is still there
 * to answer, as ib_cm refuses it before answering. A second REJECT with
 * short data then goes through: the client gets REJECTED with it. Both
 * modules.
 */
TEST_F_TIMEOUT(peer, reject_retried_after_long_private_data_rxe, 30)
{
	int fp = ucma_dev_open(), fc = ucma_dev_open();
	struct rdma_ucm_reject r = { .private_data_len = 196 };
	struct rdma_ucm_event_resp ev;
	uint32_t l = ~0u, c, child = ~0u;
	struct sockaddr_in a;

	ktap_header(1);
	if (peer_listen(fp, sides[ROCE].ip, &a, &l) == 0 && client_to(fc, &a, &c) == 0) {
		if (connect_id(fc, c, sides[ROCE].here.qp[3]->qp_num))
			fail("CONNECT: %s", strerror(errno));
		else if (expect(fp, "peer", EV_CONNECT_REQUEST, 0, &ev, 10000) == 0)
			child = ev.id;
		if (!failed_step) {
			r.id = child;
			errno = 0;
			if (CMD(fp, RDMA_USER_CM_CMD_REJECT, r, 0) != -1 || errno != EINVAL)
				fail("REJECT with 196 bytes: %s, wanted EINVAL", strerror(errno));
		}
		if (!failed_step && reject_pd(fp, child, "ucma-peer: shorter"))
			fail("the second REJECT: %s", strerror(errno));
		if (!failed_step && expect(fc, "client", EV_REJECTED, IB_CM_REJ_CONSUMER_DEFINED,
					   &ev, 10000) == 0)
			expect_pd(&ev, "client", "ucma-peer: shorter");
		destroy_or_fail(fc, c, "client");
	}
	peer_case_end(fp, fc, l, child, __func__);
}

#define AT_ONCE_IDS 16

/*
 * AT_ONCE_IDS clients connect to one listener of the peer, which REJECTs
 * each request the moment it has fetched it: every REJECT answers 0 and
 * every client gets REJECTED. The request's event reaches the reader
 * before rdma_cm's handler for it has returned; a REJECT must not find
 * the request unanswerable meanwhile. Both modules.
 */
TEST_F_TIMEOUT(peer, reject_at_once_rxe, 60)
{
	int fp = ucma_dev_open(), fc = ucma_dev_open(), i, k, rejected = 0, got = 0;
	struct rdma_ucm_event_resp ev;
	uint32_t l = ~0u, c[AT_ONCE_IDS];
	struct sockaddr_in a;

	ktap_header(1);
	if (peer_listen(fp, sides[ROCE].ip, &a, &l) == 0) {
		/* Routes first, then the connects, each with a QP number of its own. */
		for (i = 0; i < AT_ONCE_IDS && !failed_step; i++)
			client_to(fc, &a, &c[i]);
		for (k = 0; k < i && !failed_step; k++)
			if (connect_id(fc, c[k], 0x77100 + k))
				fail("CONNECT %d: %s", k, strerror(errno));
		while (!failed_step && rejected < i &&
		       expect(fp, "peer", EV_CONNECT_REQUEST, 0, &ev, 10000) == 0) {
			if (reject_pd(fp, ev.id, "ucma-peer: at once"))
				fail("REJECT of request %d: %s", rejected, strerror(errno));
			rejected++;
			if (destroy_id(fp, ev.id, NULL))
				fail("destroy the child: %s", strerror(errno));
		}
		while (!failed_step && got < i &&
		       expect(fc, "client", EV_REJECTED, IB_CM_REJ_CONSUMER_DEFINED, &ev,
			      10000) == 0)
			got++;
		for (i = i - 1; i >= 0; i--)
			destroy_or_fail(fc, c[i], "client");
	}
	peer_case_end(fp, fc, l, ~0u, __func__);
}

/*
 * The active side's REJECT once the peer's reply is in (CONNECT_RESPONSE,
 * RoCE): librdmacm sends it when it cannot move its QP to RTR or RTS. 0,
 * and the peer's child gets REJECTED (consumer defined) with the private
 * data.
 */
TEST_F_TIMEOUT(peer, reject_after_connect_response_rxe, 30)
{
	int fp = ucma_dev_open(), fc = ucma_dev_open();
	struct rdma_ucm_event_resp ev;
	uint32_t l = ~0u, c, child = ~0u;
	struct sockaddr_in a;

	ktap_header(1);
	if (peer_listen(fp, sides[ROCE].ip, &a, &l) == 0 && client_to(fc, &a, &c) == 0) {
		if (connect_id(fc, c, sides[ROCE].here.qp[3]->qp_num))
			fail("CONNECT: %s", strerror(errno));
		else if (expect(fp, "peer", EV_CONNECT_REQUEST, 0, &ev, 10000) == 0)
			child = ev.id;
		if (!failed_step && accept_id(fp, child, sides[ROCE].peer.qp[3]->qp_num, 1))
			fail("the peer's ACCEPT: %s", strerror(errno));
		if (!failed_step)
			expect(fc, "client", EV_CONNECT_RESPONSE, 0, NULL, 10000);
		if (!failed_step && reject_pd(fc, c, "ucma-peer: no rtr"))
			fail("the client's REJECT: %s", strerror(errno));
		if (!failed_step && expect(fp, "peer", EV_REJECTED, IB_CM_REJ_CONSUMER_DEFINED,
					   &ev, 10000) == 0)
			expect_pd(&ev, "peer", "ucma-peer: no rtr");
		destroy_or_fail(fc, c, "client");
	}
	peer_case_end(fp, fc, l, child, __func__);
}

/* --- the peer's MAC changes --- */

#define UNR_IDS 6

/*
 * UNR_IDS ids resolve a route to the peer over RoCE; half of them also
 * CONNECT to the peer's listener, which leaves the requests unanswered.
 * Then the peer takes another MAC and the neighbour entry here is updated:
 * each id gets exactly one UNREACHABLE (-ETIMEDOUT), and the peer's
 * listener, whose ids know the client's unchanged MAC, nothing but the
 * requests.
 */
TEST_F_TIMEOUT(peer, unreachable_on_mac_change, 45)
{
	static const char *const new_mac = "02:77:00:00:00:02";
	int fp = ucma_dev_open(), fc = ucma_dev_open(), i, got[UNR_IDS] = { 0 }, requests = 0;
	struct rdma_ucm_event_resp ev;
	char old_mac[18], cmdline[256];
	uint32_t l, c[UNR_IDS];
	struct sockaddr_in a;

	ktap_header(1);
	if (peer_mac("vethn1", old_mac))
		fail("the peer's MAC could not be read");
	if (!failed_step && peer_listen(fp, PEER_RXE_IP, &a, &l) == 0) {
		for (i = 0; i < UNR_IDS && !failed_step; i++) {
			if (client_to(fc, &a, &c[i]))
				break;
			if (i % 2 && connect_id(fc, c[i], 0x77000 + i))
				fail("CONNECT: %s", strerror(errno));
		}
		for (; requests < UNR_IDS / 2 && !failed_step; requests++)
			expect(fp, "peer", EV_CONNECT_REQUEST, 0, NULL, 10000);
		if (!failed_step) {
			snprintf(cmdline, sizeof(cmdline),
				 "ip -n " PEER_NS " link set vethn1 address %s &&"
				 " ip neigh replace " PEER_RXE_IP " lladdr %s dev vethn0 nud reachable",
				 new_mac, new_mac);
			if (peer_sh(cmdline))
				fail("the MAC could not be changed");
		}
		while (!failed_step && next_event(fc, &ev, 5000) == 0) {
			for (i = 0; i < UNR_IDS && c[i] != ev.id; i++)
				;
			if (ev.event != EV_UNREACHABLE || ev.status != -ETIMEDOUT || i == UNR_IDS)
				fail("client: %s status %d on id %u", ev_name(ev.event), ev.status,
				     ev.id);
			else if (got[i]++)
				fail("client: a second UNREACHABLE on id %u", ev.id);
		}
		for (i = 0; i < UNR_IDS && !failed_step; i++)
			if (!got[i])
				fail("client: no UNREACHABLE on id %u (%s)", c[i],
				     i % 2 ? "connecting" : "route resolved");
		if (!failed_step)
			printf("# %s: %d ids, %d of them connecting: one UNREACHABLE each\n", __func__,
			       UNR_IDS, UNR_IDS / 2);
		snprintf(cmdline, sizeof(cmdline),
			 "ip -n " PEER_NS " link set vethn1 address %s; ip neigh flush dev vethn0",
			 old_mac);
		peer_sh(cmdline);
		close(fc); /* destroys the clients */
		fc = -1;
		destroy_or_fail(fp, l, "listener");
	}
	if (fc >= 0)
		close(fc);
	close(fp);
	end_case(__func__);
}

/* --- bond failover --- */

static void bond_down(void);

/* Leftovers of a run killed at its timeout (no teardown) go first. */
static int bond_up(void)
{
	bond_down();
	return peer_sh("set -e; modprobe bonding;"
		       "ip link add ucmabond type bond mode active-backup fail_over_mac active miimon 50;"
		       "ip link add vethb0 type veth peer name vethb1;"
		       "ip link add vethc0 type veth peer name vethc1;"
		       "ip link set vethb0 master ucmabond; ip link set vethc0 master ucmabond;"
		       "ip link set vethb1 up; ip link set vethc1 up; ip link set ucmabond up;"
		       "ip addr add 10.79.0.1/24 dev ucmabond;"
		       "echo vethb0 > /sys/class/net/ucmabond/bonding/active_slave;"
		       "rdma link add rxeb type rxe netdev ucmabond;"
		       "i=0; until rdma link show rxeb/1 | grep -q ACTIVE; do"
		       " i=$((i + 1)); [ $i -lt 50 ] || exit 1; sleep 0.1; done");
}

static void bond_down(void)
{
	peer_sh("rdma link delete rxeb 2>/dev/null; ip link delete ucmabond 2>/dev/null;"
		"ip link delete vethb0 2>/dev/null; ip link delete vethc0 2>/dev/null; true");
}

#define BOND_IDS 4

/*
 * Ids bound to the address of an active-backup bond (fail_over_mac=active)
 * under an rxe device. The bond fails over to the other slave, taking its
 * MAC: each id gets one ADDR_CHANGE. It fails back, to the MAC the ids
 * were bound with: rdma_cm compares with that one, so none gets another.
 * An id of another device gets nothing.
 */
TEST_F_TIMEOUT(peer, addr_change_on_bond_failover, 180)
{
	struct sockaddr_in a = ipv4("10.79.0.1", 0), other = ipv4(HERE_RXE_IP, 0);
	int fd = ucma_dev_open(), fo = ucma_dev_open(), i, round, got[BOND_IDS];
	static const char *const slaves[] = { "vethc0", "vethb0" };
	struct rdma_ucm_event_resp ev;
	uint32_t id[BOND_IDS], o;
	char cmdline[128];

	ktap_header(1);
	if (bond_up()) {
		fail("the bond and its rxe device could not be set up");
		bond_down();
		close(fd);
		close(fo);
		end_case(__func__);
		return;
	}
	for (i = 0; i < BOND_IDS && !failed_step; i++)
		if (create_id(fd, 0xb0 + i, RDMA_PS_TCP, &id[i]) || bind_ip(fd, id[i], &a))
			fail("id %d: bind to the bond's address: %s", i, strerror(errno));
	if (!failed_step && (create_id(fo, 0xb9, RDMA_PS_TCP, &o) || bind_ip(fo, o, &other)))
		fail("an id on rxen: %s", strerror(errno));
	for (round = 0; round < 2 && !failed_step; round++) {
		memset(got, 0, sizeof(got));
		snprintf(cmdline, sizeof(cmdline),
			 "echo %s > /sys/class/net/ucmabond/bonding/active_slave", slaves[round]);
		if (peer_sh(cmdline)) {
			fail("failover to %s refused", slaves[round]);
			break;
		}
		while (!failed_step && next_event(fd, &ev, 3000) == 0) {
			for (i = 0; i < BOND_IDS && id[i] != ev.id; i++)
				;
			if (ev.event != EV_ADDR_CHANGE || ev.status || i == BOND_IDS)
				fail("failover %d: %s status %d on id %u", round + 1,
				     ev_name(ev.event), ev.status, ev.id);
			else if (got[i]++ || round == 1)
				fail("failover %d: %s ADDR_CHANGE on id %u", round + 1,
				     round ? "an" : "a second", ev.id);
		}
		for (i = 0; i < BOND_IDS && !failed_step && round == 0; i++)
			if (!got[i])
				fail("failover %d (to %s): no ADDR_CHANGE on id %u", round + 1,
				     slaves[round], id[i]);
	}
	expect_quiet(fo, "the id on rxen", 100);
	if (!failed_step)
		printf("# %s: %d ids: one ADDR_CHANGE each on failover, none on failback\n",
		       __func__, BOND_IDS);
	close(fd);
	close(fo);
	bond_down();
	end_case(__func__);
}

/* After the last case (at the harness's exit): the peer's QPs and namespace go. */
static void peer_teardown_all(void)
{
	int t;

	for (t = ROCE; t <= IWARP; t++) {
		verbs_qps_close(&sides[t].here);
		verbs_qps_close(&sides[t].peer);
	}
	peer_down();
}

/*
 * Before the first case: the peer's namespace and devices, and QPs on each
 * device whose numbers the connections carry (kept by this process, alive
 * while the cases run in theirs).
 */
static void peer_init(void)
{
	int t, set_up;

	next_port = harness_shared(sizeof(*next_port));
	*next_port = 20000;
	set_up = peer_up() == 0;
	for (t = ROCE; t <= IWARP && set_up; t++)
		set_up = verbs_qps_open(&sides[t].here, sides[t].here_dev) == 0 &&
			 verbs_qps_open(&sides[t].peer, sides[t].peer_dev) == 0;
	if (!set_up) {
		peer_down();
		ucma_bail_out("the peer namespace, its devices or their QPs could not be set up");
	}
	base_id = probe_id();
	if (base_id == ~0u || !ids_free_from(base_id, ID_PROBE_MARGIN)) {
		peer_down();
		ucma_bail_out("ids %u..%u are not free at the start", base_id,
			      base_id + ID_PROBE_MARGIN - 1);
	}
	atexit(peer_teardown_all);
}

/*
 * Usage: ucma_peer [WORD...]: every case, or those whose name contains a
 * WORD. "ucma_peer --c-answer-demo {accept,reject}_{iwarp,rxe}" runs
 * answer_connecting_id() whichever module is loaded (with the C module:
 * the kernel BUG on iWARP, a destroy of over a minute on RoCE).
 */
int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--c-answer-demo")) {
		int reject = !strncmp(argv[2], "reject", 6);
		enum transport t = strstr(argv[2], "iwarp") ? IWARP : ROCE;

		peer_init();
		ktap_header(1);
		answer_connecting_id(t, reject, argv[2], 1);
		return ktap_finish();
	}
	return harness_main(argc, argv, 0, peer_init);
}
