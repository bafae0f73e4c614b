// SPDX-License-Identifier: GPL-2.0
/*
 * ucma_kcov -o FILE [-m MODULE] -- CMD [ARG...]
 *
 * Runs CMD under a KCOV remote-coverage collector (tests/lib/kcov_remote.h)
 * and writes to FILE every coverage point of MODULE (default ucma_rs) that
 * CMD and everything it starts reached: what their file operations ran,
 * and what rdma_cm's workers ran for the ids of files they opened (event
 * handlers, close work). Then exits with CMD's status.
 *
 * A point is written as "SYMBOL+0xOFFSET", from the module's symbols in
 * /proc/kallsyms, so that it does not depend on where the module was
 * loaded: a suite that reloads it (caps, robustness, differential) puts it
 * elsewhere. The collector reads the module's .text address at every
 * drain; when the module went away, what the buffer holds is mapped with
 * the load that is gone; when it came (back), with the new load's symbols.
 * A reload between two drains (20 ms) maps the new load's first points
 * with the old symbols: scripts/coverage counts such points as not the
 * module's. A point may be written more than once (once per load);
 * scripts/coverage merges them.
 *
 * On stderr, one line: "ucma_kcov: N points, U unmapped (E entries taken
 * in D drains, L loads)", and a warning when the buffer came close to full
 * (points may be missing).
 *
 * Needs a CONFIG_KCOV kernel (the debug kernel) and ucma_rs built for it
 * (Kbuild's KCOV_INSTRUMENT); exits 2 without /sys/kernel/debug/kcov.
 * scripts/coverage runs the VM suites under it and maps the PCs to
 * ucma_rs's functions.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

#include "kcov_remote.h"

#define SET_CAP (1UL << 20)

static struct kcov_set *set;
static const char *module = "ucma_rs";

static struct kcov_syms syms;
static unsigned long written, unmapped, loads;

/* The module's .text address, or 0 while it is not loaded. */
static uint64_t module_text(void)
{
	unsigned long long a = 0;
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/%s/sections/.text", module);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llx", &a) != 1)
		a = 0;
	fclose(f);
	return a;
}

/* Writes the set's points as SYMBOL+0xOFFSET, then empties the set. */
static void flush_points(FILE *out)
{
	size_t i;

	for (i = 0; i < set->cap; i++) {
		uint64_t pc = set->slot[i];

		if (!pc)
			continue;
		set->slot[i] = 0;
		if (kcov_syms_write(&syms, out, pc))
			written++;
		else
			unmapped++;
	}
	set->n = 0;
}

static void add(uint64_t pc, void *arg)
{
	(void)arg;
	kcov_set_add(set, pc);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	struct kcov_collector c;
	const char *out = NULL;
	unsigned long drains = 0;
	uint64_t text = 0, now;
	int opt, status = 0, settle;
	FILE *f;
	pid_t pid;

	while ((opt = getopt(argc, argv, "+o:m:h")) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'm':
			module = optarg;
			break;
		default:
			fprintf(stderr, "usage: ucma_kcov -o FILE [-m MODULE] -- CMD [ARG...]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!out || optind >= argc) {
		fprintf(stderr, "usage: ucma_kcov -o FILE [-m MODULE] -- CMD [ARG...]\n");
		return 2;
	}
	f = fopen(out, "w");
	if (!f) {
		fprintf(stderr, "ucma_kcov: %s: %s\n", out, strerror(errno));
		return 2;
	}
	set = calloc(1, kcov_set_size(SET_CAP));
	if (!set)
		return 2;
	set->cap = SET_CAP;
	if (kcov_open(&c, (uint32_t)getpid(), KCOV_AREA_WORDS, KCOV_SECTION_WORDS)) {
		fprintf(stderr, "ucma_kcov: %s: %s (a CONFIG_KCOV kernel: the debug kernel)\n",
			KCOV_PATH, strerror(errno));
		return 2;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "ucma_kcov: %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	/*
	 * Drain every 20 ms while CMD runs, then for another second: work it
	 * queued (a close after a device removal) may still be running.
	 */
	for (settle = -1; settle != 0; drains++) {
		now = module_text();
		if (now != text) {
			/*
			 * Unloaded since the last drain: what the buffer holds ran
			 * in the load that is gone, mapped with its symbols.
			 * Loaded after a drain that found it absent: what the
			 * buffer holds ran in the new load, mapped with its own.
			 */
			if (now && !text) {
				kcov_syms_read(&syms, module);
				loads++;
			}
			kcov_drain(&c, add, NULL);
			flush_points(f);
			if (now && text) {
				kcov_syms_read(&syms, module);
				loads++;
			}
			text = now;
		}
		kcov_drain(&c, add, NULL);
		sleep_ms(20);
		if (settle < 0 && waitpid(pid, &status, WNOHANG) == pid)
			settle = 50;
		else if (settle > 0)
			settle--;
	}
	kcov_drain(&c, add, NULL);
	kcov_close(&c);
	flush_points(f);
	if (fclose(f))
		return 2;
	fprintf(stderr, "ucma_kcov: %lu points, %lu unmapped (%lu entries taken in %lu drains, %lu loads)\n",
		written, unmapped, c.taken, drains, loads);
	if (c.near_full || set->missed)
		fprintf(stderr,
			"ucma_kcov: warning: the buffer was nearly full in %lu drains, %lu PCs found the set full: points may be missing\n",
			c.near_full, set->missed);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
