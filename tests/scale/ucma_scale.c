// SPDX-License-Identifier: GPL-2.0
/*
 * Scale test of the global id table: hundreds of thousands of live ids,
 * through one file and through four files at once, then closed, and every
 * id must be gone: a fresh file then gets the same number of ids, exactly
 * the first id and the ones after it (ids are lowest-free-first in both
 * modules), so that a release that stops early, or skips ids, is seen
 * wherever it leaves them. Also bound ids as rdma_cm sees them (the restrack cm_id count of
 * the rxe device) and DESTROY_ID of many ids in both orders. Prints the cost
 * per id (ns per create, close and destroy, kB of MemAvailable) as KTAP
 * diagnostics and one "# scale: ..." summary line (after the harness's
 * totals).
 *
 * On the kernel's kselftest_harness.h (tests/lib/harness.h): one TEST_F
 * per group, each in a process of its own with its own buffer of ids.
 * SCALE_IDS (default 300000) sets the scale: one_file creates SCALE_IDS
 * ids on one file (and checks them all free after its close), four_files
 * SCALE_IDS / 3 on each of four files, bound_ids binds SCALE_IDS / 15 ids,
 * destroy destroys SCALE_IDS / 3. The default is the real scale (above
 * 262144 live ids); smaller values are for quick iteration. Needs RXE_IP
 * for bound_ids (scripts/vm-run). Prints KTAP.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "ucma_cmd.h"

static long n_ids = 300000;
static uint32_t base_id;
static const char *rxe_ip, *rxe_dev;

/*
 * The costs for the summary line, measured by the groups: shared
 * (MAP_SHARED, mapped before the groups fork) so that main() prints them.
 */
static struct scale_costs {
	double create_ns, close_ns, destroy_ns;
} *costs;

/* A buffer for the ids of one group; case 3 uses 4 * (n_ids / 3) at most. */
FIXTURE(scale)
{
	uint32_t *ids;
};

FIXTURE_SETUP(scale)
{
	self->ids = calloc(n_ids + n_ids / 3 + 1, sizeof(*self->ids));
	ASSERT_NE(NULL, self->ids) TH_LOG("out of memory");
}

