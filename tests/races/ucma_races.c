// SPDX-License-Identifier: GPL-2.0
/*
 * Regression tests for the bug classes of this interface (security.md,
 * section 2), one case per class, named after it. Races are raced: two or
 * three threads released together by a barrier, repeated RACE_ITERS times
 * (default 200) so that the windows are hit on 2 vCPUs. Each case checks
 * that every call returned success or an errno the C module can return for
 * it, and that nothing was left behind (the ids from the first one on, as
 * far as any was handed out, are free again: see end_case()); the splat
 * gate and kmemleak of scripts/guest-init do the rest.
 * Needs RXE_IP and SIW_IP (scripts/vm-run). Prints KTAP.
 *
 * On the kernel's kselftest_harness.h (tests/lib/harness.h): one TEST_F
 * per case ("races.class01_destroy_vs_inflight_command"), each in a
 * process of its own (starting from srand(1)'s sequence) and killed after
 * its timeout: three times its longest run on the debug kernel at
 * RACE_ITERS 60 (tests/vm/run-suite sets 30 there), at least 30 s, scaled
 * up with RACE_ITERS above 200. "ucma_races WORD..." runs the cases whose name
 * contains a WORD.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "harness.h"
#include "ucma_cmd.h"
#include "ucma_peer.h"

static struct sockaddr_in rxe, siw;
static int iters = 200;
static uint32_t base_id;
static int is_c;	/* the C module serves the device (UCMA_MODULE=c) */
static void *bad_ptr;

/*
 * What runs through the cases, each in a process of its own (shared,
 * mapped by races_init()): the last port handed out, and the time the
 * leftover checks took (RACE_STATS).
 */
static struct races_run {
	uint16_t next_port;
	double leak_check_seconds;
} *run;

static uint16_t port(void)
{
	uint16_t p = __atomic_add_fetch(&run->next_port, 1, __ATOMIC_RELAXED);

	if (p > 40000) {
		__atomic_store_n(&run->next_port, 30001, __ATOMIC_RELAXED);
		p = 30001;
	}
	return p;
}

static struct sockaddr_in with_port(struct sockaddr_in a, uint16_t p)
{
	a.sin_port = htons(p);
	return a;
}

/* --- outcome bookkeeping, shared by the threads of a case --- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int unexpected, first_bad_errno;
static const char *first_bad_what;
static struct timespec case_start;

/*
 * @ret, errno: must be 0 or one of the errnos in @ok (0-terminated); with
 * @must_fail, must be one of the errnos (success is unexpected too).
 */
static void outcome(const char *what, long ret, const int *ok, int must_fail)
{
	int e = ret ? errno : 0, i;

	if (ret == 0 && !must_fail)
		return;
	for (i = 0; ret && ok[i]; i++)
		if (ok[i] == e)
			return;
	pthread_mutex_lock(&lock);
	if (!unexpected++) {
		first_bad_errno = e;
		first_bad_what = what;
	}
	pthread_mutex_unlock(&lock);
}

/* @call returns 0 or fails with one of the errnos listed (0: none may). */
#define OUTCOME(what, call, ...)                                \
	do {                                                    \
		static const int _ok[] = { __VA_ARGS__, 0 };    \
		outcome(what, (call), _ok, 0);                  \
	} while (0)

/* @call fails, with one of the errnos listed: success is unexpected. */
#define FAILS(what, call, ...)                                  \
	do {                                                    \
		static const int _ok[] = { __VA_ARGS__, 0 };    \
		outcome(what, (call), _ok, 1);                  \
	} while (0)

static void begin_case(void)
{
	clock_gettime(CLOCK_MONOTONIC, &case_start);
	unexpected = 0;
	first_bad_what = NULL;
}

/* Joins a case may have left behind sit below this multicast id. */
#define MC_PROBE 8

/*
 * Context ids a case may have taken without this process being handed
 * them, beyond the highest it was (ids_to_probe()): the children of
 * connect requests never fetched (at most a few per listener here: class10
 * connects 3 clients per round, connect_request_vs_migrate_close keeps
 * CRM_RING in flight) and the ids of CREATE_IDs whose reply faulted (one
 * per thread at a time). 256 covers them many times over and costs 256
 * CREATE_IDs (a few ms) per case.
 */
#define ID_PROBE_MARGIN 256

/*
 * Ends a case: no unexpected result, and nothing left behind once its files
 * are closed: every context id the case can have used (from the first id
 * up to the highest handed out, and ID_PROBE_MARGIN more) is free again,
 * rdma_cm lists no id (a leaked listener child or context bound to a
 * device), and the multicast id table's first MC_PROBE ids are free (a
 * leaked join).
 */
static double case_seconds(void);

static void end_case(const char *name, int extra_ok, const char *extra_why)
{
	double t0 = case_seconds();
	unsigned int n = ids_to_probe(base_id, ID_PROBE_MARGIN);
	uint32_t taken;
	int ids_ok = ids_free_after(base_id, n, 2000, &taken);
	int cm_ids = listed_cm_ids_after(2000);
	int mc_ok = multicast_table_empty(&rxe, MC_PROBE);
	char ids_why[96] = "";

	run->leak_check_seconds += case_seconds() - t0;
	if (!ids_ok && taken == ~0u)
		snprintf(ids_why, sizeof(ids_why), "; the id probe failed: %s", strerror(errno));
	else if (!ids_ok)
		snprintf(ids_why, sizeof(ids_why), "; id %u of %u..%u still taken", taken,
			 base_id, base_id + n - 1);

	ktap_result(!unexpected && ids_ok && !cm_ids && mc_ok && extra_ok, name,
		    "%d unexpected results (first: %s: %s)%s; %d cm_ids left; multicast ids 0..%d %s; %s",
		    unexpected, first_bad_what ? first_bad_what : "-", strerror(first_bad_errno),
		    ids_why, cm_ids, MC_PROBE - 1, mc_ok ? "free" : "not free",
		    extra_ok ? "" : extra_why);
}

static double case_seconds(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - case_start.tv_sec) + (now.tv_nsec - case_start.tv_nsec) / 1e9;
}

