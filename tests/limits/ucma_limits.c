// SPDX-License-Identifier: GPL-2.0
/*
 * The limits of ucma_rs (Documentation/usage.rst, "Limits"), in KTAP.
 *
 *   ucma_limits memcg   with the module's default parameters: what a user
 *                       makes the module allocate is charged to its memory
 *                       cgroup; at the cgroup's limit CREATE_ID fails with
 *                       ENOMEM, the process is not OOM-killed, and the
 *                       charges go when the file is closed.
 *   ucma_limits caps    with the module loaded as
 *                       "max_ids_per_file=64 max_events_per_file=32"
 *                       (tests/vm/caps.sh): the per-file caps, their errnos
 *                       and their fdinfo lines.
 *
 * The C module has neither (its allocations are not charged, it has no
 * caps and no fdinfo): every case is skipped there, and only there: when
 * UCMA_MODULE=c (set by the VM runner). Under ucma_rs a missing feature
 * (an fdinfo line gone, a charge not made) is a failure, never a skip.
 *
 * On the kernel's kselftest_harness.h (tests/lib/harness.h): the fixtures
 * memcg and caps, one TEST_F per group of cases, each in a process of its
 * own; the argument "memcg" or "caps" runs that fixture's groups.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "ucma_cgroup.h"
#include "ucma_cmd.h"

#define CAP_IDS 64
#define CAP_EVENTS 32

/* Whether the runner says the C module is loaded (UCMA_MODULE=c). */
static int module_is_c(void)
{
	const char *m = getenv("UCMA_MODULE");

	return m && !strcmp(m, "c");
}

/* Whether the guest runs the debug kernel (UCMA_KERNEL=debug). */
static int debug_kernel(void)
{
	const char *k = getenv("UCMA_KERNEL");

	return k && !strcmp(k, "debug");
}

/*
 * Forks a child that has entered a fresh memory cgroup @cgname of @max
 * bytes (its path in @cg) and reports through @p[1]; the parent keeps
 * @p[0]. Returns the child's pid in the parent, 0 in the child, or -1 (the
 * case reported failed).
 */