FIXTURE_TEARDOWN(scale)
{
	free(self->ids);
	ktap_group_end(_metadata);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static double per_id(uint64_t ns, long n)
{
	return n > 0 ? (double)ns / n : 0;
}

/* MemAvailable in kB, or -1. */
static long mem_available_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * Whether the @n ids from the first one are all free again (ids_free_from()):
 * a fresh file creates @n ids and must get base_id, base_id + 1, ... in
 * order. On failure @why says which id was taken. Prints the time it took.
 */
static int ids_all_free(const char *name, long n, char *why, size_t len)
{
	uint64_t t = now_ns();
	uint32_t taken;
	int ok = ids_free_from_at(base_id, n, &taken), e = errno;

	t = now_ns() - t;
	printf("# %s: %ld ids recreated from id %u on a fresh file in %.3f s (%s)\n", name, n,
	       base_id, t / 1e9, ok ? "all free" : "not all free");
	if (ok)
		why[0] = 0;
	else if (taken == ~0u)
		snprintf(why, len, "recreating %ld ids failed: errno %d (%s)", n, e, strerror(e));
	else
		snprintf(why, len, "id %u of %u..%ld was still taken", taken, base_id,
			 (long)base_id + n - 1);
	return ok;
}

/*
 * Creates @n UDP ids on @fd into @out; returns how many were created, and
 * the errno of the first failure in @err (0 if none).
 */
static long create_many(int fd, uint32_t *out, long n, int *err)
{
	long i;

	*err = 0;
	for (i = 0; i < n; i++) {
		if (create_id(fd, i, RDMA_PS_UDP, &out[i])) {
			*err = errno;
			break;
		}
	}
	return i;
}

/* Closes @fd; returns the time the close took, in ns. */
static uint64_t timed_close(int fd)
{
	uint64_t t = now_ns();

	close(fd);
	return now_ns() - t;
}

/* The time of one read of /proc/self/fdinfo/@fd, in ns (0 if unreadable). */
static uint64_t fdinfo_read_ns(int fd)
{
	char path[64], buf[4096];
	uint64_t t = now_ns();
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fread(buf, 1, sizeof(buf), f) > 0)
		;
	fclose(f);
	return now_ns() - t;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#define FDINFO_READS 9
/* fdinfo's read time at the big file's size over a one-id file's (medians). */
#define FDINFO_RATIO_MAX 10

/*
 * fdinfo of the file with every id made by scale_one_file_300k(): all
 * counted, all idle; and its read costs about what a one-id file's does
 * (ucma_rs only: the C module prints no such lines). The reads of the two
 * files alternate, FDINFO_READS each, and their medians are compared: a
 * read that walks every id fails (the old read, which looked at each id:
 * 53 ms at 300 000 ids, 170x; a bare walk of the list, the mutant
 * bounds-fdinfo-walks-every-id: 44x); one in O(listeners) measures about
 * 1x, whatever TCG's speed that minute, so the bound of 10x leaves a
 * factor of 4 or more on both sides.
 */
static void scale_fdinfo_300k(int fd, long made)
{
	uint64_t big[FDINFO_READS], small[FDINFO_READS];
	long n, idle;
	double ratio;
	uint32_t one;
	int fd1, i;

	if ((getenv("UCMA_MODULE") && !strcmp(getenv("UCMA_MODULE"), "c")) ||
	    c_module_loaded()) {
		ktap_skipped("scale_fdinfo_300k", "C module: no rdma_cm fdinfo");
		ktap_skipped("scale_fdinfo_constant", "C module: no rdma_cm fdinfo");
		return;
	}
	n = fdinfo_number(fd, "rdma_cm_ids");
	idle = fdinfo_number(fd, "rdma_cm_ids_idle");
	ktap_result(n == made && idle == made, "scale_fdinfo_300k",
		    "rdma_cm_ids %ld, rdma_cm_ids_idle %ld, want %ld each", n, idle, made);

	fd1 = ucma_dev_open();
	if (fd1 < 0 || create_id(fd1, 1, RDMA_PS_TCP, &one)) {
		ktap_result(0, "scale_fdinfo_constant", "a one-id file: %s", strerror(errno));
		if (fd1 >= 0)
			close(fd1);
		return;
	}
	for (i = 0; i < FDINFO_READS; i++) {
		big[i] = fdinfo_read_ns(fd);
		small[i] = fdinfo_read_ns(fd1);
	}
	close(fd1);
	qsort(big, FDINFO_READS, sizeof(*big), cmp_u64);
	qsort(small, FDINFO_READS, sizeof(*small), cmp_u64);
	ratio = small[FDINFO_READS / 2] ? (double)big[FDINFO_READS / 2] / small[FDINFO_READS / 2] : 0;
	printf("# scale_fdinfo_constant: fdinfo read: %.3f ms at %ld ids, %.3f ms at 1 id (medians of %d), %.1fx\n",
	       big[FDINFO_READS / 2] / 1e6, made, small[FDINFO_READS / 2] / 1e6, FDINFO_READS,
	       ratio);
	ktap_result(small[0] && ratio <= FDINFO_RATIO_MAX, "scale_fdinfo_constant",
		    "fdinfo at %ld ids takes %.1fx a one-id file's (at most %dx)", made, ratio,
		    FDINFO_RATIO_MAX);
}

static void scale_one_file_300k(uint32_t *ids)
{
	long before, after, made;
	uint64_t t, dt;
	int fd, err;

	fd = ucma_dev_open();
	if (fd < 0) {
		ktap_result(0, __func__, "open: %s", strerror(errno));
		return;
	}
	before = mem_available_kb();
	t = now_ns();
	made = create_many(fd, ids, n_ids, &err);
	dt = now_ns() - t;
	after = mem_available_kb();
	costs->create_ns = per_id(dt, made);
	printf("# %s: %ld ids created, %.0f ns per create\n", __func__, made, costs->create_ns);
	if (made > 0 && before > 0 && after > 0)
		printf("# %s: MemAvailable %ld -> %ld kB, %.2f kB per id\n", __func__,
		       before, after, (double)(before - after) / made);
	scale_fdinfo_300k(fd, made);
	dt = timed_close(fd);
	costs->close_ns = per_id(dt, made);
	printf("# %s: close of %ld ids took %.3f s, %.0f ns per id\n", __func__,
	       made, dt / 1e9, costs->close_ns);
	ktap_result(made == n_ids, __func__,
		    "CREATE_ID %ld of %ld failed: errno %d (%s)", made, n_ids, err, strerror(err));
}

/*
 * After the close of the n_ids-id file every one of its ids is free: the
 * whole range is recreated, so that a release that stops after some count
 * (2^18 entries, say) or skips ids is seen.
 */
static void scale_ids_freed_after_close(void)
{
	char why[128];
	int ok = ids_all_free(__func__, n_ids, why, sizeof(why));

	ktap_result(ok, __func__, "%s", why);
}

struct creator {
	pthread_barrier_t *go;
	int fd;
	uint32_t *ids;
	long n, made;
	int err;
};

static void *creator_main(void *p)
{
	struct creator *c = p;

	pthread_barrier_wait(c->go);
	c->made = create_many(c->fd, c->ids, c->n, &c->err);
	return NULL;
}

static void scale_four_files_100k(uint32_t *ids)
{
	struct creator c[4];
	pthread_barrier_t go;
	pthread_t th[4];
	long per = n_ids / 3, total = 0;
	int i, bad = -1, ok;
	char why[128];
	uint64_t t, dt;

	pthread_barrier_init(&go, NULL, ARRAY_SIZE(c) + 1);
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		c[i] = (struct creator){ .go = &go, .ids = ids + i * per, .n = per };
		c[i].fd = ucma_dev_open();
		if (c[i].fd < 0) {
			ktap_result(0, __func__, "open: %s", strerror(errno));
			while (i--)
				close(c[i].fd);
			pthread_barrier_destroy(&go);
			return;
		}
	}
	for (i = 0; i < ARRAY_SIZE(c); i++)
		pthread_create(&th[i], NULL, creator_main, &c[i]);
	pthread_barrier_wait(&go);
	t = now_ns();
	for (i = 0; i < ARRAY_SIZE(c); i++)
		pthread_join(th[i], NULL);
	dt = now_ns() - t;
	pthread_barrier_destroy(&go);
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		total += c[i].made;
		if (c[i].made != per && bad < 0)
			bad = i;
	}
	printf("# %s: %ld ids created by 4 threads, %.0f ns per create\n", __func__,
	       total, per_id(dt, total));
	dt = 0;
	for (i = 0; i < ARRAY_SIZE(c); i++)
		dt += timed_close(c[i].fd);
	printf("# %s: close of %ld ids took %.3f s, %.0f ns per id\n", __func__,
	       total, dt / 1e9, per_id(dt, total));
	/* All 4 * per ids, interleaved between the files, are free again. */
	ok = ids_all_free(__func__, 4 * per, why, sizeof(why));
	if (bad >= 0)
		ktap_result(0, __func__,
			    "file %d: CREATE_ID %ld of %ld failed: errno %d (%s); %ld of %ld created",
			    bad, c[bad].made, per, c[bad].err, strerror(c[bad].err), total,
			    4 * per);
	else
		ktap_result(ok, __func__, "after the close: %s", why);
}