/* A diagnostic line with a case's counts and duration, with RACE_STATS set. */
static void stats(const char *name, const char *fmt, ...)
{
	va_list ap;

	if (!getenv("RACE_STATS"))
		return;
	printf("# %s (%.1f s): ", name, case_seconds());
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* --- racing: run fns[0..n-1] together, released by one barrier --- */

struct racer {
	void (*fn)(void *arg);
	void *arg;
	pthread_barrier_t *start;
};

static void *racer_main(void *p)
{
	struct racer *r = p;

	pthread_barrier_wait(r->start);
	r->fn(r->arg);
	return NULL;
}

static void race(int n, void (*const fns[])(void *), void *arg)
{
	pthread_barrier_t start;
	struct racer r[4];
	pthread_t t[4];
	int i;

	pthread_barrier_init(&start, NULL, n);
	for (i = 0; i < n; i++) {
		r[i] = (struct racer){ fns[i], arg, &start };
		if (i)
			pthread_create(&t[i], NULL, racer_main, &r[i]);
	}
	racer_main(&r[0]);
	for (i = 1; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
}

/* What the racers of a case share. */
struct shared {
	int fd, fd2;
	uint32_t id, id2, mc;
	struct sockaddr_in addr;
};

/* --- class 1: destroy/close racing with an in-flight command --- */

static void c1_query(void *p)
{
	struct shared *s = p;
	struct rdma_ucm_query_route_resp r;
	struct rdma_ucm_query q = { .id = s->id, .response = (uintptr_t)&r };
	int i;

	for (i = 0; i < 4; i++) {
		OUTCOME("query_route", CMD(s->fd, RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof(r)), ENOENT,
			ENXIO);
		OUTCOME("bind_ip", bind_ip(s->fd, s->id, &s->addr), ENOENT, ENXIO, EINVAL);
	}
}

static void c1_destroy(void *p)
{
	struct shared *s = p;

	/* The only destroyer: it destroys. */
	OUTCOME("destroy", destroy_id(s->fd, s->id, NULL), 0);
}

static void class01_destroy_vs_inflight_command(void)
{
	static void (*const fns[])(void *) = { c1_query, c1_destroy };
	struct shared s = { .fd = ucma_dev_open(), .addr = rxe };
	int i;

	begin_case();
	for (i = 0; i < iters; i++) {
		create_id(s.fd, 1, RDMA_PS_UDP, &s.id);
		race(2, fns, &s);
	}
	close(s.fd);
	end_case(__func__, 1, "");
}

/* --- class 2: handle published before the object is complete --- */

/*
 * c2_create creates an id and destroys it, then makes a CREATE_ID whose
 * reply faults, four times; c2_guess queries and destroys the first 8 ids
 * meanwhile, again and again from before c2_create starts until it is
 * done (a single pass, as this case had, never met an id in 200 rounds
 * under either module: it was over before the first CREATE_ID was). Only c2_create's good ids may ever be found:
 * a faulting CREATE_ID fails with EFAULT and its id is never reachable.
 * So every id
 * c2_guess destroys is one c2_create then fails to destroy (ENOENT), and
 * the two counts are equal; a guessed destroy of a half-made id (published
 * before its reply was out) would make them differ.
 */
static int c2_own_gone, c2_guess_destroyed, c2_guess_found, c2_guess_enxio;
static int c2_started, c2_done, c2_passes;

static void c2_create(void *p)
{
	struct shared *s = p;
	struct rdma_ucm_create_id c = { .uid = 1, .ps = RDMA_PS_TCP };
	uint32_t id;
	long ret;
	int i;

	/* The guesser runs first: a thread woken by the barrier can be late. */
	for (i = 0; i < 100000 && !__atomic_load_n(&c2_started, __ATOMIC_ACQUIRE); i++)
		sched_yield();
	for (i = 0; i < 4; i++) {
		ret = create_id(s->fd, 1, RDMA_PS_TCP, &id);
		OUTCOME("create", ret, 0);
		if (ret == 0) {
			/*
			 * Every other id lives until the guesser has made a
			 * whole pass (it then destroys it first): a guess
			 * meets a live id only a few microseconds wide
			 * otherwise, and 200 rounds could pass without one.
			 */
			if (i % 2 == 0) {
				int p0 = __atomic_load_n(&c2_passes, __ATOMIC_ACQUIRE), k;

				for (k = 0; k < 100000 &&
				     __atomic_load_n(&c2_passes, __ATOMIC_ACQUIRE) < p0 + 2; k++)
					sched_yield();
			}
			/* ENOENT: c2_guess destroyed the id first (counted). */
			ret = destroy_id(s->fd, id, NULL);
			OUTCOME("destroy own", ret, ENOENT);
			if (ret)
				__atomic_add_fetch(&c2_own_gone, 1, __ATOMIC_RELAXED);
		}
		/* A create whose reply faults fails, and is never reachable. */
		c.response = (uintptr_t)bad_ptr;
		FAILS("faulting create", CMD(s->fd, RDMA_USER_CM_CMD_CREATE_ID, c, 4), EFAULT);
	}
	__atomic_store_n(&c2_done, 1, __ATOMIC_RELEASE);
}

/* One guess: a query and a destroy of id @guess. */
static void c2_guess_one(struct shared *s, uint32_t guess)
{
	struct rdma_ucm_query_route_resp r;
	struct rdma_ucm_query q = { .id = guess, .response = (uintptr_t)&r };
	long ret;

	/*
	 * ENXIO: ucma_rs only, the query met the id while c2_create destroys
	 * it (C takes the id out of its table before the destroy drops the
	 * last reference, and makes it wait; see class 8).
	 */
	ret = CMD(s->fd, RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof(r));
	if (is_c)
		OUTCOME("guessed query", ret, ENOENT);
	else
		OUTCOME("guessed query", ret, ENOENT, ENXIO);
	if (ret == 0)
		__atomic_add_fetch(&c2_guess_found, 1, __ATOMIC_RELAXED);
	else if (errno == ENXIO)
		__atomic_add_fetch(&c2_guess_enxio, 1, __ATOMIC_RELAXED);
	ret = destroy_id(s->fd, guess, NULL);
	OUTCOME("guessed destroy", ret, ENOENT);
	if (ret == 0)
		__atomic_add_fetch(&c2_guess_destroyed, 1, __ATOMIC_RELAXED);
}

static void c2_guess(void *p)
{
	struct shared *s = p;
	uint32_t guess;
	int pass;

	__atomic_store_n(&c2_started, 1, __ATOMIC_RELEASE);
	for (pass = 0; pass < 10000; pass++) {
		for (guess = base_id; guess < base_id + 8; guess++)
			c2_guess_one(s, guess);
		__atomic_add_fetch(&c2_passes, 1, __ATOMIC_RELEASE);
		if (__atomic_load_n(&c2_done, __ATOMIC_ACQUIRE))
			break;
	}
}

static void class02_handle_published_before_complete(void)
{
	static void (*const fns[])(void *) = { c2_create, c2_guess };
	struct shared s = { .fd = ucma_dev_open() };
	char why[200];
	int i;

	begin_case();
	c2_own_gone = c2_guess_destroyed = c2_guess_found = c2_guess_enxio = 0;
	for (i = 0; i < iters; i++) {
		c2_started = c2_done = 0;
		race(2, fns, &s);
	}
	close(s.fd);
	stats(__func__, "%d guessed queries found an id (%d ENXIO), %d guessed destroys, %d own destroys ENOENT",
	      c2_guess_found, c2_guess_enxio, c2_guess_destroyed, c2_own_gone);
	snprintf(why, sizeof(why),
		 "%d guessed destroys, %d of %d own destroys found the id gone (must be equal, and not all), %d guessed queries found an id (must be > 0 both)",
		 c2_guess_destroyed, c2_own_gone, 4 * iters, c2_guess_found);
	/*
	 * Both outcomes of the guesses must have happened (an id found, and
	 * ENOENT: always, c2_create holds one id at a time, so 7 of the 8
	 * guesses are never taken), and so must both of c2_create's own
	 * destroys (ENOENT after each wait above; success when it does not
	 * wait, unless a guess is quicker). ENXIO needs
	 * the query to meet the destroy within a few instructions: not
	 * required.
	 */
	end_case(__func__,
		 c2_guess_destroyed == c2_own_gone && c2_guess_destroyed > 0 && c2_guess_found > 0 &&
		 c2_own_gone < 4 * iters, why);
}

/* --- class 3: device-requiring commands on an unbound id --- */

static void class03_device_commands_on_unbound_id(void)
{
	int fd = ucma_dev_open();
	uint32_t id;
	struct ib_uverbs_qp_attr attr;
	struct rdma_ucm_init_qp_attr ia = { .qp_state = 1, .response = (uintptr_t)&attr };
	struct rdma_ucm_reject rj = { 0 };
	struct rdma_ucm_disconnect d = { 0 };
	struct rdma_ucm_notify n = { 0 };
	struct sockaddr_in g = ipv4("239.1.2.3", 0);
	struct ib_path_rec_data path = { .flags = IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL };
	struct rdma_ucm_set_option o = { .level = RDMA_OPTION_IB, .optname = RDMA_OPTION_IB_PATH,
					 .optlen = sizeof(path), .optval = (uintptr_t)&path };

	begin_case();
	create_id(fd, 1, RDMA_PS_UDP, &id);
	ia.id = rj.id = d.id = n.id = o.id = id;
	/* Every one fails as ucma_get_ctx_dev() (or ucma_set_ib_path()) does. */
	FAILS("connect", connect_id(fd, id, 1), EINVAL);
	FAILS("accept", accept_id(fd, id, 1, 1), EINVAL);
	FAILS("reject", CMD(fd, RDMA_USER_CM_CMD_REJECT, rj, 0), EINVAL);
	FAILS("disconnect", CMD(fd, RDMA_USER_CM_CMD_DISCONNECT, d, 0), EINVAL);
	FAILS("init_qp_attr", CMD(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, ia, sizeof(attr)), EINVAL);
	FAILS("join", join_ip(fd, id, &g, NULL), EINVAL);
	FAILS("resolve_route", resolve_route(fd, id), EINVAL);
	FAILS("notify", CMD(fd, RDMA_USER_CM_CMD_NOTIFY, n, 0), EINVAL);
	FAILS("set IB_PATH", CMD(fd, RDMA_USER_CM_CMD_SET_OPTION, o, 0), EINVAL);
	close(fd);
	end_case(__func__, 1, "");
}

/* --- class 4: sockaddr family/length mismatch --- */

static void class04_sockaddr_family_length_mismatch(void)
{
	static const uint16_t families[] = { 0, AF_INET, AF_INET6, 27 /* AF_IB */, 0x7f, 0xffff };
	static const uint16_t sizes[] = { 0, 1, 16, 28, 48, 127, 128 };
	int fd = ucma_dev_open();
	unsigned int f, z;
	uint32_t id;

	begin_case();
	create_id(fd, 1, RDMA_PS_UDP, &id);
	for (f = 0; f < ARRAY_SIZE(families); f++) {
		for (z = 0; z < ARRAY_SIZE(sizes); z++) {
			struct rdma_ucm_bind b = { .id = id, .addr_size = sizes[z] };
			struct rdma_ucm_resolve_addr ra = { .id = id, .timeout_ms = 100, .dst_size = sizes[z] };
			struct rdma_ucm_create_id_resp r;
			struct rdma_ucm_join_mcast j = { .id = id, .addr_size = sizes[z],
							 .response = (uintptr_t)&r };
			int right = (families[f] == AF_INET && sizes[z] == 16) ||
				    (families[f] == AF_INET6 && sizes[z] == 28) ||
				    (families[f] == 27 && sizes[z] == 48);

			memset(&b.addr, 0xee, sizeof(b.addr));
			b.addr.ss_family = families[f];
			memcpy(&ra.dst_addr, &b.addr, sizeof(b.addr));
			memcpy(&j.addr, &b.addr, sizeof(b.addr));
			if (!right) {
				/*
				 * A wrong pair is EINVAL before anything is read past it
				 * (JOIN_MCAST of an unknown family with size 0 passes the
				 * size check, and is EINVAL as the id is unbound).
				 */
				FAILS("bind", CMD(fd, RDMA_USER_CM_CMD_BIND, b, 0), EINVAL);
				FAILS("resolve_addr", CMD(fd, RDMA_USER_CM_CMD_RESOLVE_ADDR, ra, 0), EINVAL);
				FAILS("join_mcast", CMD(fd, RDMA_USER_CM_CMD_JOIN_MCAST, j, 4), EINVAL);
			}
		}
	}
	/* AF_IB (all-zero) on a RoCE device: the join is refused (cma_zero_addr()). */
	{
		struct rdma_ucm_create_id_resp r;
		struct rdma_ucm_join_mcast j = { .id = id, .addr_size = 48, .response = (uintptr_t)&r };

		OUTCOME("bind", bind_ip(fd, id, &rxe), 0);
		j.addr.ss_family = 27;
		FAILS("AF_IB join", CMD(fd, RDMA_USER_CM_CMD_JOIN_MCAST, j, 4), EINVAL);
	}
	close(fd);
	end_case(__func__, 1, "");
}

/* --- class 5: unchecked numeric fields --- */

static void class05_unchecked_numeric_fields(void)
{
	int fd = ucma_dev_open(), bad = 0;
	uint32_t id, rep;
	struct ib_uverbs_qp_attr attr;
	uint8_t val[8] = { 0 };

	begin_case();
	create_id(fd, 1, RDMA_PS_UDP, &id);
	bind_ip(fd, id, &rxe);
	{
		static const uint32_t states[] = { 7, 8, 0x80000000u, 0xffffffffu };
		unsigned int i;

		for (i = 0; i < 4; i++) {
			struct rdma_ucm_init_qp_attr a = { .id = id, .qp_state = states[i],
							   .response = (uintptr_t)&attr };

			bad += CMD(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, a, sizeof(attr)) == 0;
			OUTCOME("qp_state", CMD(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, a, sizeof(attr)), EINVAL);
		}
	}
	{
		static const uint32_t lens[] = { (4u << 20) + 1, 0x7fffffffu, 0xffffffffu };
		unsigned int i;

		for (i = 0; i < 3; i++) {
			struct rdma_ucm_set_option o = { .id = id, .level = RDMA_OPTION_ID,
							 .optname = RDMA_OPTION_ID_TOS, .optlen = lens[i],
							 .optval = (uintptr_t)val };

			OUTCOME("huge optlen", CMD(fd, RDMA_USER_CM_CMD_SET_OPTION, o, 0), EINVAL);
		}
		/* Within the cap but larger than the buffer: EFAULT, not a big allocation left. */
		{
			struct rdma_ucm_set_option o = { .id = id, .level = RDMA_OPTION_ID,
							 .optname = RDMA_OPTION_ID_TOS, .optlen = 4u << 20,
							 .optval = (uintptr_t)bad_ptr };

			OUTCOME("4 MiB optlen", CMD(fd, RDMA_USER_CM_CMD_SET_OPTION, o, 0), EFAULT, ENOMEM,
				EINVAL);
		}
	}
	{
		static const int backlogs[] = { -1, 0, 1, 0x7fffffff, INT32_MIN };
		unsigned int i;

		for (i = 0; i < 5; i++) {
			uint32_t l;

			create_id(fd, 1, RDMA_PS_TCP, &l);
			bind_ip(fd, l, &rxe);
			OUTCOME("listen backlog", listen_id(fd, l, backlogs[i]), EINVAL, EADDRINUSE);
			OUTCOME("destroy listener", destroy_id(fd, l, NULL), 0);
		}
	}
	/* After all of that the id is still destroyable: no reference leaked. */
	bad += destroy_id(fd, id, &rep) != 0;
	close(fd);
	end_case(__func__, !bad, "an out-of-range field was accepted or the id could not be destroyed");
}

/* --- class 6: short input struct --- */

static void class06_short_input_struct(void)
{
	int fd = ucma_dev_open(), bad = 0;
	uint32_t id;
	uint16_t len;
	struct rdma_ucm_connect c = { 0 };
	struct rdma_ucm_accept a = { 0 };

	begin_case();
	create_id(fd, 1, RDMA_PS_TCP, &id);
	c.id = a.id = id;
	c.conn_param.valid = a.conn_param.valid = 1;
	for (len = 0; len < 280; len += 8)
		bad += cmd(fd, RDMA_USER_CM_CMD_CONNECT, &c, len, 0) == 0 || errno != EINVAL;
	for (len = 0; len < 288; len += 8)
		bad += cmd(fd, RDMA_USER_CM_CMD_ACCEPT, &a, len, 0) == 0 || errno != EINVAL;
	/* Without ECE (280 / 288 bytes) the command is complete: the lookup runs. */
	OUTCOME("connect 280", cmd(fd, RDMA_USER_CM_CMD_CONNECT, &c, 280, 0), EINVAL);
	OUTCOME("accept 288", cmd(fd, RDMA_USER_CM_CMD_ACCEPT, &a, 288, 0), EINVAL);
	close(fd);
	end_case(__func__, !bad, "a short CONNECT/ACCEPT was not EINVAL");
}

/* --- class 7: kernel infoleak in responses --- */

/*
 * Every reply is fetched twice in the same state, once into a buffer filled
 * with 0xa5 and once into one filled with 0x5a, and the two are compared
 * byte by byte: a byte that differs kept the caller's fill (a hole the
 * kernel did not write, down to a single padding byte) or came from memory
 * that was not initialised. Fields that differ by design (an event's id)
 * are checked and then equalised first.
 */
#define FILL_A 0xa5
#define FILL_B 0x5a

union reply {
	struct rdma_ucm_query_route_resp route;
	struct rdma_ucm_query_addr_resp addr;
	struct rdma_ucm_query_path_resp path;
	struct ib_uverbs_qp_attr attr;
	struct rdma_ucm_event_resp ev;
	uint8_t raw[1024];
};

static char leak_where[128];

/* Compares the first @len bytes of the two passes; 1 if they differ. */
static int leaked(const char *what, const union reply *a, const union reply *b, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (a->raw[i] != b->raw[i]) {
			if (!leak_where[0])
				snprintf(leak_where, sizeof(leak_where),
					 "%s: byte %zu of %zu is 0x%02x, then 0x%02x", what, i, len,
					 a->raw[i], b->raw[i]);
			return 1;
		}
	}
	return 0;
}

/* Runs the command @c (whose reply goes to *@resp) once per fill and compares. */
static int reply_leaks(const char *what, int fd, uint32_t op, void *c, uint16_t in_len,
		       __u64 *resp, uint16_t out_len, size_t check_len, union reply *a)
{
	union reply b;

	memset(a, FILL_A, sizeof(*a));
	*resp = (uintptr_t)a;
	OUTCOME(what, cmd(fd, op, c, in_len, out_len), 0);
	memset(&b, FILL_B, sizeof(b));
	*resp = (uintptr_t)&b;
	OUTCOME(what, cmd(fd, op, c, in_len, out_len), 0);
	return leaked(what, a, &b, check_len);
}

#define REPLY_LEAKS(what, fd, op, c, out, check, a) \
	reply_leaks(what, fd, op, &(c), sizeof(c), &(c).response, out, check, a)

#define IB_QP_AV (1 << 7)

static void class07_reply_infoleak(void)
{
	int fd = ucma_dev_open(), fl = ucma_dev_open(), fc = ucma_dev_open(), leaks = 0;
	uint32_t id, id2, l, c;
	union reply r, r2;
	struct rdma_ucm_query q = { 0 };
	struct rdma_ucm_query qr = { 0 };
	struct rdma_ucm_init_qp_attr ia = { .qp_state = 1 };
	struct rdma_ucm_get_event ge = { 0 };
	struct sockaddr_in a = with_port(rxe, port());
	unsigned int opt;
	char why[200];

	begin_case();
	leak_where[0] = 0;
	/* ADDR_RESOLVED of two UD ids: the same but for the id. */
	OUTCOME("create", create_id(fd, 0x77, RDMA_PS_UDP, &id), 0);
	OUTCOME("create", create_id(fd, 0x77, RDMA_PS_UDP, &id2), 0);
	OUTCOME("resolve", resolve_ip(fd, id, &rxe), 0);
	memset(&r, FILL_A, sizeof(r));
	OUTCOME("addr resolved", wait_event(fd, EV_ADDR_RESOLVED, &r.ev, 10000), 0);
	OUTCOME("resolve", resolve_ip(fd, id2, &rxe), 0);
	memset(&r2, FILL_B, sizeof(r2));
	OUTCOME("addr resolved", wait_event(fd, EV_ADDR_RESOLVED, &r2.ev, 10000), 0);
	if (r.ev.id != id || r2.ev.id != id2)
		OUTCOME("event ids", -1, 0);
	r2.ev.id = r.ev.id;
	leaks += leaked("ADDR_RESOLVED event", &r, &r2, sizeof(r.ev));

	qr.id = q.id = ia.id = id;
	leaks += REPLY_LEAKS("query_route", fd, RDMA_USER_CM_CMD_QUERY_ROUTE, qr,
			     sizeof(r.route), sizeof(r.route), &r);
	for (opt = RDMA_USER_CM_QUERY_ADDR; opt <= RDMA_USER_CM_QUERY_GID; opt++) {
		/* No route yet: QUERY_PATH answers num_paths 0 and nothing after. */
		q.option = opt;
		leaks += REPLY_LEAKS("query", fd, RDMA_USER_CM_CMD_QUERY, q, sizeof(r.addr),
				     opt == RDMA_USER_CM_QUERY_PATH ? sizeof(r.path) : sizeof(r.addr),
				     &r);
	}
	leaks += REPLY_LEAKS("init_qp_attr UD INIT", fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, ia,
			     sizeof(r.attr), sizeof(r.attr), &r);
	OUTCOME("user event", write_user_event(fd, id, EV_USER, 1, 2), 0);
	OUTCOME("user event", write_user_event(fd, id, EV_USER, 1, 2), 0);
	leaks += REPLY_LEAKS("get_event USER", fd, RDMA_USER_CM_CMD_GET_EVENT, ge,
			     sizeof(r.ev), sizeof(r.ev), &r);

	/* An RC child in REQ_RCVD moves to RTR with an address vector with GRH (RoCE). */
	if (route_to_listener(fl, fc, &a, &l, &c) == NULL) {
		OUTCOME("connect", connect_id(fc, c, 0x707), 0);
		OUTCOME("connect request", wait_event(fl, EV_CONNECT_REQUEST, &r.ev, 10000), 0);
		ia.id = r.ev.id;
		ia.qp_state = 2; /* IB_QPS_RTR */
		leaks += REPLY_LEAKS("init_qp_attr RC RTR", fl, RDMA_USER_CM_CMD_INIT_QP_ATTR, ia,
				     sizeof(r.attr), sizeof(r.attr), &r);
		if (!(r.attr.qp_attr_mask & IB_QP_AV) || !r.attr.ah_attr.is_global)
			OUTCOME("RTR attributes have an AV with GRH", -1, 0);
	} else {
		OUTCOME("listener and routed client", -1, 0);
	}
	close(fc);
	close(fl);
	close(fd);
	snprintf(why, sizeof(why), "a reply differed between two fills: %s", leak_where);
	end_case(__func__, !leaks, why);
}

/*
 * --- class 8: concurrent syscalls on one id ---
 * ENXIO: ucma_rs answers a command that lost the race with DESTROY_ID so,
 * where C makes the destroy wait (Documentation/abi.rst, deliberate
 * differences).
 */

static void c8_a(void *p)
{
	struct shared *s = p;

	OUTCOME("bind", bind_ip(s->fd, s->id, &s->addr), EINVAL, EADDRINUSE, ENOENT, ENXIO);
	OUTCOME("listen", listen_id(s->fd, s->id, 4), EINVAL, EADDRINUSE, ENOENT, ENXIO);
	OUTCOME("resolve", resolve_ip(s->fd, s->id, &s->addr), EINVAL, ENOENT, ENXIO);
}

static void c8_b(void *p)
{
	struct shared *s = p;
	struct sockaddr_in other = with_port(rxe, port());

	OUTCOME("resolve", resolve_ip(s->fd, s->id, &other), EINVAL, ENOENT, ENXIO);
	OUTCOME("bind", bind_ip(s->fd, s->id, &other), EINVAL, EADDRINUSE, ENOENT, ENXIO);
	OUTCOME("listen", listen_id(s->fd, s->id, 2), EINVAL, EADDRINUSE, ENOENT, ENXIO);
}

static void c8_destroy(void *p)
{
	struct shared *s = p;

	usleep(rand() % 200);
	/* The only destroyer: it destroys (C waits for the commands, ucma_rs fails them). */
	OUTCOME("destroy", destroy_id(s->fd, s->id, NULL), 0);
}

static void class08_concurrent_calls_on_one_id(void)
{
	static void (*const fns[])(void *) = { c8_a, c8_b, c8_destroy };
	struct shared s = { .fd = ucma_dev_open() };
	int i;

	begin_case();
	for (i = 0; i < iters; i++) {
		s.addr = with_port(rxe, port());
		create_id(s.fd, 1, RDMA_PS_TCP, &s.id);
		race(3, fns, &s);
	}
	close(s.fd);
	end_case(__func__, 1, "");
}

/* --- class 9: MIGRATE_ID against the handler, destroy and close --- */

static void c9_migrate(void *p)
{
	struct shared *s = p;
	int i;

	for (i = 0; i < 4; i++) {
		/* ENXIO: the context's destruction has begun (either module). */
		OUTCOME("migrate a->b", migrate_id(s->fd2, s->id, s->fd), ENOENT, EINVAL, EBADF, ENXIO);
		OUTCOME("migrate b->a", migrate_id(s->fd, s->id, s->fd2), ENOENT, EINVAL, EBADF, ENXIO);
	}
}

static void c9_events(void *p)
{
	struct shared *s = p;
	struct rdma_ucm_event_resp ev;
	int i;

	for (i = 0; i < 4; i++) {
		OUTCOME("user event a", write_user_event(s->fd, s->id, EV_USER, i, 0), EINVAL, ENOENT, ENXIO);
		OUTCOME("user event b", write_user_event(s->fd2, s->id, EV_USER, i, 0), EINVAL, ENOENT, EBADF,
			ENXIO);
		OUTCOME("resolve", resolve_ip(s->fd, s->id, &rxe), EINVAL, ENOENT, ENXIO);
		OUTCOME("get event", get_event(s->fd2, &ev, sizeof(ev)), EAGAIN, EBADF);
	}
}

static void c9_destroy_or_close(void *p)
{
	struct shared *s = p;

	usleep(rand() % 300);
	if (rand() & 1) {
		OUTCOME("destroy a", destroy_id(s->fd, s->id, NULL), ENOENT, EINVAL);
		OUTCOME("destroy b", destroy_id(s->fd2, s->id, NULL), ENOENT, EINVAL, EBADF);
	} else {
		/* Closing the migration target's other fd: the file stays pinned. */
		close(s->fd2);
	}
}

static void class09_migrate_vs_handler_destroy_close(void)
{
	static void (*const fns[])(void *) = { c9_migrate, c9_events, c9_destroy_or_close };
	struct shared s;
	int i;

	begin_case();
	for (i = 0; i < iters; i++) {
		s.fd = ucma_dev_open();
		s.fd2 = ucma_dev_open();
		set_nonblock(s.fd2, 1);
		create_id(s.fd, 5, RDMA_PS_UDP, &s.id);
		race(3, fns, &s);
		close(s.fd);
		close(s.fd2); /* EBADF if the racer closed it: harmless */
	}
	end_case(__func__, 1, "");
}

/* --- class 10: connect-request children against listener destroy --- */

static void c10_destroy_listener(void *p)
{
	struct shared *s = p;

	usleep(rand() % 2000);
	OUTCOME("destroy listener", destroy_id(s->fd, s->id, NULL), ENOENT);
}

static void c10_fetch(void *p)
{
	struct shared *s = p;
	struct rdma_ucm_event_resp ev;
	int i;

	for (i = 0; i < 4; i++) {
		if (next_event(s->fd, &ev, 100))
			continue;
		if (ev.event == EV_CONNECT_REQUEST)
			OUTCOME("destroy child", destroy_id(s->fd, ev.id, NULL), ENOENT);
	}
}

static void class10_listener_destroy_with_pending_requests(void)
{
	static void (*const fns[])(void *) = { c10_destroy_listener, c10_fetch };
	struct shared s;
	int i, n = iters / 10 + 1, c, requests = 0;

	begin_case();
	for (i = 0; i < n; i++) {
		int fc = ucma_dev_open();
		uint32_t client[3];

		s.fd = ucma_dev_open();
		/*
		 * Non-blocking: destroying the listener takes its unfetched
		 * requests off the queue between c10_fetch's poll() and its
		 * GET_EVENT, which would then wait for good (as with C).
		 */
		set_nonblock(s.fd, 1);
		s.addr = with_port(rxe, port());
		if (route_to_listener(s.fd, fc, &s.addr, &s.id, &client[0]))
			break;
		for (c = 1; c < 3; c++) {
			create_id(fc, 9, RDMA_PS_TCP, &client[c]);
			resolve_ip(fc, client[c], &s.addr);
			wait_event(fc, EV_ADDR_RESOLVED, NULL, 10000);
			resolve_route(fc, client[c]);
			wait_event(fc, EV_ROUTE_RESOLVED, NULL, 10000);
		}
		for (c = 0; c < 3; c++)
			requests += connect_id(fc, client[c], 0x100 + c) == 0;
		usleep(20000);
		race(2, fns, &s);
		close(s.fd);
		close(fc);
	}
	end_case(__func__, i == n && requests > 0, "the connections could not be set up");
}

/* --- class 11: device hot-removal --- */

static int sh(const char *cmdline)
{
	return system(cmdline);
}

static void c11_commands(void *p)
{
	struct shared *s = p;
	struct rdma_ucm_query_route_resp r;
	struct rdma_ucm_query q = { .id = s->id, .response = (uintptr_t)&r };
	struct rdma_ucm_event_resp ev;
	int i;

	for (i = 0; i < 200; i++) {
		OUTCOME("query_route", CMD(s->fd, RDMA_USER_CM_CMD_QUERY_ROUTE, q, sizeof(r)), ENXIO);
		OUTCOME("get_event", get_event(s->fd, &ev, sizeof(ev)), EAGAIN);
		usleep(500);
	}
}

static void c11_remove(void *p)
{
	(void)p;
	usleep(rand() % 20000);
	sh("rdma link delete rxer");
}

static void class11_device_hot_removal(void)
{
	static void (*const fns[])(void *) = { c11_commands, c11_remove };
	struct sockaddr_in a = ipv4("203.0.113.9", 0);
	struct shared s;
	int i, n = iters / 50 + 2, ok = 1;

	begin_case();
	/* Leftovers of a run killed at its timeout (no teardown) go first. */
	sh("rdma link delete rxer 2>/dev/null; ip link delete vethr0 2>/dev/null; true");
	if (sh("ip link add vethr0 type veth peer name vethr1 && ip addr add 203.0.113.9/24 dev vethr0 && ip link set vethr0 up && ip link set vethr1 up")) {
		end_case(__func__, 0, "no vethr0");
		return;
	}
	for (i = 0; i < n && ok; i++) {
		ok = sh("rdma link add rxer type rxe netdev vethr0 && for i in $(seq 50); do rdma link show rxer/1 | grep -q ACTIVE && exit 0; sleep 0.1; done; exit 1") == 0;
		s.fd = ucma_dev_open();
		set_nonblock(s.fd, 1);
		create_id(s.fd, 3, RDMA_PS_UDP, &s.id);
		resolve_ip(s.fd, s.id, &a);
		usleep(100000);
		race(2, fns, &s);
		close(s.fd);
	}
	sh("ip link delete vethr0");
	end_case(__func__, ok, "rxer could not be added");
}

/* --- class 12: multicast leave races --- */

static void c12_leave(void *p)
{
	struct shared *s = p;

	/* ENXIO: the context's destruction has begun. */
	OUTCOME("leave", leave_mc(s->fd, s->mc), ENOENT, ENXIO);
}

static void c12_destroy(void *p)
{
	struct shared *s = p;

	usleep(rand() % 100);
	/* The only destroyer: it destroys. */
	OUTCOME("destroy", destroy_id(s->fd, s->id, NULL), 0);
}

static void class12_multicast_concurrent_leave(void)
{
	static void (*const leaves[])(void *) = { c12_leave, c12_leave, c12_destroy };
	struct shared s = { .fd = ucma_dev_open() };
	struct sockaddr_in g = ipv4("239.1.2.12", 0);
	int i, n = iters / 4 + 1;

	begin_case();
	for (i = 0; i < n; i++) {
		create_id(s.fd, 4, RDMA_PS_UDP, &s.id);
		bind_ip(s.fd, s.id, &rxe);
		OUTCOME("join", join_ip(s.fd, s.id, &g, &s.mc), 0);
		race(3, leaves, &s);
		FAILS("destroyed", destroy_id(s.fd, s.id, NULL), ENOENT);
	}
	close(s.fd);
	end_case(__func__, 1, "");
}

/* --- class 13: JOIN whose reply copy fails after the join was queued --- */

static void class13_join_reply_fault(void)
{
	int fd = ucma_dev_open(), i, n = iters / 4 + 1, stray = 0;
	uint32_t id;
	struct sockaddr_in g = ipv4("239.1.2.13", 0);
	struct rdma_ucm_event_resp ev;

	begin_case();
	create_id(fd, 4, RDMA_PS_UDP, &id);
	bind_ip(fd, id, &rxe);
	for (i = 0; i < n; i++) {
		struct rdma_ucm_join_ip_mcast j = { .id = id, .uid = 0x13, .response = (uintptr_t)bad_ptr };

		memcpy(&j.addr, &g, sizeof(g));
		OUTCOME("faulting join", CMD(fd, RDMA_USER_CM_CMD_JOIN_IP_MCAST, j, 4), EFAULT);
	}
	/* The undone joins' events were purged: none may arrive. */
	set_nonblock(fd, 1);
	usleep(200000);
	while (next_event(fd, &ev, 50) == 0)
		stray += ev.uid == 0x13;
	destroy_id(fd, id, NULL);
	close(fd);
	end_case(__func__, !stray, "an event of an undone join was delivered");
}

/* --- class 14: multicast on non-UD ids; join work lifetime --- */

static void class14_multicast_on_non_ud_and_join_lifetime(void)
{
	int fd = ucma_dev_open(), i, n = iters / 4 + 1, rc_joined = 0;
	uint32_t id;
	struct sockaddr_in g = ipv4("239.1.2.14", 0);

	begin_case();
	create_id(fd, 4, RDMA_PS_TCP, &id);
	bind_ip(fd, id, &rxe);
	rc_joined = join_ip(fd, id, &g, NULL) == 0;
	OUTCOME("join on RC", join_ip(fd, id, &g, NULL), EINVAL, ENOTSUP, EOPNOTSUPP);
	destroy_id(fd, id, NULL);
	/* Join, then destroy at once: the queued join work must not outlive the id. */
	for (i = 0; i < n; i++) {
		create_id(fd, 4, RDMA_PS_UDP, &id);
		bind_ip(fd, id, &rxe);
		OUTCOME("join", join_ip(fd, id, &g, NULL), 0);
		OUTCOME("destroy", destroy_id(fd, id, NULL), 0);
	}
	close(fd);
	end_case(__func__, !rc_joined, "an RC id joined a group");
}

/* --- class 15: async address resolution against destroy --- */

static void c15_resolve(void *p)
{
	struct shared *s = p;

	OUTCOME("resolve", resolve_ip(s->fd, s->id, &s->addr), EINVAL, ENOENT, EADDRNOTAVAIL, ENXIO);
	OUTCOME("route", resolve_route(s->fd, s->id), EINVAL, ENOENT, ENXIO);
}

static void c15_destroy(void *p)
{
	struct shared *s = p;

	usleep(rand() % 3000);
	/* The only destroyer: it destroys. */
	OUTCOME("destroy", destroy_id(s->fd, s->id, NULL), 0);
}

static void class15_resolve_twice_vs_destroy(void)
{
	static void (*const fns[])(void *) = { c15_resolve, c15_resolve, c15_destroy };
	struct shared s = { .fd = ucma_dev_open() };
	int i;

	begin_case();
	for (i = 0; i < iters; i++) {
		s.addr = (i & 1) ? rxe : siw;
		create_id(s.fd, 6, RDMA_PS_TCP, &s.id);
		race(3, fns, &s);
	}
	close(s.fd);
	end_case(__func__, 1, "");
}

/* --- class 16: state checked before global state changes --- */

static void class16_wrong_state_ops_on_listener(void)
{
	int fl = ucma_dev_open(), fc = ucma_dev_open(), bad = 0, i;
	uint32_t l, c;
	struct sockaddr_in a = with_port(rxe, port());
	struct rdma_ucm_event_resp ev;

	begin_case();
	create_id(fl, 1, RDMA_PS_TCP, &l);
	bind_ip(fl, l, &a);
	listen_id(fl, l, 4);
	for (i = 0; i < 8; i++) {
		struct sockaddr_in other = with_port(siw, port());

		bad += resolve_ip(fl, l, &other) == 0;
		bad += bind_ip(fl, l, &other) == 0;
		OUTCOME("listen again", listen_id(fl, l, 4), EINVAL);
	}
	/* The listener still listens where it did. */
	create_id(fc, 2, RDMA_PS_TCP, &c);
	resolve_ip(fc, c, &a);
	wait_event(fc, EV_ADDR_RESOLVED, NULL, 10000);
	resolve_route(fc, c);
	wait_event(fc, EV_ROUTE_RESOLVED, NULL, 10000);
	connect_id(fc, c, 0x77);
	bad += wait_event(fl, EV_CONNECT_REQUEST, &ev, 10000) != 0;
	close(fc);
	close(fl);
	end_case(__func__, !bad, "a listener moved, or stopped listening");
}

/* --- class 17: listen error unwinds against device add/remove --- */

static void c17_listen(void *p)
{
	struct shared *s = p;
	int i;

	for (i = 0; i < 20; i++) {
		uint32_t id;
		struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(port()) };

		create_id(s->fd, 1, RDMA_PS_TCP, &id);
		OUTCOME("bind any", bind_ip(s->fd, id, &any), EADDRINUSE);
		OUTCOME("listen on all", listen_id(s->fd, id, 4), EADDRINUSE, ENODEV);
		OUTCOME("destroy", destroy_id(s->fd, id, NULL), 0);
	}
}

