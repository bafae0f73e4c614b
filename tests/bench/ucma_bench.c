// SPDX-License-Identifier: GPL-2.0
/*
 * Microbenchmarks of the uCMA device, run by tests/bench/run-bench in the
 * test VM against whichever module is loaded (ucma_rs or the C rdma_ucm).
 * Each workload prints result lines
 *
 *   BENCH <figure> <value> <unit>
 *
 * which scripts/bench collects per module and round. Workloads:
 *
 *   rtt      ns per write() of a failing command (QUERY of an unknown id:
 *            ENOENT), of a succeeding one (QUERY of the address of a fresh id), and of a
 *            plain write() of the same bytes to /dev/null (the floor); the
 *            median of RTT_BATCHES batches of RTT_CALLS calls.
 *   events   events per second from WRITE_CM_EVENT to GET_EVENT, through
 *            one id: one thread writing then fetching each event in turn,
 *            and one writer thread with 1 or 4 reader threads, the readers
 *            blocking in GET_EVENT or waiting in poll().
 *   memory   slab and vmalloc bytes (/proc/meminfo) per idle id at 10k and
 *            100k ids on one file, and per queued event (100k events).
 *   scaling  ns per CREATE_ID + DESTROY_ID pair with 1, 1k, 10k, 100k and
 *            300k ids live in one file, and spread over four files; ns per
 *            id to close a file of 10k, 100k and 300k ids.
 *   resolve  us per id to resolve the address, then the route, of 2000 ids
 *            (RXE_IP, RESOLVE_IP then RESOLVE_ROUTE on every id, then every
 *            event fetched): the asynchronous path, handler to GET_EVENT.
 *   stall    us from RESOLVE_ROUTE to ROUTE_RESOLVED of one id at a time
 *            (the median of STALL_SAMPLES), while another tenant, in a memory
 *            cgroup of its own, asks for the routes of STALL_IDS ids and
 *            fetches none of the events: stall.route_alone (that tenant
 *            idle), stall.route_beside (its burst, its cgroup unlimited),
 *            stall.route_beside_full (its burst, its memory.max 256 KiB
 *            above what it held when the burst began: its events fill the
 *            cgroup, and each one after that is charged at the limit in
 *            rdma_cm's worker); stall.lost_full: the share of the
 *            tenant's events that never reached its queue (percent).
 *   allocs   slab allocations and bytes per command (kmem:kmalloc and
 *            kmem:kmem_cache_alloc tracepoints, this process only; for the
 *            asynchronous resolve, every task in the window).
 *   insns    guest instructions per command, counted by QEMU (the plugin
 *            tests/bench/insn_count.c, one vCPU): each figure's commands,
 *            INSNS_OPS of them (INSNS_OPS / 10 for resolve_addr,
 *            close_per_id's ids and open_close), run INSNS_REPEATS times between two
 *            marker instructions; prints "BENCH-MARKS <figure> <ops>"
 *            after each pair, and scripts/bench-report divides the
 *            plugin's counts (its log, insn-mark lines in the same order)
 *            by <ops>. Without the plugin the markers are plain NOPs.
 *
 * Needs RXE_IP (scripts/vm-run) for the bind and resolve paths of allocs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "ucma_cgroup.h"
#include "ucma_cmd.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "ucma_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The device, or the bench stops: timing writes to a bad fd measures nothing. */
static int bench_open(void)
{
	int fd = ucma_dev_open();

	if (fd < 0)
		die("open " UCMA_DEV);
	return fd;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void report(const char *figure, double value, const char *unit)
{
	printf("BENCH %s %.1f %s\n", figure, value, unit);
	fflush(stdout);
}

static long env_long(const char *name, long dflt)
{
	const char *s = getenv(name);

	return s && *s ? strtol(s, NULL, 0) : dflt;
}

/* Creates @n ids with uid 1 on @fd (lowest free first: their ids are known). */
static void create_ids(int fd, long n)
{
	uint32_t id;

	for (long i = 0; i < n; i++)
		if (create_id(fd, 1, RDMA_PS_TCP, &id))
			die("CREATE_ID");
}

/* RESOLVE_IP of @n ids to @a, then every ADDR_RESOLVED fetched. */
static void resolve_all(int fd, const uint32_t *ids, long n, const struct sockaddr_in *a)
{
	struct rdma_ucm_event_resp ev;

	for (long i = 0; i < n; i++)
		if (resolve_ip(fd, ids[i], a))
			die("RESOLVE_IP");
	for (long i = 0; i < n; i++)
		if (wait_event(fd, EV_ADDR_RESOLVED, &ev, 10000))
			die("ADDR_RESOLVED");
}

/* --- rtt ---------------------------------------------------------------- */

/* A command image written as is, header and payload in one buffer. */
struct cmd_image {
	struct rdma_ucm_cmd_hdr hdr;
	union {
		struct rdma_ucm_query query;
	} u;
};

_Static_assert(sizeof(struct cmd_image) ==
	       sizeof(struct rdma_ucm_cmd_hdr) + sizeof(struct rdma_ucm_query),
	       "the payload follows the header without padding");

static double ns_per_write(int fd, const struct cmd_image *c, long calls, int want_ok)
{
	uint64_t t0 = now_ns();

	for (long i = 0; i < calls; i++) {
		ssize_t r = write(fd, c, sizeof(c->hdr) + c->hdr.in);

		if ((r >= 0) != want_ok)
			die(want_ok ? "rtt: command failed" : "rtt: command succeeded");
	}
	return (double)(now_ns() - t0) / calls;
}

/*
 * A fresh id on @fd and two QUERY ADDR images: @q of that id (replies in
 * @resp) and @bad of an id not of this file (ENOENT).
 */
static void query_images(int fd, struct rdma_ucm_query_addr_resp *resp, struct cmd_image *q,
			 struct cmd_image *bad)
{
	uint32_t id;

	if (create_id(fd, 1, RDMA_PS_TCP, &id))
		die("CREATE_ID");
	memset(q, 0, sizeof(*q));
	q->hdr.cmd = RDMA_USER_CM_CMD_QUERY;
	q->hdr.in = sizeof(struct rdma_ucm_query);
	q->hdr.out = sizeof(*resp);
	q->u.query.id = id;
	q->u.query.option = RDMA_USER_CM_QUERY_ADDR;
	q->u.query.response = (uintptr_t)resp;
	*bad = *q;
	bad->u.query.id = id + 1000; /* not an id of this file */
}

/*
 * us per open() and close() of the device with no id on the file: what a
 * file costs to set up and tear down (cmtime, rping and every librdmacm
 * process open one), the median of `batches` batches.
 */
static void bench_open_close(long batches)
{
	long calls = env_long("OPEN_CALLS", 50);
	double v[64];

	for (long b = 0; b < batches; b++) {
		uint64_t t0 = now_ns();

		for (long i = 0; i < calls; i++)
			close(bench_open());
		v[b] = (double)(now_ns() - t0) / 1000 / calls;
	}
	report("file.open_close", median(v, batches), "us");
}

static void bench_rtt(void)
{
	long batches = env_long("RTT_BATCHES", 9), calls = env_long("RTT_CALLS", 20000);
	struct rdma_ucm_query_addr_resp resp;
	double devnull[64], error[64], query[64];
	struct cmd_image q, bad;
	int fd = bench_open(), null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (null < 0)
		die("open /dev/null");
	if (batches > 64)
		batches = 64;
	query_images(fd, &resp, &q, &bad);
	for (long b = 0; b < batches; b++) {
		devnull[b] = ns_per_write(null, &q, calls, 1);
		error[b] = ns_per_write(fd, &bad, calls, 0);
		query[b] = ns_per_write(fd, &q, calls, 1);
	}
	report("rtt.devnull_write", median(devnull, batches), "ns");
	report("rtt.error_reply", median(error, batches), "ns");
	report("rtt.query_addr", median(query, batches), "ns");
	close(fd);
	close(null);
	bench_open_close(batches);
}

/* --- events ------------------------------------------------------------- */

struct event_run {
	int fd;
	uint32_t id;
	long total;
	int use_poll;
	long fetched; /* atomically, by the readers */
};

static void *event_writer(void *arg)
{
	struct event_run *r = arg;

	for (long i = 0; i < r->total; i++)
		if (write_user_event(r->fd, r->id, EV_USER, 0, i))
			die("WRITE_CM_EVENT");
	return NULL;
}

static void *event_reader(void *arg)
{
	struct event_run *r = arg;
	struct rdma_ucm_event_resp ev;
	struct pollfd p = { .fd = r->fd, .events = POLLIN };

	for (;;) {
		if (__atomic_load_n(&r->fetched, __ATOMIC_RELAXED) >= r->total)
			return NULL;
		if (r->use_poll && poll(&p, 1, 50) < 0)
			die("poll");
		if (get_event(r->fd, &ev, sizeof(ev))) {
			if (errno == EAGAIN)
				continue;
			die("GET_EVENT");
		}
		__atomic_add_fetch(&r->fetched, 1, __ATOMIC_RELAXED);
	}
}

/*
 * @readers threads fetch @total events one writer thread queues. Blocking
 * readers left waiting once the last event is fetched are woken by as many
 * extra events as there are readers.
 */
static double events_per_s(int readers, int use_poll, long total)
{
	struct event_run r = { .fd = bench_open(), .total = total, .use_poll = use_poll };
	pthread_t w, rd[8];
	uint64_t t0, ns;

	if (create_id(r.fd, 1, RDMA_PS_TCP, &r.id))
		die("CREATE_ID");
	set_nonblock(r.fd, use_poll);
	t0 = now_ns();
	for (int i = 0; i < readers; i++)
		pthread_create(&rd[i], NULL, event_reader, &r);
	pthread_create(&w, NULL, event_writer, &r);
	pthread_join(w, NULL);
	while (__atomic_load_n(&r.fetched, __ATOMIC_RELAXED) < total)
		usleep(100);
	ns = now_ns() - t0;
	for (int i = 0; i < readers; i++)
		write_user_event(r.fd, r.id, EV_USER, 0, 0);
	for (int i = 0; i < readers; i++)
		pthread_join(rd[i], NULL);
	close(r.fd);
	return total * 1e9 / ns;
}

/* One thread: WRITE_CM_EVENT then GET_EVENT, no sleeping. */
static double events_same_thread(long total)
{
	struct rdma_ucm_event_resp ev;
	int fd = bench_open();
	uint64_t t0;
	uint32_t id;

	if (create_id(fd, 1, RDMA_PS_TCP, &id))
		die("CREATE_ID");
	t0 = now_ns();
	for (long i = 0; i < total; i++)
		if (write_user_event(fd, id, EV_USER, 0, i) || get_event(fd, &ev, sizeof(ev)))
			die("event round trip");
	t0 = now_ns() - t0;
	close(fd);
	return total * 1e9 / t0;
}

static void bench_events(void)
{
	long total = env_long("EVENTS", 100000);

	report("events.one_thread", events_same_thread(total), "ev/s");
	report("events.block_1_reader", events_per_s(1, 0, total), "ev/s");
	report("events.poll_1_reader", events_per_s(1, 1, total), "ev/s");
	report("events.block_4_readers", events_per_s(4, 0, total), "ev/s");
	report("events.poll_4_readers", events_per_s(4, 1, total), "ev/s");
}

/* The poll() figures alone, to profile them apart (events_poll). */
static void bench_events_poll(void)
{
	long total = env_long("EVENTS", 100000);

	report("events.poll_1_reader", events_per_s(1, 1, total), "ev/s");
	report("events.poll_4_readers", events_per_s(4, 1, total), "ev/s");
}

/* --- memory ------------------------------------------------------------- */

/* Slab plus vmalloc in use, in bytes. */
static long kernel_bytes(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	long slab = -1, vm = -1, kb;
	char line[128];

	if (!f)
		die("/proc/meminfo");
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Slab: %ld kB", &kb) == 1)
			slab = kb;
		else if (sscanf(line, "VmallocUsed: %ld kB", &kb) == 1)
			vm = kb;
	}
	fclose(f);
	if (slab < 0 || vm < 0) {
		errno = ENOENT;
		die("Slab or VmallocUsed in /proc/meminfo");
	}
	return (slab + vm) * 1024;
}

