/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal KTAP v1 reporting for the ucma-rs userspace tests: one
 * "ok N name" / "not ok N name # reason" line per case, a plan, and a
 * closing "# N passed, M failed" line.
 */
#ifndef UCMA_KTAP_H
#define UCMA_KTAP_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int ktap_n, ktap_pass, ktap_fail, ktap_skip;

static inline void ktap_header(int plan)
{
	printf("KTAP version 1\n1..%d\n", plan);
	fflush(stdout);
}

static inline void ktap_result(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	ktap_n++;
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
	return ktap_fail ? 1 : 0;
}

/* Expect a call to fail with errno @e: ret must be -1 and errno == e. */
#define EXPECT_ERRNO(name, call, e)                                              \
	do {                                                                     \
		errno = 0;                                                       \
		long _r = (long)(call);                                          \
		int _e = errno;                                                  \
		ktap_result(_r == -1 && _e == (e), name,                         \
			    "got ret %ld errno %d (%s), want errno %d (%s)", _r, \
			    _e, strerror(_e), (e), strerror(e));                 \
	} while (0)

#endif /* UCMA_KTAP_H */