static void c17_device(void *p)
{
	(void)p;
	sh("rdma link add rxel type rxe netdev vethl0; sleep 0.2; rdma link delete rxel");
}

static void class17_listen_vs_device_add_remove(void)
{
	static void (*const fns[])(void *) = { c17_listen, c17_device };
	struct shared s = { .fd = ucma_dev_open() };
	int i, n = iters / 50 + 2;

	begin_case();
	sh("rdma link delete rxel 2>/dev/null; ip link delete vethl0 2>/dev/null; true");
	sh("ip link add vethl0 type veth peer name vethl1 && ip link set vethl0 up && ip link set vethl1 up");
	for (i = 0; i < n; i++)
		race(2, fns, &s);
	close(s.fd);
	sh("ip link delete vethl0");
	end_case(__func__, 1, "");
}

/* --- class 18: repeated route resolution --- */

#define EV_ROUTE_ERROR 3
#define C18_FAILS 2

/* Sets the MTU of the netdev @ifname: 0, or -1 with errno set. */
static int set_mtu(const char *ifname, int mtu)
{
	struct ifreq ifr = { .ifr_mtu = mtu };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret;

	if (s < 0)
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ret = ioctl(s, SIOCSIFMTU, &ifr);
	close(s);
	return ret;
}

/*
 * A failed RESOLVE_ROUTE puts the id back to ADDR_RESOLVED (the bug class:
 * resolving again must neither leak nor corrupt). In 7.3 a ROUTE_ERROR event
 * comes only from an IB SA path query (cma_query_handler()), which neither
 * rxe nor siw makes; on RoCE cma_resolve_iboe_route() fails before any work
 * is queued, and rdma_resolve_route() restores ADDR_RESOLVED itself. It
 * does not look at the link state, but it fails (EINVAL) when the netdev's
 * MTU leaves no IB MTU. So each id, on a private rxe device, fails to
 * resolve its route C18_FAILS times with the netdev's MTU at 100, then,
 * with the MTU back, resolves it (ROUTE_RESOLVED); a further RESOLVE_ROUTE
 * is then EINVAL. A ROUTE_ERROR event instead of the synchronous error
 * would do as well.
 */