/*
 * Freed objects of rdma_cm and RCU callbacks settle before a reading: the
 * reading once two taken 200 ms apart are within a page (at most 5 s).
 * A fixed 300 ms wait read the event phase's baseline while the slab of
 * the 100 000 ids closed before it could still be shrinking: C's rounds
 * showed 510 bytes per queued event where both modules' events take 512
 * (200 kB over the 100 000 events); with this wait, 512 for both.
 */
static long settled_kernel_bytes(void)
{
	long prev, cur = kernel_bytes();

	for (int i = 0; i < 25; i++) {
		usleep(200000);
		prev = cur;
		cur = kernel_bytes();
		if (labs(cur - prev) <= 4096)
			break;
	}
	return cur;
}

static void bench_memory(void)
{
	static const long counts[] = { 10000, 100000 };
	long events = env_long("MEM_EVENTS", 100000);
	char figure[64];
	long before;
	uint32_t id;
	int fd;

	for (unsigned int i = 0; i < ARRAY_SIZE(counts); i++) {
		before = settled_kernel_bytes();
		fd = bench_open();
		create_ids(fd, counts[i]);
		snprintf(figure, sizeof(figure), "memory.per_id_%ldk", counts[i] / 1000);
		report(figure, (double)(settled_kernel_bytes() - before) / counts[i], "bytes");
		close(fd);
	}
	before = settled_kernel_bytes();
	fd = bench_open();
	if (create_id(fd, 1, RDMA_PS_TCP, &id))
		die("CREATE_ID");
	for (long i = 0; i < events; i++)
		if (write_user_event(fd, id, EV_USER, 0, i))
			die("WRITE_CM_EVENT");
	report("memory.per_queued_event", (double)(settled_kernel_bytes() - before) / events,
	       "bytes");
	close(fd);
}