static pid_t fork_in_cgroup(const char *name, const char *cgname, long max, char *cg,
			    size_t len, int p[2])
{
	const char *step = cg_make(cg, len, cgname, max);
	pid_t pid;

	if (step) {
		ktap_result(0, name, "cgroup setup: %s: %s", step, strerror(errno));
		return -1;
	}
	if (pipe(p)) {
		ktap_result(0, name, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (cg_enter(cg))
			_exit(2);
		return 0;
	}
	close(p[1]);
	return pid;
}

/* What a child process reports through its pipe. */
struct child_report {
	long created;	/* ids created before the first failure */
	int err;	/* errno of that failure, 0 if none */
	long charged;	/* memory.current growth, or memory.peak, bytes */
	long queued;	/* events queued, from fdinfo */
	long baseline;	/* memory.current before the file was opened */
};

#define MEMCG_MAX (16L << 20)
#define MEMCG_TRIES 300000

/*
 * The ids a 16 MiB cgroup holds, measured (2026-12, the child's own pages
 * included): 83755 on the default kernel, 83735 on Debian's (about 200
 * bytes charged per id: the context's Arc in kmalloc-192, as ucma.c's
 * context, and its share of the id table; 63548 and 63452 while the
 * context took kmalloc-256), 16253 and 16226 (twice) on the debug kernel
 * (about 1032 bytes: KASAN's redzones). Margin: a count within 10% of the measured one passes (runs
 * differ by under 0.2%). A context one slab class larger (kmalloc-256: a
 * quarter fewer ids) or oversized, or a charge that fails early, is below;
 * one no longer charged (only the id table's nodes) far above.
 */
#define MEMCG_IDS_DEFAULT 83755
#define MEMCG_IDS_DEBUG 16253

/*
 * Charges left in the cgroup after its only process closed the file and
 * exited, against the baseline: memory.current in that process before it
 * opened the file (its stack, page tables and pipe). Measured (2026-12,
 * with the baseline read just after the open, which charges under 1 kB):
 * baseline 256 kB on both kernels; after the ids, 248 to 264 kB left;
 * after the events, 144 to 468 kB. Margin: at most 512 kB above the
 * baseline (2.4 times the most measured above it); a charge kept per
 * file, or per event, is above. The old bound, a quarter of the cgroup
 * (4 MiB), let 3.7 MiB stay.
 */
#define MEMCG_LEFT_SLACK (512L << 10)

/*
 * memory.current once it is at most @limit, or after 5 s (the contexts
 * are freed after an RCU grace period, their slab pages later).
 */
static long cg_settled(const char *cg, long limit)
{
	long cur = -1;
	int i;

	for (i = 0; i < 50; i++) {
		cur = cg_read(cg, "memory.current", NULL);
		if (cur >= 0 && cur <= limit)
			break;
		usleep(100000);
	}
	return cur;
}

/*
 * In a cgroup of MEMCG_MAX bytes, CREATE_ID until it fails: it must fail
 * with ENOMEM, after as many ids as the measured charge per id allows
 * (MEMCG_IDS_*, within its margin), and the process must not be
 * OOM-killed. Without the charge the ids were free for the cgroup, and all
 * MEMCG_TRIES were made; with an oversized one, too few.
 */
static void memcg_create_ids_enomem(void)
{
	const char *name = __func__;
	struct child_report rep = { 0 };
	long measured = debug_kernel() ? MEMCG_IDS_DEBUG : MEMCG_IDS_DEFAULT;
	long lo = measured * 9 / 10, hi = measured * 11 / 10;
	char cg[256];
	int p[2], st;
	long kills, cur, i;
	pid_t pid;

	pid = fork_in_cgroup(name, "ucma-limits", MEMCG_MAX, cg, sizeof(cg), p);
	if (pid < 0)
		return;
	if (pid == 0) {
		int fd;
		uint32_t id;

		rep.baseline = cg_read(cg, "memory.current", NULL);
		fd = ucma_dev_open();
		if (fd < 0)
			_exit(3);
		for (i = 0; i < MEMCG_TRIES; i++) {
			if (create_id(fd, 1, RDMA_PS_TCP, &id)) {
				rep.err = errno;
				break;
			}
		}
		rep.created = i;
		/*
		 * The cgroup is full: any charge now (a page fault, opening a
		 * file, a pipe buffer) that cannot fail would invoke its OOM
		 * killer. Free the ids first, as a program handling ENOMEM
		 * would, then report.
		 */
		close(fd);
		if (write(p[1], &rep, sizeof(rep)) != sizeof(rep))
			_exit(4);
		_exit(0);
	}
	if (read(p[0], &rep, sizeof(rep)) != sizeof(rep))
		rep.created = -1;
	close(p[0]);
	waitpid(pid, &st, 0);
	kills = cg_read(cg, "memory.events", "oom_kill");
	rep.charged = cg_read(cg, "memory.peak", NULL);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		ktap_result(0, name, "the child %s %d (oom_kill %ld)",
			    WIFSIGNALED(st) ? "was killed by signal" : "exited",
			    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), kills);
	} else if (rep.err != ENOMEM || rep.created < lo || rep.created > hi) {
		ktap_result(0, name,
			    "%ld ids created in a %ld MiB cgroup, then errno %d (%s), want ENOMEM after %ld to %ld (measured %ld)",
			    rep.created, MEMCG_MAX >> 20, rep.err, strerror(rep.err), lo, hi,
			    measured);
	} else {
		printf("# %s: %ld ids in %ld MiB (want %ld to %ld), then ENOMEM; memory.peak %ld kB, oom_kill %ld\n",
		       name, rep.created, MEMCG_MAX >> 20, lo, hi, rep.charged >> 10, kills);
		ktap_result(kills == 0, name, "oom_kill %ld, want 0", kills);
	}
	/* The charges go back with the contexts, once the file is closed. */
	cur = cg_settled(cg, rep.baseline + MEMCG_LEFT_SLACK);
	printf("# memcg_charges_returned_on_close: memory.current %ld kB after close, %ld kB before the open\n",
	       cur >> 10, rep.baseline >> 10);
	ktap_result(cur >= 0 && rep.baseline > 0 && cur <= rep.baseline + MEMCG_LEFT_SLACK,
		    "memcg_charges_returned_on_close",
		    "memory.current %ld kB after close, want at most %ld kB (baseline %ld kB + %ld kB)",
		    cur >> 10, (rep.baseline + MEMCG_LEFT_SLACK) >> 10, rep.baseline >> 10,
		    MEMCG_LEFT_SLACK >> 10);
	rmdir(cg);
}