static int c18_fail(int fd, uint32_t id)
{
	struct rdma_ucm_event_resp ev;

	if (resolve_route(fd, id) == 0)
		return next_event(fd, &ev, 5000) == 0 && ev.event == EV_ROUTE_ERROR;
	if (errno != EINVAL && errno != ENODEV)
		return 0;
	/* A synchronous error queues nothing. */
	return next_event(fd, &ev, 0) != 0;
}

static void class18_repeated_route_resolution(void)
{
	struct sockaddr_in a = ipv4("100.64.18.1", 0);
	int fd, i, j, n = iters / 4 + 1, routes = 0, errors = 0, refused = 0;
	struct rdma_ucm_event_resp ev;
	const char *why = NULL;
	static char why_buf[320];
	uint32_t id;

	begin_case();
	if (access("/sys/module/rdma_rxe", F_OK)) {
		ktap_skipped(__func__, "no rdma_rxe module");
		return;
	}
	sh("rdma link delete rxeq 2>/dev/null; ip link delete vethq0 2>/dev/null; true");
	if (sh("ip link add vethq0 type veth peer name vethq1 && ip addr add 100.64.18.1/24 dev vethq0 && ip link set vethq0 up && ip link set vethq1 up && rdma link add rxeq type rxe netdev vethq0 && for i in $(seq 50); do rdma link show rxeq/1 | grep -q ACTIVE && exit 0; sleep 0.1; done; exit 1"))
		why = "rxeq on vethq0 could not be set up";
	fd = ucma_dev_open();
	for (i = 0; i < n && !why; i++) {
		if (create_id(fd, 18, RDMA_PS_TCP, &id) || resolve_ip(fd, id, &a) ||
		    wait_event(fd, EV_ADDR_RESOLVED, NULL, 10000)) {
			why = "an address could not be resolved";
			break;
		}
		if (set_mtu("vethq0", 100)) {
			why = "the MTU could not be lowered";
			break;
		}
		for (j = 0; j < C18_FAILS && !why; j++) {
			if (c18_fail(fd, id))
				errors++;
			else
				why = "a resolution with MTU 100 neither failed nor gave ROUTE_ERROR";
		}
		if (set_mtu("vethq0", 1500)) {
			why = "the MTU could not be restored";
			break;
		}
		if (!why && resolve_route(fd, id) == 0 && next_event(fd, &ev, 10000) == 0 &&
		    ev.event == EV_ROUTE_RESOLVED)
			routes++;
		else if (!why)
			why = "a route did not resolve after failed resolutions";
		if (!why && resolve_route(fd, id) == -1 && errno == EINVAL)
			refused++;
		else if (!why)
			why = "RESOLVE_ROUTE after ROUTE_RESOLVED was not EINVAL";
		OUTCOME("destroy", destroy_id(fd, id, NULL), 0);
	}
	close(fd);
	sh("rdma link delete rxeq 2>/dev/null; ip link delete vethq0 2>/dev/null");
	stats(__func__, "%d ids: %d failed resolutions, %d routes, %d repeats refused", i, errors,
	      routes, refused);
	snprintf(why_buf, sizeof(why_buf), "%s (%d of %d ids: %d of %d resolutions failed, %d routes, %d repeats refused)",
		 why ? why : "", i, n, errors, n * C18_FAILS, routes, refused);
	end_case(__func__, !why && routes == n && errors == n * C18_FAILS && refused == n, why_buf);
}