/* --- scaling ------------------------------------------------------------ */

/* ns per CREATE_ID + DESTROY_ID on @fd. */
static double create_destroy_ns(int fd, long pairs)
{
	uint64_t t0 = now_ns();
	uint32_t id;

	for (long i = 0; i < pairs; i++)
		if (create_id(fd, 1, RDMA_PS_TCP, &id) || destroy_id(fd, id, NULL))
			die("CREATE_ID + DESTROY_ID");
	return (double)(now_ns() - t0) / pairs;
}

static void bench_scaling(void)
{
	static const long live[] = { 1, 1000, 10000, 100000, 300000 };
	long pairs = env_long("SCALE_PAIRS", 5000), have = 0, max = env_long("SCALE_MAX", 300000);
	char figure[64];
	int fds[4];
	uint64_t t0;

	/* One file: live ids added in steps. */
	fds[0] = bench_open();
	for (unsigned int i = 0; i < ARRAY_SIZE(live) && live[i] <= max; i++) {
		create_ids(fds[0], live[i] - have);
		have = live[i];
		snprintf(figure, sizeof(figure), "scaling.one_file.%ld", live[i]);
		report(figure, create_destroy_ns(fds[0], pairs), "ns");
	}
	t0 = now_ns();
	close(fds[0]);
	snprintf(figure, sizeof(figure), "scaling.close.%ld", have);
	report(figure, (double)(now_ns() - t0) / have, "ns");

	/* Four files, a quarter of the live ids on each; the pairs on the first. */
	for (int f = 0; f < 4; f++)
		fds[f] = bench_open();
	have = 0;
	for (unsigned int i = 0; i < ARRAY_SIZE(live) && live[i] <= max; i++) {
		for (int f = 0; f < 4; f++)
			create_ids(fds[f], (live[i] - have) / 4 + (f < (live[i] - have) % 4));
		have = live[i];
		snprintf(figure, sizeof(figure), "scaling.four_files.%ld", live[i]);
		report(figure, create_destroy_ns(fds[0], pairs), "ns");
	}
	for (int f = 0; f < 4; f++)
		close(fds[f]);

	/* Closing a file of N ids. */
	for (unsigned int i = 2; i < ARRAY_SIZE(live) - 1 && live[i] < max; i++) {
		int fd = bench_open();

		create_ids(fd, live[i]);
		t0 = now_ns();
		close(fd);
		snprintf(figure, sizeof(figure), "scaling.close.%ld", live[i]);
		report(figure, (double)(now_ns() - t0) / live[i], "ns");
	}
}

