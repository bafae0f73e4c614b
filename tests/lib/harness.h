/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C suites on the kernel's kselftest_harness.h
 * (tools/testing/selftests/kselftest_harness.h of the cached kernel source,
 * found at build time: build_tests in scripts/common.sh; it is not copied
 * here). Each suite has a FIXTURE holding its files and addresses, set up
 * and torn down around every test, and one TEST_F per group of cases: the
 * harness runs each in a process of its own (a crash or a hang fails that
 * group only) and kills it after its TIMEOUT (TEST_F_TIMEOUT). A group's
 * cases are a nested KTAP subtest (tests/lib/ktap.h); its fixture's
 * FIXTURE_TEARDOWN calls ktap_group_end(), which fails the group when a
 * case failed or the cases are not its plan.
 *
 * The output is KTAP v1, "KTAP version 1" first, then the harness's plan
 * (one line per TEST_F), each group's cases indented under its "# RUN"
 * line, then "ok N fixture.test" or "not ok N fixture.test # reason", and
 * "# Totals: ...". tools/testing/kunit/kunit.py parse reads it.
 */
#ifndef UCMA_HARNESS_H
#define UCMA_HARNESS_H

/* The harness's own messages (a timeout, a crash) among the cases. */
#define TH_LOG_STREAM stdout
#include "kselftest_harness.h"

#include "ktap.h"
#include "ucma_dev.h"

/*
 * The end of a group, from its fixture's teardown: a diagnostic line with
 * its counts and time, and the group's verdict: failed when a case failed,
 * the group printed no plan or another number of cases than its plan;
 * skipped when every case skipped.
 */
static inline void ktap_group_end(struct __test_metadata *_metadata)
{
	char *why = _metadata->results->reason;
	size_t len = sizeof(_metadata->results->reason);

	if (ktap_plan < 0) {
		snprintf(why, len, "no plan: the group printed no cases");
		_metadata->exit_code = KSFT_FAIL;
		return;
	}
	printf("# %s: %d cases: %d passed, %d failed, %d skipped in %.1f s\n",
	       ktap_subtest[0] ? ktap_subtest : _metadata->name,
	       ktap_n, ktap_pass, ktap_fail, ktap_skip, ktap_seconds());
	if (ktap_n != ktap_plan) {
		snprintf(why, len, "planned %d cases, ran %d", ktap_plan, ktap_n);
		_metadata->exit_code = KSFT_FAIL;
	} else if (ktap_fail) {
		snprintf(why, len, "%d of %d cases failed", ktap_fail, ktap_n);
		_metadata->exit_code = KSFT_FAIL;
	} else if (ktap_n > 0 && ktap_skip == ktap_n) {
		snprintf(why, len, "%s", ktap_skip_why);
		_metadata->exit_code = KSFT_SKIP;
	}
	fflush(stdout);
}

/*
 * Memory the suite's processes share (MAP_SHARED, zeroed), for what runs
 * through the groups, each in a process of its own: a counter, totals for
 * the end. Map it before the harness forks (main(), or harness_main()'s
 * @init); bails out if it cannot be mapped.
 */
static inline void *harness_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		ucma_bail_out("mmap of %zu shared bytes: %s", len, strerror(errno));
	return p;
}

/*
 * Scales every test's timeout by @num / @den (a suite asked for more
 * rounds than its timeouts were set for). Before harness_main() runs the
 * tests: main(), or harness_main()'s @init.
 */
static inline void harness_scale_timeouts(long num, long den)
{
	struct __fixture_metadata *f;
	struct __test_metadata *t;

	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next)
			t->timeout = (int)((long)t->timeout * num / den);
}

/* Each test's own function, which harness_named_group() calls. */
static struct harness_group_fn {
	struct __test_metadata *t;
	void (*fn)(struct __test_metadata *t, struct __fixture_variant_metadata *v);
} *harness_group_fns;
static int harness_group_count;

/*
 * Every test's function, in the test's own process: names the group for
 * its "# Subtest:" line (the name of the harness's result line for it),
 * then runs the test.
 */