/* --- class 19: netevent (the peer's MAC changes) against cm ids --- */

struct c19 {
	struct sockaddr_in addr;
	int fp, peer_sock, round, connects, unreachable, requests, connecting, flips;
};

/*
 * Ids here resolve a route to the peer (rdma_cm files them under the
 * peer's address for its netevent notifier), CONNECT, and are destroyed
 * after 0 to 5 ms, fetching what came meanwhile.
 */
static void c19_connect(void *p)
{
	struct c19 *c = p;
	struct rdma_ucm_event_resp ev;
	int fc = ucma_dev_open(), k;
	uint32_t id;

	for (k = 0; k < 4; k++) {
		if (create_id(fc, 0x19, RDMA_PS_TCP, &id))
			break;
		if (resolve_ip(fc, id, &c->addr) == 0 &&
		    wait_event(fc, EV_ADDR_RESOLVED, NULL, 10000) == 0 && resolve_route(fc, id) == 0 &&
		    wait_event(fc, EV_ROUTE_RESOLVED, NULL, 10000) == 0) {
			if (connect_id(fc, id, 0x19000 + k) == 0)
				__atomic_add_fetch(&c->connects, 1, __ATOMIC_RELAXED);
			else
				OUTCOME("connect", -1, EINVAL);
			usleep(rand() % 5000);
			while (next_event(fc, &ev, 0) == 0)
				if (ev.event == EV_UNREACHABLE)
					__atomic_add_fetch(&c->unreachable, 1, __ATOMIC_RELAXED);
		}
		OUTCOME("destroy client", destroy_id(fc, id, NULL), 0);
	}
	close(fc);
	__atomic_sub_fetch(&c->connecting, 1, __ATOMIC_RELEASE);
}

/*
 * The peer changes its MAC, and the neighbour entry here follows, until
 * both connecting threads are done.
 */
static void c19_flip(void *p)
{
	static const unsigned char macs[2][6] = { { 2, 0x19, 0, 0, 0, 1 }, { 2, 0x19, 0, 0, 0, 2 } };
	struct c19 *c = p;
	int k;

	for (k = 0; __atomic_load_n(&c->connecting, __ATOMIC_ACQUIRE); k++) {
		const unsigned char *mac = macs[(c->round + k) & 1];

		OUTCOME("change the peer's MAC", set_hwaddr(c->peer_sock, "vethn1", mac), 0);
		OUTCOME("update the neighbour", neigh_replace("vethn0", PEER_RXE_IP, mac), 0);
		c->flips++;
		usleep(rand() % 3000);
	}
}

/* The peer accepts the requests that arrive, and destroys the children. */
static void c19_accept(void *p)
{
	struct c19 *c = p;
	struct rdma_ucm_event_resp ev;

	while (next_event(c->fp, &ev, 300) == 0) {
		if (ev.event != EV_CONNECT_REQUEST)
			continue;
		c->requests++;
		OUTCOME("accept", accept_id(c->fp, ev.id, 0x19100, 1), EINVAL, ENOENT);
		OUTCOME("destroy child", destroy_id(c->fp, ev.id, NULL), 0);
	}
}

/*
 * rdma_cm's netevent work (UNREACHABLE) against DESTROY_ID: ids here
 * connect over RoCE to a listener of the peer (ucma_peer.h) while the peer
 * changes its MAC under them, and each is destroyed 0 to 5 ms later. At least one
 * UNREACHABLE must have been fetched (the class was reached), every
 * destroy succeeds, nothing is left.
 */
static void class19_netevent_vs_cm_ids(void)
{
	static void (*const fns[])(void *) = { c19_connect, c19_connect, c19_flip, c19_accept };
	int i, n = iters / 10 + 1, set_up = 0;
	struct c19 c = { 0 };
	static char why[200];
	uint32_t l;

	begin_case();
	if (access("/sys/module/rdma_rxe", F_OK) || access("/sys/module/siw", F_OK)) {
		ktap_skipped(__func__, "no rdma_rxe or siw module");
		return;
	}
	c.peer_sock = peer_up() == 0 ? peer_socket() : -1;
	if (c.peer_sock >= 0) {
		for (i = 0; i < n; i++) {
			c.round = i;
			c.connecting = 2;
			c.addr = with_port(ipv4(PEER_RXE_IP, 0), port());
			c.fp = ucma_dev_open();
			if (peer_enter() == 0 && create_id(c.fp, 0x91, RDMA_PS_TCP, &l) == 0 &&
			    bind_ip(c.fp, l, &c.addr) == 0 && listen_id(c.fp, l, 64) == 0) {
				set_up++;
				peer_leave();
				race(4, fns, &c);
			} else {
				peer_leave();
			}
			close(c.fp);
		}
	}
	if (c.peer_sock > 0)
		close(c.peer_sock);
	peer_down();
	stats(__func__, "%d rounds: %d connects, %d requests, %d MAC changes, %d UNREACHABLE",
	      set_up, c.connects, c.requests, c.flips, c.unreachable);
	snprintf(why, sizeof(why),
		 "%d of %d rounds set up, %d connects, %d requests, %d MAC changes, %d UNREACHABLE",
		 set_up, n, c.connects, c.requests, c.flips, c.unreachable);
	end_case(__func__, set_up == n && c.unreachable > 0, why);
}

/* --- class 20: synthesised events against migrate: counts stay exact --- */

static void c20_write(void *p)
{
	struct shared *s = p;
	int i;

	for (i = 0; i < 8; i++) {
		/* One of the two files owns the id at any time. */
		if (write_user_event(s->fd, s->id, EV_USER, i, 0) &&
		    write_user_event(s->fd2, s->id, EV_USER, i, 0))
			__atomic_add_fetch(&s->mc, 1, __ATOMIC_RELAXED); /* lost writes */
	}
}

static void c20_migrate(void *p)
{
	struct shared *s = p;
	int i;

	for (i = 0; i < 8; i++) {
		OUTCOME("migrate", migrate_id(s->fd2, s->id, s->fd), EINVAL);
		OUTCOME("migrate back", migrate_id(s->fd, s->id, s->fd2), EINVAL);
	}
}

static void class20_synthesised_events_vs_migrate(void)
{
	static void (*const fns[])(void *) = { c20_write, c20_migrate };
	struct shared s;
	int i, n = iters / 4 + 1, wrong = 0;

	begin_case();
	for (i = 0; i < n; i++) {
		struct rdma_ucm_event_resp ev;
		uint32_t got = 0, rep = ~0u;

		s.fd = ucma_dev_open();
		s.fd2 = ucma_dev_open();
		s.mc = 0;
		set_nonblock(s.fd, 1);
		set_nonblock(s.fd2, 1);
		create_id(s.fd, 20, RDMA_PS_UDP, &s.id);
		race(2, fns, &s);
		while (get_event(s.fd, &ev, sizeof(ev)) == 0)
			got++;
		while (get_event(s.fd2, &ev, sizeof(ev)) == 0)
			got++;
		if (destroy_id(s.fd, s.id, &rep) && destroy_id(s.fd2, s.id, &rep))
			wrong++;
		/* Every event written is fetched exactly once and counted. */
		wrong += got != 8 - s.mc || rep != got;
		close(s.fd);
		close(s.fd2);
	}
	end_case(__func__, !wrong, "events were lost, duplicated or miscounted");
}

/* --- synthesised events against destroy: none outlives its id --- */

static void c20d_write(void *p)
{
	struct shared *s = p;
	int i;

	for (i = 0; i < 64; i++) {
		long rc = write_user_event(s->fd, s->id, EV_USER, i, 0);

		if (rc) {
			OUTCOME("write_cm_event", rc, ENOENT, ENXIO);
			break;
		}
	}
}

static void c20d_destroy(void *p)
{
	struct shared *s = p;
	uint32_t rep = ~0u;

	OUTCOME("destroy", destroy_id(s->fd, s->id, &rep), 0);
	s->mc = rep;
}

/*
 * Two threads write events on an id while a third destroys it: the destroy
 * takes the id's queued events along and every write after it fails, so
 * the file is left with no event (one queued behind the destroy would name
 * an id that is gone), and the destroy reports none delivered.
 */
static void synthesised_events_vs_destroy(void)
{
	static void (*const fns[])(void *) = { c20d_write, c20d_write, c20d_destroy };
	struct shared s;
	int i, n = iters / 2 + 1, stale = 0, miscounted = 0;
	char why[128];

	begin_case();
	for (i = 0; i < n; i++) {
		struct rdma_ucm_event_resp ev;

		s.fd = ucma_dev_open();
		set_nonblock(s.fd, 1);
		create_id(s.fd, 21, RDMA_PS_UDP, &s.id);
		race(3, fns, &s);
		while (get_event(s.fd, &ev, sizeof(ev)) == 0)
			stale++;
		miscounted += s.mc != 0;
		close(s.fd);
	}
	snprintf(why, sizeof(why), "%d rounds: %d events outlived their id, %d destroys counted some",
		 n, stale, miscounted);
	end_case(__func__, !stale && !miscounted, why);
}