/* --- resolve ----------------------------------------------------------- */

static void bench_resolve(void)
{
	const char *ip = getenv("RXE_IP");
	long n = env_long("RESOLVE_IDS", 2000);
	struct rdma_ucm_event_resp ev;
	uint32_t *ids = calloc(n, sizeof(*ids));
	struct sockaddr_in a;
	int fd = bench_open();
	uint64_t t0;

	if (!ids || !ip) {
		errno = ENOENT;
		die("RXE_IP or memory");
	}
	a = ipv4(ip, 0);
	for (long i = 0; i < n; i++)
		if (create_id(fd, 1, RDMA_PS_TCP, &ids[i]))
			die("CREATE_ID");
	t0 = now_ns();
	resolve_all(fd, ids, n, &a);
	report("resolve.addr", (now_ns() - t0) / 1e3 / n, "us");
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (resolve_route(fd, ids[i]))
			die("RESOLVE_ROUTE");
	for (long i = 0; i < n; i++)
		if (wait_event(fd, EV_ROUTE_RESOLVED, &ev, 10000))
			die("ROUTE_RESOLVED");
	report("resolve.route", (now_ns() - t0) / 1e3 / n, "us");
	close(fd);
	free(ids);
}

/* --- stall -------------------------------------------------------------- */

/* RESOLVE_IP then RESOLVE_ROUTE of one fresh id; the route's us. */
static double route_us(int fd, const struct sockaddr_in *a)
{
	struct rdma_ucm_event_resp ev;
	uint32_t id;
	uint64_t t0;
	double us;

	if (create_id(fd, 1, RDMA_PS_TCP, &id) || resolve_ip(fd, id, a) ||
	    wait_event(fd, EV_ADDR_RESOLVED, &ev, 10000))
		die("stall: the measuring tenant's address");
	t0 = now_ns();
	if (resolve_route(fd, id) || wait_event(fd, EV_ROUTE_RESOLVED, &ev, 30000))
		die("stall: the measuring tenant's route");
	us = (now_ns() - t0) / 1e3;
	if (destroy_id(fd, id, NULL))
		die("DESTROY_ID");
	return us;
}