/* The restrack cm_id count of the rxe device (`rdma resource show`), or -1. */
static long cm_id_count(void)
{
	char line[512], *p;
	long n = -1;
	FILE *f;

	f = popen("rdma resource show 2>/dev/null", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* "0: rxe0: pd 1 cq 0 qp 1 cm_id 0 mr 0 ctx 0 srq 0" */
		p = strchr(line, ':');
		if (!p || strncmp(p + 2, rxe_dev, strlen(rxe_dev)) || p[2 + strlen(rxe_dev)] != ':')
			continue;
		p = strstr(line, " cm_id ");
		if (p && sscanf(p, " cm_id %ld", &n) != 1)
			n = -1;
	}
	pclose(f);
	return n;
}

static void scale_bound_ids_visible_and_gone(uint32_t *ids)
{
	long n = n_ids / 15, made, bound, before, during = -1, after = -1;
	struct sockaddr_in addr;
	int fd, err, berr = 0, tries, ok;
	uint64_t t, dt;
	char why[128];

	if (!rxe_ip) {
		ktap_skipped(__func__, "RXE_IP not set");
		return;
	}
	addr = ipv4(rxe_ip, 0);
	before = cm_id_count();
	fd = ucma_dev_open();
	if (fd < 0 || before < 0) {
		ktap_result(0, __func__, "open: %s, cm_id count %ld", strerror(errno), before);
		if (fd >= 0)
			close(fd);
		return;
	}
	made = create_many(fd, ids, n, &err);
	t = now_ns();
	for (bound = 0; bound < made; bound++)
		if (bind_ip(fd, ids[bound], &addr)) {
			berr = errno;
			break;
		}
	dt = now_ns() - t;
	printf("# %s: %ld of %ld ids bound to %s port 0, %.0f ns per bind\n", __func__,
	       bound, n, rxe_ip, per_id(dt, bound));
	during = cm_id_count();
	close(fd);
	/* Destruction is synchronous in both modules; allow a moment anyway. */
	for (tries = 0; tries < 50; tries++) {
		after = cm_id_count();
		if (after == before)
			break;
		usleep(100000);
	}
	printf("# %s: %s cm_id count %ld before, %ld bound, %ld after close\n", __func__,
	       rxe_dev, before, during, after);
	ok = ids_all_free(__func__, made, why, sizeof(why));
	if (made != n)
		ktap_result(0, __func__,
			    "CREATE_ID %ld of %ld failed: errno %d (%s)", made, n, err, strerror(err));
	else if (berr)
		ktap_result(0, __func__,
			    "BIND_IP %ld of %ld failed: errno %d (%s)", bound, n, berr, strerror(berr));
	else
		ktap_result(during >= before + n && after == before && ok, __func__,
			    "cm_id count %ld before, %ld with %ld bound (want >= %ld), %ld after close; %s",
			    before, during, n, before + n, after, why);
}