/* --- LISTEN against MIGRATE_ID: the listener is listed where its id is --- */

/* The "rdma_cm_listener:" lines of @fd's fdinfo (ucma_rs), or -1. */
static int listener_lines(int fd)
{
	char path[64], line[256];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += !strncmp(line, "rdma_cm_listener:", 17);
	fclose(f);
	return n;
}

/* Busy-waits @n loop turns. */
static void spin(int n)
{
	for (; n > 0; n--)
		__asm__ __volatile__("" : : : "memory");
}

/* Busy-waits up to @n loop turns (a finer jitter than usleep's). */
static void spin_jitter(int n)
{
	spin(rand() % (n + 1));
}

static int clm_spin = 15000, clm_lead = 30000;

static void clm_listen(void *p)
{
	struct shared *s = p;
	long rc;

	spin_jitter(clm_spin);
	rc = listen_id(s->fd, s->id, 4);

	/* EINVAL: the lookup came after the migration (the id is fd2's). */
	OUTCOME("listen", rc, EINVAL);
	s->mc = !rc;
}

static void clm_migrate(void *p)
{
	struct shared *s = p;

	/* A head start for LISTEN, so that its lookup often lands in the window. */
	spin(clm_lead);
	spin_jitter(clm_spin);
	OUTCOME("migrate", migrate_id(s->fd2, s->id, s->fd), 0);
}

/*
 * LISTEN on an id while MIGRATE_ID moves it to another file: a LISTEN whose
 * lookup passed before the move and that ran after it (it waits for the
 * id's command lock, which MIGRATE_ID holds) still succeeds, as in C. Its
 * listener line (fdinfo) must be on the file the id is on now, and gone
 * with the id: listed on the file LISTEN was called on, it stayed there
 * after the id was destroyed, keeping the listener's state alive. The
 * window is narrow (MIGRATE_ID's first steps under the lock): before the
 * fix, with MIGRATE_ID started RACE_LM_LEAD loop turns after LISTEN and a
 * jitter of up to half that on both (RACE_LM_SPIN), rounds in 500 that hit
 * it on the default kernel: 13, 27, 28, 10 and 5 at leads of 15000, 25000,
 * 40000, 60000 and 90000 turns (1 in 500 without a lead); the lead is
 * 30000. 2.5 rounds per iteration, 500 there (0.6 s).
 */
static void listen_vs_migrate(void)
{
	static void (*const fns[])(void *) = { clm_listen, clm_migrate };
	struct shared s;
	int i, n = iters * 5 / 2, listened = 0, misplaced = 0, stale = 0;
	char why[160];

	if (getenv("RACE_LM_SPIN"))
		clm_spin = atoi(getenv("RACE_LM_SPIN"));
	if (getenv("RACE_LM_LEAD"))
		clm_lead = atoi(getenv("RACE_LM_LEAD"));
	begin_case();
	for (i = 0; i < n; i++) {
		struct sockaddr_in a = with_port(rxe, port());

		s.fd = ucma_dev_open();
		s.fd2 = ucma_dev_open();
		create_id(s.fd, 22, RDMA_PS_TCP, &s.id);
		OUTCOME("bind", bind_ip(s.fd, s.id, &a), 0);
		race(2, fns, &s);
		listened += s.mc;
		if (!is_c)
			misplaced += listener_lines(s.fd) != 0 || listener_lines(s.fd2) != (int)s.mc;
		OUTCOME("destroy", destroy_id(s.fd2, s.id, NULL), 0);
		if (!is_c)
			stale += listener_lines(s.fd) != 0 || listener_lines(s.fd2) != 0;
		close(s.fd);
		close(s.fd2);
	}
	snprintf(why, sizeof(why),
		 "%d rounds, %d listened: %d with the listener line off the id's file, %d with one left after the destroy",
		 n, listened, misplaced, stale);
	stats(__func__, "%d rounds, %d LISTENs succeeded", n, listened);
	end_case(__func__, !misplaced && !stale, why);
}

/* --- class 21: write() from a foreign context --- */