/* The median of @n route_us() samples. */
static double route_median(int fd, const struct sockaddr_in *a, double *v, int n)
{
	for (int i = 0; i < n; i++)
		v[i] = route_us(fd, a);
	return median(v, n);
}

/*
 * The other tenant: in cgroup @cg, @n ids with their addresses resolved
 * (events fetched); then, told to through @go (a byte: 'f' to set its
 * memory.max first), RESOLVE_ROUTE on every id, fetching nothing; then,
 * told to again, lifts the limit, counts the ROUTE_RESOLVED events that
 * reached its queue and writes that count to @done. At its limit it makes
 * no allocation of its own (a page fault or an open() there would be the
 * OOM killer's): memory.max is opened before. Never returns.
 */
static void burst_tenant(const char *cg, long n, const struct sockaddr_in *a, int go, int done)
{
	uint32_t *ids = calloc(n, sizeof(*ids));
	struct rdma_ucm_event_resp ev;
	char c, v[32], path[512];
	long got = 0;
	int fd, maxfd;

	if (!ids || cg_enter(cg))
		_exit(2);
	fd = bench_open();
	for (long i = 0; i < n; i++)
		if (create_id(fd, 1, RDMA_PS_TCP, &ids[i]))
			_exit(3);
	resolve_all(fd, ids, n, a);
	if (write(done, "r", 1) != 1 || read(go, &c, 1) != 1)
		_exit(4);
	snprintf(path, sizeof(path), "%s/memory.max", cg);
	maxfd = open(path, O_WRONLY);
	if (maxfd < 0)
		_exit(5);
	if (c == 'f') {
		/* 256 KiB of room, then each event is charged at the limit. */
		snprintf(v, sizeof(v), "%ld", cg_read(cg, "memory.current", NULL) + (256L << 10));
		if (write(maxfd, v, strlen(v)) != (ssize_t)strlen(v))
			_exit(5);
	}
	for (long i = 0; i < n; i++)
		resolve_route(fd, ids[i]); /* ENOMEM at the limit: fewer events */
	if (read(go, &c, 1) != 1 || write(maxfd, "max", 3) != 3)
		_exit(7);
	set_nonblock(fd, 1);
	while (!get_event(fd, &ev, sizeof(ev)))
		got += ev.event == EV_ROUTE_RESOLVED;
	if (write(done, &got, sizeof(got)) != sizeof(got))
		_exit(8);
	_exit(0);
}

/*
 * One burst of the other tenant beside this one's samples ('f': at its
 * limit); its events that reached its queue in *@got.
 */