/* Outside that cgroup nothing broke: another process makes its ids. */
static void memcg_others_unaffected(int fd)
{
	int i, ok = 1;
	uint32_t id;

	for (i = 0; ok && i < 1000; i++)
		ok = !create_id(fd, 1, RDMA_PS_TCP, &id);
	ktap_result(ok, __func__, "id %d: %s", i, strerror(errno));
}

#define EVENTS_N 4000

/*
 * In a child: opens the device and creates @n ids into @ids; exits 3 if
 * the open fails, 5 if a CREATE_ID does. The file descriptor.
 */
static int open_with_ids(uint32_t *ids, int n)
{
	int fd = ucma_dev_open(), i;

	if (fd < 0)
		_exit(3);
	for (i = 0; i < n; i++)
		if (create_id(fd, 1, RDMA_PS_TCP, &ids[i]))
			_exit(5);
	return fd;
}

/*
 * The growth of memory.current for EVENTS_N events, measured (2026-12,
 * twice each): 2048 kB on the default kernel (512 bytes an event: its
 * 336-byte image and links in a 512-byte slab object), 4096 kB on the
 * debug kernel.
 * Margin: half to twice that. Below, the events are not charged to the
 * opener (or not all of them); above, something else is charged per
 * event.
 */
#define EVENTS_KB_DEFAULT 2048
#define EVENTS_KB_DEBUG 4096

/*
 * The events rdma_cm reports are allocated by the handler, in a kernel
 * worker: they must be charged to the opener's cgroup, not the worker's.
 * EVENTS_N ADDR_RESOLVED events must grow the cgroup's memory.current by
 * EVENTS_KB_* (within its margin), and the charges must go back once the
 * file is closed.
 */
static void memcg_handler_events_charged(void)
{
	const char *name = __func__;
	struct child_report rep = { 0 };
	const char *ip = ucma_env.rxe_ip;
	long measured = debug_kernel() ? EVENTS_KB_DEBUG : EVENTS_KB_DEFAULT, cur;
	char cg[256];
	int p[2], st;
	pid_t pid;

	if (!ip) {
		ktap_result(0, name, "RXE_IP is not set");
		ktap_result(0, "memcg_handler_events_returned_on_close", "not run");
		return;
	}
	pid = fork_in_cgroup(name, "ucma-events", 256L << 20, cg, sizeof(cg), p);
	if (pid < 0) {
		ktap_result(0, "memcg_handler_events_returned_on_close", "not run");
		return;
	}
	if (pid == 0) {
		struct sockaddr_in dst = ipv4(ip, 0);
		uint32_t ids[EVENTS_N];
		long before;
		int fd, i, w;

		rep.baseline = cg_read(cg, "memory.current", NULL);
		fd = open_with_ids(ids, EVENTS_N);
		before = cg_read(cg, "memory.current", NULL);
		for (i = 0; i < EVENTS_N; i++)
			if (resolve_ip(fd, ids[i], &dst))
				_exit(6);
		for (w = 0; w < 300; w++) {
			rep.queued = fdinfo_number(fd, "rdma_cm_events_queued");
			if (rep.queued >= EVENTS_N)
				break;
			usleep(100000);
		}
		rep.charged = cg_read(cg, "memory.current", NULL) - before;
		if (write(p[1], &rep, sizeof(rep)) != sizeof(rep))
			_exit(4);
		close(fd);
		_exit(0);
	}
	if (read(p[0], &rep, sizeof(rep)) != sizeof(rep))
		rep.queued = -1;
	close(p[0]);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || rep.queued != EVENTS_N) {
		ktap_result(0, name, "child status %#x, %ld events queued of %d", st, rep.queued,
			    EVENTS_N);
		ktap_result(0, "memcg_handler_events_returned_on_close", "not run");
		rmdir(cg);
		return;
	}
	printf("# %s: %d events queued, memory.current grew by %ld kB (want %ld to %ld)\n", name,
	       EVENTS_N, rep.charged >> 10, measured / 2, measured * 2);
	ktap_result(rep.charged >= (measured / 2) << 10 && rep.charged <= (measured * 2) << 10,
		    name, "memory.current grew by %ld kB for %d events, want %ld to %ld kB (measured %ld)",
		    rep.charged >> 10, EVENTS_N, measured / 2, measured * 2, measured);
	/* The events' charges (and the ids') go back with the file. */
	cur = cg_settled(cg, rep.baseline + MEMCG_LEFT_SLACK);
	printf("# memcg_handler_events_returned_on_close: memory.current %ld kB after close, %ld kB before the open\n",
	       cur >> 10, rep.baseline >> 10);
	ktap_result(cur >= 0 && rep.baseline > 0 && cur <= rep.baseline + MEMCG_LEFT_SLACK,
		    "memcg_handler_events_returned_on_close",
		    "memory.current %ld kB after close, want at most %ld kB (baseline %ld kB + %ld kB)",
		    cur >> 10, (rep.baseline + MEMCG_LEFT_SLACK) >> 10, rep.baseline >> 10,
		    MEMCG_LEFT_SLACK >> 10);
	rmdir(cg);
}