static void scale_destroy_each(uint32_t *ids)
{
	long n = n_ids / 3, made, half = n / 2, i, done = 0, bad = -1;
	int fd, err, derr = 0, ok;
	char why[128];
	uint64_t t, dt;

	fd = ucma_dev_open();
	if (fd < 0) {
		ktap_result(0, __func__, "open: %s", strerror(errno));
		return;
	}
	made = create_many(fd, ids, n, &err);
	if (made != n) {
		close(fd);
		ktap_result(0, __func__, "CREATE_ID %ld of %ld failed: errno %d (%s)",
			    made, n, err, strerror(err));
		return;
	}
	/* The upper half newest first, then the lower half oldest first. */
	t = now_ns();
	for (i = n - 1; i >= half; i--, done++)
		if (destroy_id(fd, ids[i], NULL) && bad < 0) {
			bad = i;
			derr = errno;
		}
	for (i = 0; i < half; i++, done++)
		if (destroy_id(fd, ids[i], NULL) && bad < 0) {
			bad = i;
			derr = errno;
		}
	dt = now_ns() - t;
	costs->destroy_ns = per_id(dt, done);
	printf("# %s: %ld ids destroyed, %.0f ns per destroy\n", __func__, done, costs->destroy_ns);
	close(fd);
	/* Destroyed one by one, so nothing was left for the close to do. */
	ok = ids_all_free(__func__, n, why, sizeof(why));
	if (bad >= 0)
		ktap_result(0, __func__, "DESTROY_ID of id %u (index %ld) failed: errno %d (%s)",
			    ids[bad], bad, derr, strerror(derr));
	else
		ktap_result(ok, __func__, "after the destroys: %s", why);
}

/*
 * The groups, each in a process of its own (kselftest_harness.h) with its
 * timeout: about three times its longest run on the debug kernel with
 * 15 000 ids (make check sets SCALE_IDS to 6000 there); the default
 * kernel's 300 000 ids take less.
 */
TEST_F_TIMEOUT(scale, one_file, 180)
{
	ktap_header(4);
	scale_one_file_300k(self->ids);
	scale_ids_freed_after_close();
}

TEST_F_TIMEOUT(scale, four_files, 150)
{
	ktap_header(1);
	scale_four_files_100k(self->ids);
}

TEST_F_TIMEOUT(scale, bound_ids, 30)
{
	ktap_header(1);
	scale_bound_ids_visible_and_gone(self->ids);
}

TEST_F_TIMEOUT(scale, destroy, 60)
{
	ktap_header(1);
	scale_destroy_each(self->ids);
}

/* The summary, after the harness's last line (at its exit). */
static void scale_summary(void)
{
	printf("# scale: create %.0f ns/id, close %.0f ns/id, destroy %.0f ns/id\n",
	       costs->create_ns, costs->close_ns, costs->destroy_ns);
}

static void scale_init(void)
{
	const char *s = getenv("SCALE_IDS");

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (s && atol(s) >= 15)
		n_ids = atol(s);
	rxe_ip = ucma_env.rxe_ip;
	rxe_dev = ucma_env.rxe_dev;
	costs = harness_shared(sizeof(*costs));
	/* The first free id; every check wants it and the ones after it. */
	base_id = probe_id();
	if (base_id == ~0u)
		ucma_bail_out("no id could be created: %s", strerror(errno));
	printf("# %ld ids on one file, %ld on each of four, %ld bound, %ld destroyed; first id %u\n",
	       n_ids, n_ids / 3, n_ids / 15, n_ids / 3, base_id);
	atexit(scale_summary);
}

/* Usage: ucma_scale [GROUP...]: every group, or those whose name contains a GROUP. */
int main(int argc, char **argv)
{
	return harness_main(argc, argv, 0, scale_init);
}