static double route_beside(const struct sockaddr_in *a, char mode, long n, double *v, int samples,
			   long *got)
{
	int go[2], done[2], fd = bench_open(), status;
	char cg[300], c;
	const char *step = cg_make(cg, sizeof(cg), "ucma-bench-stall", -1);
	double med;
	pid_t pid;

	if (step)
		die(step);
	if (pipe(go) || pipe(done))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		burst_tenant(cg, n, a, go[0], done[1]);
	if (read(done[0], &c, 1) != 1)
		die("stall: the other tenant's setup");
	if (write(go[1], &mode, 1) != 1)
		die("pipe");
	med = route_median(fd, a, v, samples);
	if (write(go[1], "c", 1) != 1 || read(done[0], got, sizeof(*got)) != sizeof(*got))
		die("stall: the other tenant's count");
	waitpid(pid, &status, 0);
	close(fd);
	rmdir(cg);
	return med;
}

static void bench_stall(void)
{
	const char *ip = getenv("RXE_IP");
	long n = env_long("STALL_IDS", 5000), got;
	int samples = env_long("STALL_SAMPLES", 30);
	double *v = calloc(samples, sizeof(*v));
	struct sockaddr_in a;
	int fd = bench_open();

	if (!ip || !v || samples < 1) {
		errno = ENOENT;
		die("RXE_IP or memory");
	}
	a = ipv4(ip, 0);
	report("stall.route_alone", route_median(fd, &a, v, samples), "us");
	close(fd);
	report("stall.route_beside", route_beside(&a, 'u', n, v, samples, &got), "us");
	report("stall.route_beside_full", route_beside(&a, 'f', n, v, samples, &got), "us");
	report("stall.lost_full", 100.0 * (n - got) / n, "%");
	free(v);
}

/* --- allocs ------------------------------------------------------------- */

#define TRACING "/sys/kernel/tracing/"

/*
 * tracing_on, opened before counting starts: opening a file allocates, and
 * the allocations of the counting process itself must stay out of the count.
 */
static int tracing_on_fd = -1;

static void trace_write(const char *file, const char *s)
{
	int fd = open(file, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		die(file);
	close(fd);
}

/* Starts counting slab allocations, of this process only if @own. */
static void trace_start(int own)
{
	char filter[64];

	/* "0" clears a filter. */
	snprintf(filter, sizeof(filter), own ? "common_pid == %d" : "0", getpid());
	trace_write(TRACING "tracing_on", "0");
	trace_write(TRACING "events/kmem/kmalloc/enable", "0");
	trace_write(TRACING "events/kmem/kmem_cache_alloc/enable", "0");
	trace_write(TRACING "events/kmem/kmalloc/filter", filter);
	trace_write(TRACING "events/kmem/kmem_cache_alloc/filter", filter);
	trace_write(TRACING "trace", "");
	trace_write(TRACING "events/kmem/kmalloc/enable", "1");
	trace_write(TRACING "events/kmem/kmem_cache_alloc/enable", "1");
	if (write(tracing_on_fd, "1", 1) != 1)
		die("tracing_on");
}

/* Stops counting; reports allocations and bytes per @ops. */
static void trace_stop(const char *path, long ops)
{
	long n = 0, bytes = 0, b;
	char line[1024], figure[96];
	FILE *f;

	if (write(tracing_on_fd, "0", 1) != 1)
		die("tracing_on");
	f = fopen(TRACING "trace", "r");
	if (!f)
		die("trace");
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "bytes_alloc=");

		if (line[0] == '#' || !p || sscanf(p, "bytes_alloc=%ld", &b) != 1)
			continue;
		n++;
		bytes += b;
	}
	fclose(f);
	snprintf(figure, sizeof(figure), "allocs.%s.count", path);
	report(figure, (double)n / ops, "allocs");
	snprintf(figure, sizeof(figure), "allocs.%s.bytes", path);
	report(figure, (double)bytes / ops, "bytes");
}