static void harness_named_group(struct __test_metadata *t, struct __fixture_variant_metadata *v)
{
	int i;

	snprintf(ktap_subtest, sizeof(ktap_subtest), "%s%s%s.%s", t->fixture->name,
		 v->name[0] ? "." : "", v->name, t->name);
	for (i = 0; i < harness_group_count; i++)
		if (harness_group_fns[i].t == t) {
			harness_group_fns[i].fn(t, v);
			return;
		}
	ucma_bail_out("test %s has no function", ktap_subtest);
}

/* Whether option @o of the harness (test_harness_run()) takes an argument. */
static inline int harness_opt_has_arg(const char *o)
{
	return o[0] == '-' && o[1] && !o[2] && strchr("FfVvTtr", o[1]);
}

/*
 * The suite's main(): ucma_setup(@need) (the device and the addresses of
 * UCMA_NEED_*, or "Bail out!"), then @init (the suite's own setup, may be
 * NULL; it bails out itself), then its tests, each TEST_F in a process of
 * its own; exits with the harness's status. @argv: words select the tests
 * whose name ("fixture.test") contains one of them (none: every test);
 * arguments starting with '-' are the harness's own options (-l lists the
 * tests and needs no device, -h tells the others), passed on.
 */
static inline int harness_main(int argc, char **argv, unsigned int need, void (*init)(void))
{
	struct __fixture_variant_metadata none = { .name = "" }, *v;
	struct __fixture_metadata *f;
	struct __test_metadata *t;
	int i, j, n = 0, words = 0, tests = 0, listing = 0;
	char **av, name[256];

	for (f = __fixture_list; f; f = f->next)
		for (v = f->variant ?: &none; v; v = v->next)
			for (t = f->tests; t; t = t->next)
				tests++;
	/*
	 * Line-buffered even into a file (differential.sh): an ASSERT ends
	 * the test with abort(), which does not flush stdio.
	 */
	setvbuf(stdout, NULL, _IOLBF, 0);
	av = calloc(argc + 2 * tests + 3, sizeof(*av));
	harness_group_fns = calloc(tests, sizeof(*harness_group_fns));
	if (!av || !harness_group_fns)
		ucma_bail_out("out of memory");
	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next) {
			harness_group_fns[harness_group_count].t = t;
			harness_group_fns[harness_group_count++].fn = t->fn;
			t->fn = harness_named_group;
		}
	av[n++] = argv[0];
	for (i = 1; i < argc; i++) {
		if (argv[i][0] == '-') {
			listing |= !strcmp(argv[i], "-l") || !strcmp(argv[i], "-h");
			av[n++] = argv[i];
			if (harness_opt_has_arg(argv[i]) && i + 1 < argc)
				av[n++] = argv[++i];
			continue;
		}
		words++;
	}
	/* Each test whose full name ("fixture[.variant].test") has a word, by -r. */
	tests = 0;
	for (f = __fixture_list; f && words; f = f->next)
		for (v = f->variant ?: &none; v; v = v->next)
			for (t = f->tests; t; t = t->next) {
				snprintf(name, sizeof(name), "%s%s%s.%s", f->name, v->name[0] ? "." : "",
					 v->name, t->name);
				for (i = 1; i < argc; i++) {
					if (argv[i][0] == '-') {
						i += harness_opt_has_arg(argv[i]);
						continue;
					}
					if (strstr(name, argv[i])) {
						av[n++] = "-r";
						av[n++] = strdup(name);
						tests++;
						break;
					}
				}
			}
	if (words && !tests) {
		/* No test matches: a plan of none. */
		av[n++] = "-r";
		av[n++] = "-";
	}
	for (j = 0; j < n; j++)
		if (!av[j])
			ucma_bail_out("out of memory");
	if (!listing) {
		ucma_setup(need);
		if (init)
			init();
		/* KTAP v1's version line in place of the harness's "TAP version 13". */
		printf("KTAP version 1\n");
		setenv("KSFT_TAP_LEVEL", "1", 1);
	}
	ktap_indent = "    ";
	/* The harness parses @av with getopt() again: from the start (a suite may have parsed its own). */
	optind = 0;
	return test_harness_run(n, av);
}

#endif /* UCMA_HARNESS_H */
