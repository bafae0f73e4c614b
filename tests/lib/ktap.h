/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal KTAP v1 reporting for the ucma-rs userspace tests: the plan
 * ("1..N", before the first case), one "ok N name" / "not ok N name # reason"
 * line per case, and a closing "# N passed, M failed, K skipped" line.
 * ktap_finish() fails a harness whose count of cases is not its plan;
 * tests/vm/ktap-verdict also fails a harness that died before its plan was
 * done.
 */
#ifndef UCMA_KTAP_H
#define UCMA_KTAP_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ktap_n, ktap_pass, ktap_fail, ktap_skip;
static int ktap_plan = -1;

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
 * Ids normalised for the differential log: the n-th distinct id a harness
 * saw is logged as n, so two modules that number contexts differently still
 * compare equal.
 */
static inline uint32_t ktap_norm_id(uint32_t id)
{
	static uint32_t seen[256];
	static unsigned int nseen;
	unsigned int i;

	for (i = 0; i < nseen; i++)
		if (seen[i] == id)
			return i + 1;
	if (nseen < 256)
		seen[nseen++] = id;
	return nseen;
}

/* The version line and the plan: call before the first case. */
static inline void ktap_header(int plan)
{
	ktap_plan = plan;
	printf("KTAP version 1\n1..%d\n", plan);
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
	printf("%sok %d %s", ok ? "" : "not ", ktap_n, name);
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
	ktap_skip++;
	printf("ok %d %s # SKIP %s\n", ktap_n, name, why);
	fflush(stdout);
}

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