static void bench_allocs(void)
{
	const char *ip = getenv("RXE_IP");
	long n = env_long("ALLOC_OPS", 1000);
	struct rdma_ucm_event_resp ev;
	struct sockaddr_in a;
	uint32_t *ids = calloc(n, sizeof(*ids));
	int fd = bench_open();

	if (!ids || !ip) {
		errno = ENOENT;
		die("RXE_IP or memory");
	}
	trace_write(TRACING "buffer_size_kb", "8192");
	tracing_on_fd = open(TRACING "tracing_on", O_WRONLY | O_CLOEXEC);
	if (tracing_on_fd < 0)
		die(TRACING "tracing_on");
	trace_start(1);
	for (long i = 0; i < n; i++)
		if (create_id(fd, 1, RDMA_PS_TCP, &ids[i]))
			die("CREATE_ID");
	trace_stop("create_id", n);

	trace_start(1);
	for (long i = 0; i < n; i++) {
		struct rdma_ucm_query_addr_resp r;
		struct rdma_ucm_query q = { .id = ids[0], .option = RDMA_USER_CM_QUERY_ADDR,
					    .response = (uintptr_t)&r };

		if (CMD(fd, RDMA_USER_CM_CMD_QUERY, q, sizeof(r)))
			die("QUERY");
	}
	trace_stop("query_addr", n);

	trace_start(1);
	for (long i = 0; i < n; i++) {
		struct rdma_ucm_query_addr_resp r;
		struct rdma_ucm_query q = { .id = ids[n - 1] + 1000,
					    .option = RDMA_USER_CM_QUERY_ADDR,
					    .response = (uintptr_t)&r };

		if (!CMD(fd, RDMA_USER_CM_CMD_QUERY, q, sizeof(r)))
			die("QUERY of an unknown id succeeded");
	}
	trace_stop("error_reply", n);

	trace_start(1);
	for (long i = 0; i < n; i++)
		if (write_user_event(fd, ids[0], EV_USER, 0, i))
			die("WRITE_CM_EVENT");
	trace_stop("write_cm_event", n);

	trace_start(1);
	for (long i = 0; i < n; i++)
		if (get_event(fd, &ev, sizeof(ev)))
			die("GET_EVENT");
	trace_stop("get_event", n);

	a = ipv4(ip, 0);
	trace_start(1);
	for (long i = 0; i < n; i++)
		if (bind_ip(fd, ids[i], &a))
			die("BIND_IP");
	trace_stop("bind_ip", n);

	/* The resolve and its ADDR_RESOLVED event, system-wide. */
	trace_start(0);
	resolve_all(fd, ids, n, &a);
	trace_stop("resolve_ip_and_event", n);

	trace_start(1);
	for (long i = 0; i < n; i++)
		if (destroy_id(fd, ids[i], NULL))
			die("DESTROY_ID");
	trace_stop("destroy_id", n);

	trace_write(TRACING "events/kmem/kmalloc/enable", "0");
	trace_write(TRACING "events/kmem/kmem_cache_alloc/enable", "0");
	trace_write(TRACING "events/kmem/kmalloc/filter", "0");
	trace_write(TRACING "events/kmem/kmem_cache_alloc/filter", "0");
	trace_write(TRACING "trace", "");
	close(tracing_on_fd);
	close(fd);
	free(ids);
}

/* --- insns -------------------------------------------------------------- */

/*
 * nopl 0x6d6375XX(%rax): a NOP to the CPU, a mark to tests/bench/insn_count.c,
 * which logs its instruction counts each time one executes (XX: 1 opens a
 * figure's window, 2 closes it; 3 and 4 open and close a profiled one).
 */
#define INSN_MARK(tag)									\
	({ asm volatile(".byte 0x0f, 0x1f, 0x80, %c0, 0x75, 0x63, 0x6d" : : "i"(tag) : "memory"); })

/*
 * A window of @ops commands of @figure, between marks @open and @open + 1:
 * tags 1 and 2 count (the plugin prints "insn-mark"), tags 3 and 4 profile
 * (it prints each kernel block's "insn-prof"); the line printed here names
 * the window: "BENCH-MARKS insns.FIGURE OPS" or "BENCH-PROF insns.FIGURE OPS".
 */
static int insns_tag = 1;

static void insns_window_start(void)
{
	if (insns_tag == 1)
		INSN_MARK(1);
	else
		INSN_MARK(3);
}

static void insns_window_end(const char *figure, long ops)
{
	if (insns_tag == 1) {
		INSN_MARK(2);
		printf("BENCH-MARKS insns.%s %ld\n", figure, ops);
	} else {
		INSN_MARK(4);
		printf("BENCH-PROF insns.%s %ld\n", figure, ops);
	}
	fflush(stdout);
}

