/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cases of the ucma-rs C suites, one KTAP v1 line each
 * (Documentation/dev-tools/ktap.rst): the plan ("1..N", ktap_header(),
 * before the first case), then "ok N name", "not ok N name # reason" or
 * "ok N name # SKIP reason" per case.
 *
 * In a suite on the kernel's kselftest_harness.h (tests/lib/harness.h)
 * every TEST_F is a group of cases, run in a process of its own: its cases
 * are a subtest, indented under the harness's line for the group, and
 * ktap_group_end() (from the fixture's teardown) fails the group if a case
 * failed or the count is not the plan:
 *   #  RUN           cmds.events ...
 *       KTAP version 1
 *       # Subtest: cmds.events
 *       1..20
 *       ok 1 get_event_empty_nonblock_eagain
 *       ...
 *   # cmds.events: 20 cases: 20 passed, 0 failed, 0 skipped in 0.4 s
 *   #            OK  cmds.events
 *   ok 2 cmds.events
 * A suite of its own (not on the harness) prints the same lines unindented
 * and ends with ktap_finish().
 */
#ifndef UCMA_KTAP_H
#define UCMA_KTAP_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* The counts of this process's cases (of its group, on the harness). */
static int ktap_n, ktap_pass, ktap_fail, ktap_skip;
static int ktap_plan = -1;
/* Indentation of the case lines: "    " under the harness (tests/lib/harness.h). */
static const char *ktap_indent = "";
/* A group's name ("fixture[.variant].test"), for its "# Subtest:" line. */
static char ktap_subtest[256];
/* The reason of the first skipped case, for a group that skipped all. */
static char ktap_skip_why[200];
static struct timespec ktap_t0;

/*
 * The differential log: with UCMA_OBSERVE=path in the environment, every
 * case also appends what it saw to that file, one line per observation:
 *   "<case> rc <ret> <errno>"     (EXPECT_ERRNO)
 *   "<case> pass <0|1>"           (ktap_result)
 *   "<case> reply <hex bytes>"    (ktap_observe_reply, ids normalised)
 * tests/vm/differential.sh runs the harnesses against both modules in one
 * boot and compares the two logs line by line.
 */
static FILE *ktap_obs;
static int ktap_obs_opened;

static inline FILE *ktap_obs_file(void)
{
	const char *path;

	if (!ktap_obs_opened) {
		ktap_obs_opened = 1;
		path = getenv("UCMA_OBSERVE");
		if (path)
			ktap_obs = fopen(path, "a");
	}
	return ktap_obs;
}

static inline void ktap_observe_rc(const char *name, long ret, int err)
{
	FILE *f = ktap_obs_file();

	if (f) {
		fprintf(f, "%s rc %ld %d\n", name, ret, err);
		fflush(f);
	}
}

static inline void ktap_observe_reply(const char *name, const void *reply, size_t len)
{
	const unsigned char *b = reply;
	FILE *f = ktap_obs_file();
	size_t i;

	if (!f)
		return;
	fprintf(f, "%s reply ", name);
	for (i = 0; i < len; i++)
		fprintf(f, "%02x", b[i]);
	fprintf(f, "\n");
	fflush(f);
}

/*
 * Ids normalised for the differential log: the n-th distinct id a suite
 * saw is logged as n, so two modules that number contexts differently
 * still compare equal. The table is shared (MAP_SHARED, mapped before
 * main()) by the processes the harness forks, one per group, so that the
 * numbering runs through the whole suite in the order the groups run.
 */
struct ktap_ids {
	unsigned int n;
	uint32_t seen[256];
};

static struct ktap_ids *ktap_ids;

static void __attribute__((constructor)) ktap_ids_map(void)
{
	void *p = mmap(NULL, sizeof(*ktap_ids), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ktap_ids = p == MAP_FAILED ? NULL : p;
}

static inline uint32_t ktap_norm_id(uint32_t id)
{
	struct ktap_ids *t = ktap_ids;
	unsigned int i;

	if (!t)
		return id;
	for (i = 0; i < t->n; i++)
		if (t->seen[i] == id)
			return i + 1;
	if (t->n < 256)
		t->seen[t->n++] = id;
	return t->n;
}

/*
 * The version line, a group's "# Subtest:" line (on the harness: the name
 * its result line will have, so that kunit.py tells a group cut short from
 * one that ran its plan) and the plan: call before the first case.
 */
static inline void ktap_header(int plan)
{
	ktap_plan = plan;
	clock_gettime(CLOCK_MONOTONIC, &ktap_t0);
	printf("%sKTAP version 1\n", ktap_indent);
	if (ktap_subtest[0])
		printf("%s# Subtest: %s\n", ktap_indent, ktap_subtest);
	printf("%s1..%d\n", ktap_indent, plan);
	fflush(stdout);
}

static inline void ktap_result(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	ktap_n++;
	if (ktap_obs_file()) {
		fprintf(ktap_obs, "%s pass %d\n", name, !!ok);
		fflush(ktap_obs);
	}
	if (ok)
		ktap_pass++;
	else
		ktap_fail++;
	printf("%s%sok %d %s", ktap_indent, ok ? "" : "not ", ktap_n, name);
	if (!ok && fmt) {
		printf(" # ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	printf("\n");
	fflush(stdout);
}

static inline void ktap_skipped(const char *name, const char *why)
{
	ktap_n++;
	if (!ktap_skip++)
		snprintf(ktap_skip_why, sizeof(ktap_skip_why), "%.199s", why);
	printf("%sok %d %s # SKIP %s\n", ktap_indent, ktap_n, name, why);
	fflush(stdout);
}

/* Seconds since ktap_header(). */
static inline double ktap_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - ktap_t0.tv_sec) + (t.tv_nsec - ktap_t0.tv_nsec) / 1e9;
}

/* The end of a suite of its own: its tally, and its exit status. */
static inline int ktap_finish(void)
{
	printf("# %d passed, %d failed, %d skipped\n", ktap_pass, ktap_fail, ktap_skip);
	if (ktap_n != ktap_plan) {
		printf("# plan mismatch: planned %d cases, ran %d\n", ktap_plan, ktap_n);
		return 1;
	}
	return ktap_fail ? 1 : 0;
}

/* Expect a call to fail with errno @e: ret must be -1 and errno == e. */
#define EXPECT_ERRNO(name, call, e)                                              \
	do {                                                                     \
		errno = 0;                                                       \
		long _r = (long)(call);                                          \
		int _e = errno;                                                  \
		ktap_observe_rc(name, _r, _e);                                   \
		ktap_result(_r == -1 && _e == (e), name,                         \
			    "got ret %ld errno %d (%s), want errno %d (%s)", _r, \
			    _e, strerror(_e), (e), strerror(e));                 \
	} while (0)

#endif /* UCMA_KTAP_H */