/*
 * Reclaim the handler asks for at the limit. The handler runs in rdma_cm's
 * workqueues, which every user's CM events (and in-kernel users') share:
 * a charge that fails there must fail after one reclaim pass, not retry
 * (__GFP_RETRY_MAYFAIL retries MAX_RECLAIM_RETRIES times and lets one
 * tenant at its memory.max hold everybody's events up in its reclaim).
 * Each pass of the memory controller's reclaim at the limit counts one
 * "max" in memory.events: two per failed charge (before and after
 * draining the per-CPU stocks) with __GFP_NORETRY, about 18 with
 * __GFP_RETRY_MAYFAIL.
 *
 * The child, in a cgroup of its own, creates EVENTS_N ids; the parent
 * lowers its memory.max to what it holds plus RECLAIM_MARGIN; the child
 * resolves every id and then only waits (it allocates nothing more), so
 * the "max" events that follow are the handler's. The parent reads the
 * child's fdinfo (its own reads are charged to the parent): once every id
 * is past ADDR_RESOLVED (or ADDR_ERROR) and memory.events is still, the
 * lost events are those not queued. Wanted: at least a quarter of the
 * events lost (the limit was reached), and at most RECLAIM_PASSES_MAX
 * passes per lost event, plus RECLAIM_PASSES_SLACK for the charges of
 * the resolve commands themselves. Measured on the default kernel
 * (2026-12-06): 3306 of 4000 events lost, 6613 passes (2.0 a lost event);
 * with __GFP_RETRY_MAYFAIL in the handler, 3265 lost, 58771 passes (18.0).
 */
#define RECLAIM_MARGIN (128L << 10)
#define RECLAIM_PASSES_MAX 3
#define RECLAIM_PASSES_SLACK 64