static void class21_foreign_writer(void)
{
	int fd = ucma_dev_open(), status = 0;
	pid_t pid;

	begin_case();
	pid = fork();
	if (pid == 0) {
		uint32_t id;

		if (setresuid(65534, 65534, 65534))
			_exit(3);
		_exit(create_id(fd, 1, RDMA_PS_TCP, &id) == -1 && errno == EACCES ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	close(fd);
	end_case(__func__, WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "another user's write through an inherited fd was not EACCES");
}

/* --- class 22: error-path and teardown leaks --- */

static void class22_error_path_leaks(void)
{
	int fd = ucma_dev_open(), i;
	uint32_t id;
	struct sockaddr_in g = ipv4("239.1.2.22", 0);

	begin_case();
	for (i = 0; i < iters; i++) {
		struct rdma_ucm_create_id c = { .uid = 1, .ps = RDMA_PS_UDP, .response = (uintptr_t)bad_ptr };
		struct rdma_ucm_destroy_id d = { .response = (uintptr_t)bad_ptr };

		FAILS("faulting create", CMD(fd, RDMA_USER_CM_CMD_CREATE_ID, c, 4), EFAULT);
		OUTCOME("create", create_id(fd, 1, RDMA_PS_UDP, &id), 0);
		OUTCOME("bind", bind_ip(fd, id, &rxe), 0);
		if (i % 8 == 0)
			OUTCOME("join", join_ip(fd, id, &g, NULL), 0);
		/* A destroy whose reply faults has still destroyed. */
		d.id = id;
		FAILS("faulting destroy", CMD(fd, RDMA_USER_CM_CMD_DESTROY_ID, d, 4), EFAULT);
		FAILS("destroyed", destroy_id(fd, id, NULL), ENOENT);
	}
	close(fd);
	end_case(__func__, 1, "");
}

/* --- class 23: iw_cm handler against destroy (siw) --- */

struct c23 {
	struct shared s;
	uint32_t qpn_active, qpn_passive;
	int delay_us, connects, requests, accepts;
};

static void c23_connect_destroy(void *p)
{
	struct c23 *c = p;

	if (connect_id(c->s.fd2, c->s.id2, c->qpn_active) == 0)
		c->connects++;
	else
		OUTCOME("connect", -1, ECONNREFUSED, ECONNRESET);
	usleep(rand() % c->delay_us);
	OUTCOME("destroy client", destroy_id(c->s.fd2, c->s.id2, NULL), 0);
}

static void c23_accept_destroy(void *p)
{
	struct c23 *c = p;
	struct rdma_ucm_event_resp ev;

	if (wait_event(c->s.fd, EV_CONNECT_REQUEST, &ev, 2000) == 0) {
		c->requests++;
		if (accept_id(c->s.fd, ev.id, c->qpn_passive, 1) == 0)
			c->accepts++;
		else
			OUTCOME("accept", -1, EINVAL, ENOENT, ECONNREFUSED, ECONNRESET, ENOTCONN);
		OUTCOME("destroy child", destroy_id(c->s.fd, ev.id, NULL), 0);
	}
}

/*
 * A client connects with a real QP and is destroyed after 0 to 2 or 0 to
 * 20 ms, while the listener's file accepts the request (with another QP)
 * and destroys the child: the destroys race cma_iw_handler() and the iw_cm
 * work of both sides. At least one accept must succeed (the race was run),
 * and, as after every case, no rdma_cm id may be left.
 */
static void class23_iw_handler_vs_destroy(void)
{
	static void (*const fns[])(void *) = { c23_connect_destroy, c23_accept_destroy };
	const char *dev = ucma_env.siw_dev;
	struct ibv_context *vctx = open_verbs(dev);
	int i, n = iters / 10 + 1, set_up = 0, qp_errors = 0;
	struct ibv_qp *qa, *qp;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct c23 c = { 0 };
	static char why[240];

	begin_case();
	if (!vctx) {
		snprintf(why, sizeof(why), "no verbs device %s", dev);
		ktap_skipped(__func__, why);
		return;
	}
	pd = ibv_alloc_pd(vctx);
	cq = pd ? ibv_create_cq(vctx, 16, NULL, NULL, 0) : NULL;
	for (i = 0; i < n && cq; i++) {
		qa = rc_qp(pd, cq);
		qp = rc_qp(pd, cq);
		c.s.fd = ucma_dev_open();
		c.s.fd2 = ucma_dev_open();
		c.s.addr = with_port(siw, port());
		c.delay_us = i & 1 ? 20000 : 2000;
		if (qa && qp && route_to_listener(c.s.fd, c.s.fd2, &c.s.addr, &c.s.id, &c.s.id2) == NULL) {
			set_up++;
			c.qpn_active = qa->qp_num;
			c.qpn_passive = qp->qp_num;
			race(2, fns, &c);
		}
		close(c.s.fd2);
		close(c.s.fd);
		qp_errors += qa ? ibv_destroy_qp(qa) != 0 : 1;
		qp_errors += qp ? ibv_destroy_qp(qp) != 0 : 1;
	}
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(vctx);
	stats(__func__, "%d rounds set up, %d connects, %d requests, %d accepts",
	      set_up, c.connects, c.requests, c.accepts);
	snprintf(why, sizeof(why),
		 "%d of %d rounds set up (QP errors %d), %d connects, %d requests, %d accepts",
		 set_up, n, qp_errors, c.connects, c.requests, c.accepts);
	end_case(__func__, cq && set_up == n && !qp_errors && c.accepts > 0, why);
}

/*
 * --- race amplifiers for the review findings' cases ---
 * Some windows are only a few instructions wide. Threads of a case can be
 * put on one CPU, one of them SCHED_FIFO: when it wakes it preempts the
 * others wherever they are, and runs until it blocks. Best effort: without
 * the privilege the case still races, only less often.
 */

static cpu_set_t all_cpus;

static void pin_to_cpu0(int fifo)
{
	struct sched_param sp = { .sched_priority = fifo };
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	if (fifo)
		pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

static void unpin(void)
{
	struct sched_param sp = { .sched_priority = 0 };

	pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
	sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
}

/*
 * --- review finding 3: MIGRATE_ID against close() of its source fd ---
 * The command must hold the source file until it is done (C: CLASS(fd)).
 * If it does not, close() runs release() mid-migration: release() takes
 * the context off the old file and destroys it while MIGRATE_ID moves it,
 * and MIGRATE_ID reports success for an id that is gone. release()
 * destroys in creation order; two migrators walk the ids from both ends,
 * so each meets it once per round. A long event queue on the old file
 * (user events of one more id) makes both sides hold that file's lock
 * for a while, so that they wait for each other right where it matters.
 */

#define MVC_IDS 32
#define MVC_EVENTS 2000

struct mvc {
	int fd1, fd2;
	uint32_t id[MVC_IDS];
	int err[MVC_IDS];	/* 0, or the errno of the MIGRATE_ID */
};

static void mvc_migrate(struct mvc *m, int i, int step)
{
	for (; i >= 0 && i < MVC_IDS; i += step)
		m->err[i] = migrate_id(m->fd2, m->id[i], m->fd1) ? errno : 0;
}

static void mvc_up(void *p)
{
	mvc_migrate(p, 0, 2);
}

static void mvc_down(void *p)
{
	mvc_migrate(p, MVC_IDS - 1, -2);
}

static void mvc_close(void *p)
{
	struct mvc *m = p;

	usleep(rand() % 200);
	close(m->fd1);
}

static void migrate_vs_source_close(void)
{
	static void (*const fns[])(void *) = { mvc_up, mvc_down, mvc_close };
	int r, i, n = iters / 2 + 1, moved = 0, refused = 0, lost = 0;
	uint32_t filler;
	char why[160];
	struct mvc m;

	begin_case();
	for (r = 0; r < n; r++) {
		m.fd1 = ucma_dev_open();
		m.fd2 = ucma_dev_open();
		for (i = 0; i < MVC_IDS; i++) {
			create_id(m.fd1, 0x30, RDMA_PS_UDP, &m.id[i]);
			m.err[i] = -1;
		}
		create_id(m.fd1, 0x36, RDMA_PS_UDP, &filler);
		for (i = 0; i < MVC_EVENTS; i++)
			write_user_event(m.fd1, filler, EV_USER, i, 0);
		race(3, fns, &m);
		for (i = 0; i < MVC_IDS; i++) {
			struct rdma_ucm_query_addr_resp a;
			struct rdma_ucm_query q = { .id = m.id[i],
						    .option = RDMA_USER_CM_QUERY_ADDR,
						    .response = (uintptr_t)&a };

			if (m.err[i] == 0) {
				/* Migrated: the id answers on its new file. */
				moved++;
				if (CMD(m.fd2, RDMA_USER_CM_CMD_QUERY, q, sizeof(a))) {
					lost++;
					OUTCOME("query of a migrated id", -1, 0);
				}
			} else {
				/*
				 * Refused: ENOENT (the fd is closed, or release()
				 * took the id first), ENXIO (ucma_rs: its
				 * destruction has begun).
				 */
				refused++;
				errno = m.err[i];
				OUTCOME("migrate", -1, ENOENT, ENXIO);
			}
		}
		close(m.fd2);
	}
	stats(__func__, "%d rounds: %d migrated, %d refused, %d migrated ids gone", n, moved,
	      refused, lost);
	snprintf(why, sizeof(why),
		 "%d of %d ids that MIGRATE_ID reported moved were gone from the new file (%d refused)",
		 lost, moved, refused);
	end_case(__func__, !lost, why);
}

/*
 * --- review finding 4: JOIN against DESTROY_ID, then another file's join ---
 * A join's multicast id is reserved until the join is published. If the
 * publish happens after the context's lock is dropped, DESTROY_ID can free
 * the reserved id in between, another file's JOIN gets the same id, and
 * the late publish overwrites that join: its LEAVE fails with EINVAL and
 * the dead join keeps its id for good. Multicast ids are lowest free first,
 * so thread A leaves each join before the next (its join in flight is the
 * lowest it holds) and thread C joins and leaves one group again and again
 * on its own file. All three share CPU 0, the destroyer SCHED_FIFO: when
 * it waits for A's join to drop the context's lock, it preempts A right
 * there.
 */

struct jvd {
	int fd1, fd2;
	uint32_t id, id2;
	int round, destroyed, foreign_leaves, max_mc, stale;
	int leave_failed, leave_errno;
};

static struct sockaddr_in group(int a, int b, int c)
{
	struct sockaddr_in g = { .sin_family = AF_INET };

	g.sin_addr.s_addr = htonl(0xef000000u | (a & 0xff) << 16 | (b & 0xff) << 8 | (c & 0xff));
	return g;
}

static void jvd_note_mc(struct jvd *s, uint32_t mc)
{
	int cur = __atomic_load_n(&s->max_mc, __ATOMIC_RELAXED);

	while ((int)mc > cur && mc < 4096 &&
	       !__atomic_compare_exchange_n(&s->max_mc, &cur, (int)mc, 0, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

static void jvd_join(void *p)
{
	struct jvd *s = p;
	uint32_t mc;
	long ret;
	int j;

	if (!getenv("NOPIN"))
		pin_to_cpu0(0);
	/* Distinct groups: a second join of one group on one id may be refused. */
	for (j = 0; j < 64; j++) {
		struct sockaddr_in g = group(2, s->round, j);

		ret = join_ip(s->fd1, s->id, &g, &mc);
		OUTCOME("join", ret, ENOENT, ENXIO);
		if (ret)
			break;
		jvd_note_mc(s, mc);
		/*
		 * ENOENT, ENXIO: the id was destroyed (its joins with it);
		 * EINVAL: and the multicast id was given to thread C's join.
		 */
		ret = leave_mc(s->fd1, mc);
		OUTCOME("own leave", ret, ENOENT, ENXIO, EINVAL);
		s->stale += ret && errno == EINVAL;
	}
	unpin();
}

static void jvd_destroy(void *p)
{
	struct jvd *s = p;

	if (!getenv("NOPIN"))
		pin_to_cpu0(1);
	usleep(rand() % 600);
	OUTCOME("destroy", destroy_id(s->fd1, s->id, NULL), 0);
	__atomic_store_n(&s->destroyed, 1, __ATOMIC_RELEASE);
	unpin();
}

static void jvd_foreign(void *p)
{
	struct jvd *s = p;
	struct sockaddr_in g = group(3, s->round >> 8, s->round);
	int j, after = 0;
	uint32_t mc;

	if (!getenv("NOPIN"))
		pin_to_cpu0(0);
	/* Join and leave until a few rounds after the destroy. */
	for (j = 0; j < 400 && after < 4; j++) {
		after += __atomic_load_n(&s->destroyed, __ATOMIC_ACQUIRE);
		if (join_ip(s->fd2, s->id2, &g, &mc)) {
			OUTCOME("foreign join", -1, 0);
			break;
		}
		jvd_note_mc(s, mc);
		if (leave_mc(s->fd2, mc)) {
			/* EINVAL: the id now names another file's (dead) join. */
			if (!s->leave_failed++)
				s->leave_errno = errno;
			break;
		}
		s->foreign_leaves++;
	}
	unpin();
}

static void join_vs_destroy_then_foreign_leave(void)
{
	static void (*const fns[])(void *) = { jvd_join, jvd_destroy, jvd_foreign };
	struct jvd s = { .max_mc = 0 };
	int r, n = getenv("JVD_ROUNDS") ? atoi(getenv("JVD_ROUNDS")) : iters / 2 + 1, empty;
	char why[200];

	begin_case();
	s.fd2 = ucma_dev_open();
	create_id(s.fd2, 0x32, RDMA_PS_UDP, &s.id2);
	OUTCOME("bind foreign id", bind_ip(s.fd2, s.id2, &rxe), 0);
	for (r = 0; r < n && !s.leave_failed; r++) {
		s.fd1 = ucma_dev_open();
		s.round = r;
		s.destroyed = 0;
		create_id(s.fd1, 0x33, RDMA_PS_UDP, &s.id);
		OUTCOME("bind", bind_ip(s.fd1, s.id, &rxe), 0);
		race(3, fns, &s);
		close(s.fd1);
	}
	close(s.fd2);
	empty = multicast_table_empty(&rxe, s.max_mc + 2);
	stats(__func__, "%d rounds, %d foreign leaves, %d stale own leaves, highest multicast id %d",
	      r, s.foreign_leaves, s.stale, s.max_mc);
	snprintf(why, sizeof(why),
		 "%d foreign LEAVE failed (errno %d, %s) in round %d of %d; multicast table %s",
		 s.leave_failed, s.leave_errno, strerror(s.leave_errno), r, n,
		 empty ? "empty afterwards" : "not empty after every file was closed");
	end_case(__func__, !s.leave_failed && empty, why);
}

/*
 * --- review finding 5: a connect request lands on a released file ---
 * Requests on a wildcard listener run under the handler lock of rdma_cm's
 * per-device listener, not the wildcard one that MIGRATE_ID takes; the
 * request handler can read the listener's file, MIGRATE_ID move the
 * listener and close() release that file, and the handler then put the
 * child on the released file, where nothing ever destroys its rdma_cm id.
 * A client keeps requests coming (CONNECT with a made-up QP number: rxe's
 * ib_cm sends the REQ anyway) while a migrator moves the listener to a new
 * file and closes the old one, again and again; the migrator is SCHED_FIFO
 * on CPU 0 with the client, so it preempts the request handler whenever
 * that runs there. Afterwards no cm_id may be left (rdma resource show
 * cm_id). Every child is destroyed by the migrator, through the file it
 * is on (see crm_drain()).
 */

#define CRM_RING 6

struct crm {
	int fl, done, connects, migrations, moved;
	uint32_t listener;
	struct sockaddr_in dst;
	int n;
};

static void crm_client(void *p)
{
	struct crm *s = p;
	uint32_t ring[CRM_RING], id;
	int fc = ucma_dev_open(), i;

	pin_to_cpu0(0);
	for (i = 0; i < CRM_RING; i++)
		ring[i] = ~0u;
	for (i = 0; i < s->n; i++) {
		uint32_t *slot = &ring[i % CRM_RING];

		/* A few requests in flight: the oldest one goes. */
		if (*slot != ~0u)
			OUTCOME("destroy client", destroy_id(fc, *slot, NULL), 0);
		*slot = ~0u;
		if (create_id(fc, 0x34, RDMA_PS_TCP, &id))
			break;
		*slot = id;
		if (resolve_ip(fc, id, &s->dst) || wait_event(fc, EV_ADDR_RESOLVED, NULL, 5000) ||
		    resolve_route(fc, id) || wait_event(fc, EV_ROUTE_RESOLVED, NULL, 5000))
			continue;
		s->connects += connect_id(fc, id, 0x2400 + i) == 0;
	}
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	close(fc);
	unpin();
}

/*
 * Fetches @fd's connect requests and destroys their children. A request
 * that MIGRATE_ID moved along with the listener keeps its child on the file
 * the request was queued on (as in ucma.c): destroying it through @fd
 * answers EINVAL (another file's id), and through @old succeeds.
 */
static void crm_drain(struct crm *s, int fd, int old)
{
	struct rdma_ucm_event_resp ev;
	long ret;

	while (get_event(fd, &ev, sizeof(ev)) == 0) {
		if (ev.event != EV_CONNECT_REQUEST)
			continue;
		ret = destroy_id(fd, ev.id, NULL);
		if (ret && errno == EINVAL && old >= 0) {
			ret = destroy_id(old, ev.id, NULL);
			s->moved++;
		}
		OUTCOME("destroy child", ret, 0);
	}
}

static void crm_migrate(void *p)
{
	struct crm *s = p;

	pin_to_cpu0(1);
	while (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
		int nf;
		long ret;

		usleep(rand() % 300);
		crm_drain(s, s->fl, -1);
		nf = ucma_dev_open();
		set_nonblock(nf, 1);
		ret = migrate_id(nf, s->listener, s->fl);
		OUTCOME("migrate listener", ret, 0);
		if (ret) {
			close(nf);
			break;
		}
		/*
		 * Requests queued before the migration moved with it; their
		 * children die with the old file unless destroyed first, and
		 * then the id an event names may already be someone else's.
		 */
		crm_drain(s, nf, s->fl);
		close(s->fl);
		s->fl = nf;
		s->migrations++;
	}
	unpin();
}

static void connect_request_vs_migrate_close(void)
{
	static void (*const fns[])(void *) = { crm_client, crm_migrate };
	struct sockaddr_in any = { .sin_family = AF_INET };
	const char *mod = getenv("UCMA_MODULE");
	struct crm s = { .n = iters * 2 };
	int before, after = -1, i;
	char why[160];

	if (mod && !strcmp(mod, "c") && !getenv("RACE_FORCE")) {
		ktap_skipped(__func__,
			     "C rdma_ucm: ucma_connect_event_handler() uses listen_ctx->file under the per-device listener's handler lock only, so MIGRATE_ID + close() can free that file under it (use-after-free)");
		return;
	}
	begin_case();
	before = listed_cm_ids();
	any.sin_port = htons(port());
	s.dst = with_port(rxe, ntohs(any.sin_port));
	s.fl = ucma_dev_open();
	set_nonblock(s.fl, 1);
	create_id(s.fl, 0x35, RDMA_PS_TCP, &s.listener);
	OUTCOME("bind wildcard", bind_ip(s.fl, s.listener, &any), 0);
	OUTCOME("listen", listen_id(s.fl, s.listener, 1000), 0);
	race(2, fns, &s);
	close(s.fl);
	/* Children die with the files; give deferred teardown a moment. */
	for (i = 0; i < 20; i++) {
		after = listed_cm_ids();
		if (after == before)
			break;
		usleep(100000);
	}
	stats(__func__, "%d connects, %d migrations, %d requests moved with the listener, cm_ids %d before, %d after",
	      s.connects, s.migrations, s.moved, before, after);
	snprintf(why, sizeof(why),
		 "%d connects, %d migrations; %d cm_ids before, %d after (-1: no rdma tool)",
		 s.connects, s.migrations, before, after);
	end_case(__func__, before >= 0 && after == before && s.connects > 0, why);
}

/*
 * GET_EVENT sleepers and the one-sleeper wake-up. ucma_rs wakes one
 * blocked GET_EVENT per queued event (an exclusive wait); a sleeper that
 * leaves without its event must pass the wake-up on, or the event stays
 * queued while the others sleep. Reader A blocks first, with a reply buffer
 * that faults; reader B blocks after it, with a good one; one event is
 * written. In ucma_rs A is woken first (exclusive waiters are woken in
 * order) and fails with EFAULT, leaving the event queued: B must still get
 * it. (The C module wakes both; whichever reaches the queue first decides.)
 * Then 4 readers fetch 50 * RACE_ITERS events
 * from a writer, every one of them within 5 s of the last write.
 */
struct sleeper {
	int fd;
	void *response;
	long ret;
	int err;
	int done;
};

static void *sleeper_get_event(void *arg)
{
	struct sleeper *s = arg;
	struct rdma_ucm_get_event g = { .response = (uintptr_t)s->response };

	s->ret = CMD(s->fd, RDMA_USER_CM_CMD_GET_EVENT, g, sizeof(struct rdma_ucm_event_resp));
	s->err = errno;
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

struct readers {
	int fd;
	long total, fetched;
};

static void *reader_loop(void *arg)
{
	struct readers *r = arg;
	struct rdma_ucm_event_resp ev;

	while (__atomic_load_n(&r->fetched, __ATOMIC_ACQUIRE) < r->total) {
		if (get_event(r->fd, &ev, sizeof(ev)))
			return NULL;
		if (ev.param.arg32[0] != 0xdead)
			__atomic_add_fetch(&r->fetched, 1, __ATOMIC_ACQ_REL);
	}
	return NULL;
}

static int wait_flag(int *flag, int ms)
{
	for (int i = 0; i < ms && !__atomic_load_n(flag, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

static void get_event_wakeup_passed_on(void)
{
	struct rdma_ucm_event_resp ev;
	struct sleeper a = { .response = bad_ptr }, b = { .response = &ev };
	struct readers r = { .total = 50L * iters };
	pthread_t ta, tb, rd[4];
	static char why[200];
	int fd = ucma_dev_open(), ok = 0, i;
	uint32_t id;
	long left;

	begin_case();
	why[0] = 0;
	if (fd < 0 || create_id(fd, 1, RDMA_PS_TCP, &id)) {
		snprintf(why, sizeof(why), "open or CREATE_ID: %s", strerror(errno));
		goto out;
	}
	a.fd = b.fd = fd;
	pthread_create(&ta, NULL, sleeper_get_event, &a);
	usleep(200000);
	pthread_create(&tb, NULL, sleeper_get_event, &b);
	usleep(200000);
	write_user_event(fd, id, EV_USER, 0, 1);
	/*
	 * B must get the event. A either failed with EFAULT (ucma_rs; C when A
	 * reached the queue first) or sleeps on (C, when B was first).
	 */
	ok = wait_flag(&b.done, 5000) && b.ret == 0 &&
	     (!a.done || (a.ret == -1 && a.err == EFAULT));
	if (!ok)
		snprintf(why, sizeof(why),
			 "one event, two sleepers: the faulting one %s (%ld, errno %d), the other %s (%ld)",
			 a.done ? "returned" : "still asleep", a.ret, a.err,
			 b.done ? "returned" : "still asleep", b.ret);
	/* Wake whoever still sleeps, so that both threads end. */
	write_user_event(fd, id, EV_USER, 0, 0xdead);
	write_user_event(fd, id, EV_USER, 0, 0xdead);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);

	r.fd = fd;
	for (i = 0; i < 4; i++)
		pthread_create(&rd[i], NULL, reader_loop, &r);
	for (i = 0; i < r.total; i++) {
		write_user_event(fd, id, EV_USER, 0, 1);
		if (i % 64 == 0)
			sched_yield();
	}
	for (i = 0; i < 5000 && __atomic_load_n(&r.fetched, __ATOMIC_ACQUIRE) < r.total; i++)
		usleep(1000);
	left = r.total - __atomic_load_n(&r.fetched, __ATOMIC_ACQUIRE);
	if (left && ok) {
		ok = 0;
		snprintf(why, sizeof(why),
			 "4 readers: %ld of %ld events not fetched 5 s after the last write", left,
			 r.total);
	}
	for (i = 0; i < 4; i++)
		write_user_event(fd, id, EV_USER, 0, 0xdead);
	for (i = 0; i < 4; i++)
		pthread_join(rd[i], NULL);
out:
	if (fd >= 0)
		close(fd);
	end_case(__func__, ok, why);
}

/* Each case in a process of its own, its bookkeeping fresh. */
FIXTURE(races) {};

FIXTURE_SETUP(races)
{
	begin_case();
}

FIXTURE_TEARDOWN(races)
{
	ktap_group_end(_metadata);
}

/*
 * The cases, one TEST_F each, with their timeouts: three times the longest
 * run on the debug kernel at RACE_ITERS 60, at least 30 s (races_init() scales them with
 * RACE_ITERS above 200).
 */
TEST_F_TIMEOUT(races, class01_destroy_vs_inflight_command, 30)
{
	ktap_header(1);
	class01_destroy_vs_inflight_command();
}

TEST_F_TIMEOUT(races, class02_handle_published_before_complete, 30)
{
	ktap_header(1);
	class02_handle_published_before_complete();
}

TEST_F_TIMEOUT(races, class03_device_commands_on_unbound_id, 30)
{
	ktap_header(1);
	class03_device_commands_on_unbound_id();
}

TEST_F_TIMEOUT(races, class04_sockaddr_family_length_mismatch, 30)
{
	ktap_header(1);
	class04_sockaddr_family_length_mismatch();
}

TEST_F_TIMEOUT(races, class05_unchecked_numeric_fields, 30)
{
	ktap_header(1);
	class05_unchecked_numeric_fields();
}

TEST_F_TIMEOUT(races, class06_short_input_struct, 30)
{
	ktap_header(1);
	class06_short_input_struct();
}

TEST_F_TIMEOUT(races, class07_reply_infoleak, 30)
{
	ktap_header(1);
	class07_reply_infoleak();
}

TEST_F_TIMEOUT(races, class08_concurrent_calls_on_one_id, 30)
{
	ktap_header(1);
	class08_concurrent_calls_on_one_id();
}

TEST_F_TIMEOUT(races, class09_migrate_vs_handler_destroy_close, 30)
{
	ktap_header(1);
	class09_migrate_vs_handler_destroy_close();
}

TEST_F_TIMEOUT(races, class10_listener_destroy_with_pending_requests, 30)
{
	ktap_header(1);
	class10_listener_destroy_with_pending_requests();
}

TEST_F_TIMEOUT(races, class11_device_hot_removal, 120)
{
	ktap_header(1);
	class11_device_hot_removal();
}

TEST_F_TIMEOUT(races, class12_multicast_concurrent_leave, 30)
{
	ktap_header(1);
	class12_multicast_concurrent_leave();
}

TEST_F_TIMEOUT(races, class13_join_reply_fault, 30)
{
	ktap_header(1);
	class13_join_reply_fault();
}

TEST_F_TIMEOUT(races, class14_multicast_on_non_ud_and_join_lifetime, 30)
{
	ktap_header(1);
	class14_multicast_on_non_ud_and_join_lifetime();
}

TEST_F_TIMEOUT(races, class15_resolve_twice_vs_destroy, 30)
{
	ktap_header(1);
	class15_resolve_twice_vs_destroy();
}

TEST_F_TIMEOUT(races, class16_wrong_state_ops_on_listener, 30)
{
	ktap_header(1);
	class16_wrong_state_ops_on_listener();
}

TEST_F_TIMEOUT(races, class17_listen_vs_device_add_remove, 100)
{
	ktap_header(1);
	class17_listen_vs_device_add_remove();
}

TEST_F_TIMEOUT(races, class18_repeated_route_resolution, 70)
{
	ktap_header(1);
	class18_repeated_route_resolution();
}

TEST_F_TIMEOUT(races, class19_netevent_vs_cm_ids, 200)
{
	ktap_header(1);
	class19_netevent_vs_cm_ids();
}

TEST_F_TIMEOUT(races, class20_synthesised_events_vs_migrate, 30)
{
	ktap_header(1);
	class20_synthesised_events_vs_migrate();
}

TEST_F_TIMEOUT(races, synthesised_events_vs_destroy, 30)
{
	ktap_header(1);
	synthesised_events_vs_destroy();
}

TEST_F_TIMEOUT(races, listen_vs_migrate, 60)
{
	ktap_header(1);
	listen_vs_migrate();
}

TEST_F_TIMEOUT(races, class21_foreign_writer, 30)
{
	ktap_header(1);
	class21_foreign_writer();
}

TEST_F_TIMEOUT(races, class22_error_path_leaks, 30)
{
	ktap_header(1);
	class22_error_path_leaks();
}

TEST_F_TIMEOUT(races, class23_iw_handler_vs_destroy, 30)
{
	ktap_header(1);
	class23_iw_handler_vs_destroy();
}

TEST_F_TIMEOUT(races, migrate_vs_source_close, 60)
{
	ktap_header(1);
	migrate_vs_source_close();
}

TEST_F_TIMEOUT(races, join_vs_destroy_then_foreign_leave, 30)
{
	ktap_header(1);
	join_vs_destroy_then_foreign_leave();
}

TEST_F_TIMEOUT(races, connect_request_vs_migrate_close, 30)
{
	ktap_header(1);
	connect_request_vs_migrate_close();
}

TEST_F_TIMEOUT(races, get_event_wakeup_passed_on, 30)
{
	ktap_header(1);
	get_event_wakeup_passed_on();
}

static void races_summary(void)
{
	if (getenv("RACE_STATS"))
		printf("# the checks for leftovers after the cases took %.1f s\n",
		       run->leak_check_seconds);
}

static void races_init(void)
{
	const char *it = getenv("RACE_ITERS");

	if (it && atoi(it) > 0)
		iters = atoi(it);
	/* Slower in proportion to the rounds beyond the default. */
	if (iters > 200)
		harness_scale_timeouts(iters, 200);
	is_c = (getenv("UCMA_MODULE") && !strcmp(getenv("UCMA_MODULE"), "c")) || c_module_loaded();
	srand(1);
	rxe = ucma_env.rxe;
	siw = ucma_env.siw;
	run = harness_shared(sizeof(*run));
	run->next_port = 30000;
	bad_ptr = mmap(NULL, 8 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	base_id = start_ids_free(&rxe, ID_PROBE_MARGIN);
	sched_getaffinity(0, sizeof(all_cpus), &all_cpus);
	printf("# %d iterations per race\n", iters);
	atexit(races_summary);
}

/* Usage: ucma_races [WORD...]: every case, or those whose name contains a WORD. */
int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	return harness_main(argc, argv, UCMA_NEED_RXE | UCMA_NEED_SIW, races_init);
}