static void insns_writes(const char *figure, int fd, const struct cmd_image *c, long ops,
			 int want_ok)
{
	insns_window_start();
	for (long i = 0; i < ops; i++)
		if ((write(fd, c, sizeof(c->hdr) + c->hdr.in) >= 0) != want_ok)
			die(figure);
	insns_window_end(figure, ops);
}

static void insns_figures(int fd, int null, const struct cmd_image *q, const struct cmd_image *bad,
			  const struct sockaddr_in *dst, long ops)
{
	struct rdma_ucm_event_resp ev;
	uint32_t uid;

	insns_writes("devnull_write", null, q, ops, 1);
	insns_writes("error_reply", fd, bad, ops, 0);
	insns_writes("query_addr", fd, q, ops, 1);

	insns_window_start();
	for (long i = 0; i < ops; i++)
		if (create_id(fd, 2, RDMA_PS_TCP, &uid) || destroy_id(fd, uid, NULL))
			die("CREATE_ID + DESTROY_ID");
	insns_window_end("create_destroy", ops);

	insns_window_start();
	for (long i = 0; i < ops; i++)
		if (write_user_event(fd, q->u.query.id, EV_USER, 0, i) ||
		    get_event(fd, &ev, sizeof(ev)))
			die("WRITE_CM_EVENT + GET_EVENT");
	insns_window_end("event_round_trip", ops);

	/* Asynchronous: rdma_cm's worker and the handler count too (one vCPU). */
	insns_window_start();
	for (long i = 0; i < ops / 10; i++)
		if (create_id(fd, 3, RDMA_PS_TCP, &uid) || resolve_ip(fd, uid, dst) ||
		    wait_event(fd, EV_ADDR_RESOLVED, &ev, 5000) || destroy_id(fd, uid, NULL))
			die("CREATE_ID, RESOLVE_IP, ADDR_RESOLVED, DESTROY_ID");
	insns_window_end("resolve_addr", ops / 10);

	/* The close of a file of ops / 10 idle ids, per id. */
	{
		int cfd = bench_open();

		create_ids(cfd, ops / 10);
		insns_window_start();
		close(cfd);
		insns_window_end("close_per_id", ops / 10);
	}

	/* open() and close() of the device, no id on the file. */
	insns_window_start();
	for (long i = 0; i < ops / 10; i++)
		close(bench_open());
	insns_window_end("open_close", ops / 10);
}

/*
 * Each figure INSNS_REPEATS times after a first pass that translates the
 * code (the windows count from the second), then, with INSNS_PROFILE=1
 * (the default), once more as a profiled window.
 */
static void bench_insns(void)
{
	long ops = env_long("INSNS_OPS", 2000), repeats = env_long("INSNS_REPEATS", 5);
	struct rdma_ucm_query_addr_resp resp;
	struct cmd_image q, bad;
	const char *ip = getenv("RXE_IP");
	struct sockaddr_in dst = ipv4(ip ? ip : "192.0.2.1", 0);
	int fd = bench_open(), null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (null < 0)
		die("open /dev/null");
	query_images(fd, &resp, &q, &bad);
	for (long r = 0; r <= repeats; r++)
		insns_figures(fd, null, &q, &bad, &dst, ops);
	if (env_long("INSNS_PROFILE", 1)) {
		insns_tag = 3;
		insns_figures(fd, null, &q, &bad, &dst, ops);
		insns_tag = 1;
	}
	close(fd);
	close(null);
}

int main(int argc, char **argv)
{
	ucma_setup(0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "rtt"))
			bench_rtt();
		else if (!strcmp(argv[i], "events"))
			bench_events();
		else if (!strcmp(argv[i], "events_poll"))
			bench_events_poll();
		else if (!strcmp(argv[i], "memory"))
			bench_memory();
		else if (!strcmp(argv[i], "scaling"))
			bench_scaling();
		else if (!strcmp(argv[i], "resolve"))
			bench_resolve();
		else if (!strcmp(argv[i], "allocs"))
			bench_allocs();
		else if (!strcmp(argv[i], "stall"))
			bench_stall();
		else if (!strcmp(argv[i], "insns"))
			bench_insns();
		else {
			fprintf(stderr,
				"usage: ucma_bench [rtt|events|events_poll|memory|scaling|resolve|allocs|stall|insns]...\n");
			return 2;
		}
	}
	return 0;
}