static void memcg_handler_charge_reclaims_once(void)
{
	const char *name = __func__;
	const char *ip = ucma_env.rxe_ip;
	long cur, max0 = -1, max1 = -1, queued = -1, resolved = -1, bound = -1, lost, passes;
	int p[2], go[2], st, fd = -1, w;
	char cg[256], path[512], v[32];
	pid_t pid;

	if (!ip) {
		ktap_result(0, name, "RXE_IP is not set");
		return;
	}
	if (pipe(go)) {
		ktap_result(0, name, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork_in_cgroup(name, "ucma-reclaim", 256L << 20, cg, sizeof(cg), p);
	if (pid < 0)
		return;
	if (pid == 0) {
		struct sockaddr_in dst = ipv4(ip, 0);
		static uint32_t ids[EVENTS_N];
		char c;
		int i;

		close(go[1]);
		fd = open_with_ids(ids, EVENTS_N);
		if (write(p[1], &fd, sizeof(fd)) != sizeof(fd) || read(go[0], &c, 1) != 1)
			_exit(4);
		for (i = 0; i < EVENTS_N; i++)
			resolve_ip(fd, ids[i], &dst);
		if (write(p[1], &fd, sizeof(fd)) != sizeof(fd) || read(go[0], &c, 1) != 1)
			_exit(4);
		_exit(0);
	}
	close(go[0]);
	if (read(p[0], &fd, sizeof(fd)) != sizeof(fd)) {
		ktap_result(0, name, "the child did not create its ids");
		goto out;
	}
	cur = cg_read(cg, "memory.current", NULL);
	snprintf(path, sizeof(path), "%s/memory.max", cg);
	snprintf(v, sizeof(v), "%ld", cur + RECLAIM_MARGIN);
	max0 = cg_read(cg, "memory.events", "max");
	if (cur < 0 || max0 < 0 || write_file(path, v)) {
		ktap_result(0, name, "memory.current %ld, memory.events max %ld, setting memory.max: %s",
			    cur, max0, strerror(errno));
		goto out;
	}
	if (write(go[1], "g", 1) != 1 || read(p[0], &fd, sizeof(fd)) != sizeof(fd)) {
		ktap_result(0, name, "the child did not resolve");
		goto out;
	}
	/* Every id past its address event, then memory.events still for 0.5 s. */
	for (w = 0; w < 600; w++) {
		resolved = fdinfo_number_of(pid, fd, "rdma_cm_ids_addr_resolved");
		bound = fdinfo_number_of(pid, fd, "rdma_cm_ids_bound");
		if (resolved >= 0 && bound == 0)
			break;
		usleep(50000);
	}
	max1 = cg_read(cg, "memory.events", "max");
	for (w = 0; w < 100; w++) {
		long m;

		usleep(500000);
		m = cg_read(cg, "memory.events", "max");
		if (m == max1)
			break;
		max1 = m;
	}
	queued = fdinfo_number_of(pid, fd, "rdma_cm_events_queued");
	lost = EVENTS_N - queued;
	passes = max1 - max0;
	printf("# %s: %ld of %d events lost at memory.max, %ld reclaim passes (%ld ids addr_resolved, %ld still bound)\n",
	       name, lost, EVENTS_N, passes, resolved, bound);
	ktap_result(queued >= 0 && bound == 0 && lost >= EVENTS_N / 4 &&
		    passes <= RECLAIM_PASSES_MAX * lost + RECLAIM_PASSES_SLACK, name,
		    "%ld of %d events lost (want at least %d), %ld reclaim passes (want at most %ld), %ld ids still bound",
		    lost, EVENTS_N, EVENTS_N / 4, passes,
		    RECLAIM_PASSES_MAX * lost + RECLAIM_PASSES_SLACK, bound);
out:
	if (write(go[1], "x", 1) != 1)
		kill(pid, SIGKILL);
	close(go[1]);
	close(p[0]);
	waitpid(pid, &st, 0);
	rmdir(cg);
}

/* The caps and their counters are in fdinfo. */
static void caps_in_fdinfo(int fd)
{
	long ids = fdinfo_number(fd, "rdma_cm_ids_max"), evs = fdinfo_number(fd, "rdma_cm_events_max");
	long r1 = fdinfo_number(fd, "rdma_cm_ids_refused"), r2 = fdinfo_number(fd, "rdma_cm_events_refused");

	ktap_result(ids == CAP_IDS && evs == CAP_EVENTS && !r1 && !r2, __func__,
		    "ids_max %ld events_max %ld ids_refused %ld events_refused %ld", ids, evs,
		    r1, r2);
}

/* A parameter of ucma_rs as sysfs shows it, or -1. */
static long module_param_value(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/ucma_rs/parameters/%s", name);
	return file_number(path);
}

/*
 * The caps are readable in sysfs, as a C module's parameters are, and
 * read-only there (set at load time).
 */
static void caps_in_sysfs(void)
{
	long ids = module_param_value("max_ids_per_file");
	long evs = module_param_value("max_events_per_file");
	struct stat st;
	int ro = !stat("/sys/module/ucma_rs/parameters/max_ids_per_file", &st) &&
		 (st.st_mode & 0777) == 0444;

	ktap_result(ids == CAP_IDS && evs == CAP_EVENTS && ro, __func__,
		    "/sys/module/ucma_rs/parameters: max_ids_per_file %ld, max_events_per_file %ld (want %d, %d), mode 0444: %d",
		    ids, evs, CAP_IDS, CAP_EVENTS, ro);
}

/* Fills @fd with CAP_IDS ids (the first in *@first); 0 on success. */
static int fill_ids(int fd, uint32_t *first)
{
	uint32_t id;
	int i;

	for (i = 0; i < CAP_IDS; i++) {
		if (create_id(fd, 1, RDMA_PS_TCP, &id))
			return -1;
		if (!i && first)
			*first = id;
	}
	return 0;
}

/*
 * CREATE_ID past the cap: EMFILE, counted; a destroyed id makes room again;
 * another file has its own cap.
 */
static void caps_create_id_emfile(int fd, int other)
{
	uint32_t first, id;
	long ids, refused;

	if (fill_ids(fd, &first)) {
		ktap_result(0, __func__, "filling to the cap: %s", strerror(errno));
		return;
	}
	EXPECT_ERRNO("caps_create_id_past_cap_emfile", create_id(fd, 1, RDMA_PS_TCP, &id), EMFILE);
	ids = fdinfo_number(fd, "rdma_cm_ids");
	refused = fdinfo_number(fd, "rdma_cm_ids_refused");
	ktap_result(ids == CAP_IDS && refused == 1, "caps_ids_refused_counted",
		    "rdma_cm_ids %ld, rdma_cm_ids_refused %ld; want %d and 1", ids, refused,
		    CAP_IDS);
	ktap_result(!destroy_id(fd, first, NULL) && !create_id(fd, 1, RDMA_PS_TCP, &id),
		    "caps_destroy_makes_room", "%s", strerror(errno));
	ktap_result(!fill_ids(other, NULL), "caps_per_file", "the other file: %s",
		    strerror(errno));
}

/* MIGRATE_ID into a full file: EMFILE, and the id stays where it was. */
static void caps_migrate_emfile(int full, int src)
{
	uint32_t id, first;

	if (fill_ids(full, &first) || create_id(src, 1, RDMA_PS_TCP, &id)) {
		ktap_result(0, __func__, "setup: %s", strerror(errno));
		return;
	}
	EXPECT_ERRNO("caps_migrate_into_full_file_emfile", migrate_id(full, id, src), EMFILE);
	ktap_result(fdinfo_number(src, "rdma_cm_ids") == 1 &&
		    fdinfo_number(full, "rdma_cm_ids") == CAP_IDS &&
		    fdinfo_number(full, "rdma_cm_ids_refused") == 1,
		    "caps_migrate_refused_id_stays", "src ids %ld, full ids %ld refused %ld",
		    fdinfo_number(src, "rdma_cm_ids"), fdinfo_number(full, "rdma_cm_ids"),
		    fdinfo_number(full, "rdma_cm_ids_refused"));
	/* An id migrated out of the full file makes room in it. */
	ktap_result(!migrate_id(src, first, full) && fdinfo_number(full, "rdma_cm_ids") == CAP_IDS - 1 &&
		    !create_id(full, 1, RDMA_PS_TCP, &id), "caps_migrate_out_makes_room",
		    "full ids %ld: %s", fdinfo_number(full, "rdma_cm_ids"), strerror(errno));
}

/* WRITE_CM_EVENT past the event cap: ENOBUFS, counted; GET_EVENT makes room. */
static void caps_write_event_enobufs(int fd)
{
	struct rdma_ucm_event_resp ev;
	struct sockaddr_in dst;
	uint32_t id, other;
	int i, ok = 1;

	if (create_id(fd, 1, RDMA_PS_TCP, &id)) {
		ktap_result(0, __func__, "create: %s", strerror(errno));
		return;
	}
	for (i = 0; ok && i < CAP_EVENTS; i++)
		ok = !write_user_event(fd, id, EV_USER, 0, i);
	ktap_result(ok, "caps_write_event_to_cap", "event %d: %s", i, strerror(errno));
	EXPECT_ERRNO("caps_write_event_past_cap_enobufs", write_user_event(fd, id, EV_USER, 0, 99),
		     ENOBUFS);
	ktap_result(fdinfo_number(fd, "rdma_cm_events_queued") == CAP_EVENTS &&
		    fdinfo_number(fd, "rdma_cm_events_refused") == 1, "caps_events_refused_counted",
		    "queued %ld refused %ld", fdinfo_number(fd, "rdma_cm_events_queued"),
		    fdinfo_number(fd, "rdma_cm_events_refused"));
	ktap_result(!get_event(fd, &ev, sizeof(ev)) &&
		    !write_user_event(fd, id, EV_USER, 0, 100), "caps_get_event_makes_room",
		    "%s", strerror(errno));
	/* Full again: the commands rdma_cm reports events after wait too. */
	dst = ipv4("192.0.2.1", 0);
	if (create_id(fd, 1, RDMA_PS_TCP, &other)) {
		ktap_result(0, "caps_resolve_past_cap_enobufs", "create: %s", strerror(errno));
		ktap_result(0, "caps_destroy_frees_event_room", "not run");
		return;
	}
	EXPECT_ERRNO("caps_resolve_past_cap_enobufs", resolve_ip(fd, other, &dst), ENOBUFS);
	/* Destroying the id whose events fill the queue empties it. */
	ktap_result(!destroy_id(fd, id, NULL) && fdinfo_number(fd, "rdma_cm_events_queued") == 0 &&
		    !write_user_event(fd, other, EV_USER, 0, 1), "caps_destroy_frees_event_room",
		    "queued %ld: %s", fdinfo_number(fd, "rdma_cm_events_queued"), strerror(errno));
}

/*
 * A connect request to a listener whose file is full, of events (@ids 0)
 * or of ids (@ids 1), is dropped as one past the backlog (ib_cm's peer
 * retries): counted, nothing queued, no id made.
 */
static void caps_connect_request_dropped(const char *name, int ids, uint16_t port, int fl,
					 int fc)
{
	const char *key = ids ? "rdma_cm_ids_refused" : "rdma_cm_events_refused";
	const char *ip = ucma_env.rxe_ip, *step;
	struct sockaddr_in a;
	uint32_t l, c, c2;
	long refused = 0;
	int i, w;

	if (!ip) {
		ktap_result(0, name, "RXE_IP is not set");
		return;
	}
	a = ipv4(ip, port);
	step = route_to_listener(fl, fc, &a, &l, &c);
	for (i = 0; !step && !ids && i < CAP_EVENTS; i++)
		if (write_user_event(fl, l, EV_USER, 0, i))
			step = "fill the listener's queue";
	for (i = 1; !step && ids && i < CAP_IDS; i++)
		if (create_id(fl, 1, RDMA_PS_TCP, &c2))
			step = "fill the listener's file with ids";
	if (!step && connect_id(fc, c, 0x123))
		step = "connect";
	if (step) {
		ktap_result(0, name, "%s: %s", step, strerror(errno));
		return;
	}
	for (w = 0; w < 100 && refused < 1; w++) {
		usleep(100000);
		refused = fdinfo_number(fl, key);
	}
	ktap_result(refused >= 1 &&
		    fdinfo_number(fl, "rdma_cm_events_queued") == (ids ? 0 : CAP_EVENTS) &&
		    fdinfo_number(fl, "rdma_cm_ids") == (ids ? CAP_IDS : 1), name,
		    "%s %ld, queued %ld, ids %ld", key, refused,
		    fdinfo_number(fl, "rdma_cm_events_queued"), fdinfo_number(fl, "rdma_cm_ids"));
}

/* Two files of the device per group (the groups that fork open their own). */
struct limits_files {
	int fd, fd2;
};

static void limits_setup(struct __test_metadata *_metadata, struct limits_files *f)
{
	f->fd = ucma_dev_open();
	f->fd2 = ucma_dev_open();
	ASSERT_LE(0, f->fd) TH_LOG("open %s: %s", UCMA_DEV, strerror(errno));
	ASSERT_LE(0, f->fd2) TH_LOG("open %s: %s", UCMA_DEV, strerror(errno));
}

static void limits_teardown(struct __test_metadata *_metadata, struct limits_files *f)
{
	close(f->fd);
	close(f->fd2);
	ktap_group_end(_metadata);
}

FIXTURE(memcg)
{
	struct limits_files f;
};

FIXTURE_SETUP(memcg)
{
	limits_setup(_metadata, &self->f);
}

FIXTURE_TEARDOWN(memcg)
{
	limits_teardown(_metadata, &self->f);
}

FIXTURE(caps)
{
	struct limits_files f;
};

FIXTURE_SETUP(caps)
{
	limits_setup(_metadata, &self->f);
}

FIXTURE_TEARDOWN(caps)
{
	limits_teardown(_metadata, &self->f);
}

/*
 * The plan of a group: its @n cases @names. Under the C module they are
 * all skipped, and only there (UCMA_MODULE=c, from the VM runner), not when
 * a feature looks absent: an ucma_rs that lost an fdinfo line fails.
 * UCMA_LIMITS_FORCE=1 runs them anyway: the C module fails them. Nonzero
 * if the group is to run.
 */
static int limits_plan(const char *const *names, int n)
{
	int i;

	ktap_header(n);
	if (getenv("UCMA_LIMITS_FORCE") || !module_is_c())
		return 1;
	for (i = 0; i < n; i++)
		ktap_skipped(names[i], "C module: no limits");
	return 0;
}

#define LIMITS_PLAN(...)                                                                   \
	({                                                                                \
		static const char *const _names[] = { __VA_ARGS__ };                       \
		limits_plan(_names, ARRAY_SIZE(_names));                                  \
	})

/*
 * The groups, each in a process of its own (kselftest_harness.h) with its
 * timeout: three times its longest run on the debug kernel.
 */
TEST_F_TIMEOUT(memcg, ids, 60)
{
	if (LIMITS_PLAN("memcg_create_ids_enomem", "memcg_charges_returned_on_close"))
		memcg_create_ids_enomem();
}

TEST_F_TIMEOUT(memcg, others, 30)
{
	if (LIMITS_PLAN("memcg_others_unaffected"))
		memcg_others_unaffected(self->f.fd);
}

TEST_F_TIMEOUT(memcg, handler_events, 60)
{
	if (LIMITS_PLAN("memcg_handler_events_charged", "memcg_handler_events_returned_on_close"))
		memcg_handler_events_charged();
}

TEST_F_TIMEOUT(memcg, handler_at_limit, 90)
{
	if (LIMITS_PLAN("memcg_handler_charge_reclaims_once"))
		memcg_handler_charge_reclaims_once();
}

TEST_F_TIMEOUT(caps, fdinfo, 30)
{
	if (LIMITS_PLAN("caps_in_fdinfo", "caps_in_sysfs")) {
		caps_in_fdinfo(self->f.fd);
		caps_in_sysfs();
	}
}

TEST_F_TIMEOUT(caps, create_id, 30)
{
	if (LIMITS_PLAN("caps_create_id_past_cap_emfile", "caps_ids_refused_counted",
			"caps_destroy_makes_room", "caps_per_file"))
		caps_create_id_emfile(self->f.fd, self->f.fd2);
}

TEST_F_TIMEOUT(caps, migrate, 30)
{
	if (LIMITS_PLAN("caps_migrate_into_full_file_emfile", "caps_migrate_refused_id_stays",
			"caps_migrate_out_makes_room"))
		caps_migrate_emfile(self->f.fd, self->f.fd2);
}

TEST_F_TIMEOUT(caps, write_event, 30)
{
	if (LIMITS_PLAN("caps_write_event_to_cap", "caps_write_event_past_cap_enobufs",
			"caps_events_refused_counted", "caps_get_event_makes_room",
			"caps_resolve_past_cap_enobufs", "caps_destroy_frees_event_room"))
		caps_write_event_enobufs(self->f.fd);
}

TEST_F_TIMEOUT(caps, dropped_events, 30)
{
	if (LIMITS_PLAN("caps_connect_request_dropped_events"))
		caps_connect_request_dropped("caps_connect_request_dropped_events", 0, 7471,
					     self->f.fd, self->f.fd2);
}

TEST_F_TIMEOUT(caps, dropped_ids, 30)
{
	if (LIMITS_PLAN("caps_connect_request_dropped_ids"))
		caps_connect_request_dropped("caps_connect_request_dropped_ids", 1, 7472,
					     self->f.fd, self->f.fd2);
}

/*
 * Usage: ucma_limits memcg|caps: the fixture's groups; or the harness's
 * options ("ucma_limits -r caps.migrate": one group).
 */
int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "memcg") && strcmp(argv[1], "caps") && argv[1][0] != '-')) {
		fprintf(stderr, "usage: %s memcg|caps\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	return harness_main(argc, argv, 0, NULL);
}
