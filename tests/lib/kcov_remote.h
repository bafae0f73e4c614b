/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A KCOV remote-coverage collector (Documentation/dev-tools/kcov.rst,
 * "Remote coverage collection"), for tests/coverage/ucma_kcov.c and the
 * fuzzer's guided mode.
 *
 * The collector opens /sys/kernel/debug/kcov and enables it with a common
 * handle (KCOV_REMOTE_ENABLE); the calling task and every task it forks or
 * clones afterwards carry that handle. ucma_rs (built with KCOV_INSTRUMENT on
 * a CONFIG_KCOV kernel, the debug kernel) opens a remote section with the
 * handle of the task that makes a request: around each file operation (the
 * task's own handle) and around the event handler and close work of the ids
 * of a file (its opener's handle; rust/kcov.rs). Each section's PCs are
 * appended to the collector's buffer when it ends; only ucma_rs is
 * instrumented, so every PC is one of its coverage points.
 *
 * kcov_drain() empties the buffer while sections keep appending, without
 * losing what they append, provided one drainer at a time (callers that
 * share a collector serialise their drains): it reads the count, takes the entries, and
 * swaps the count back to 0 only if it is still the count it read (a
 * section that appended in between makes it read again). A section that
 * read the count before the swap writes its own count after it; its
 * entries then sit behind stale ones already taken, which the next drain
 * takes again (duplicates, not losses).
 */
#ifndef UCMA_KCOV_REMOTE_H
#define UCMA_KCOV_REMOTE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <linux/kcov.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define KCOV_PATH "/sys/kernel/debug/kcov"
/*
 * tests/coverage/ucma_kcov.c's buffer, in words: 64 MiB, drained every 20
 * ms; each of its sections' own, 2 MiB (a longer section is cut: a close of
 * many ids). The fuzzer's, drained after each program of a few commands,
 * are smaller (it has one per thread).
 */
#define KCOV_AREA_WORDS (1UL << 23)
#define KCOV_SECTION_WORDS (1U << 18)

struct kcov_collector {
	int fd;
	unsigned long *area;
	unsigned long words, section_words;
	/* Entries taken, and drains that found the buffer nearly full. */
	unsigned long taken, near_full;
};

/*
 * Opens a collector with common handle instance @instance (non-zero, unique
 * among the machine's collectors: a pid or tid), a buffer of @words words
 * and sections of @section_words. 0, or -1 with errno set (ENOENT: no KCOV
 * in the kernel; EEXIST: the instance is taken).
 */
static inline int kcov_open(struct kcov_collector *c, uint32_t instance, unsigned long words,
			    unsigned int section_words)
{
	struct kcov_remote_arg arg = {
		.trace_mode = KCOV_TRACE_PC,
		.area_size = section_words,
		.num_handles = 0,
		.common_handle = ((uint64_t)KCOV_SUBSYSTEM_COMMON) | instance,
	};
	int e;

	memset(c, 0, sizeof(*c));
	c->words = words;
	c->section_words = section_words;
	c->fd = open(KCOV_PATH, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return -1;
	if (ioctl(c->fd, KCOV_INIT_TRACE, c->words))
		goto fail;
	c->area = mmap(NULL, c->words * sizeof(unsigned long), PROT_READ | PROT_WRITE, MAP_SHARED,
		       c->fd, 0);
	if (c->area == MAP_FAILED) {
		c->area = NULL;
		goto fail;
	}
	if (ioctl(c->fd, KCOV_REMOTE_ENABLE, &arg))
		goto fail;
	__atomic_store_n(&c->area[0], 0, __ATOMIC_RELEASE);
	return 0;
fail:
	e = errno;
	if (c->area)
		munmap(c->area, c->words * sizeof(unsigned long));
	close(c->fd);
	c->fd = -1;
	c->area = NULL;
	errno = e;
	return -1;
}

/* Calls @fn for every PC the buffer holds and empties it (see above). */
static inline void kcov_drain(struct kcov_collector *c, void (*fn)(uint64_t pc, void *arg),
			      void *arg)
{
	unsigned long n, i, done = 0;

	for (;;) {
		n = __atomic_load_n(&c->area[0], __ATOMIC_ACQUIRE);
		if (n > c->words - 1)
			n = c->words - 1;
		for (i = done; i < n; i++)
			fn(c->area[i + 1], arg);
		c->taken += n - done;
		done = n;
		if (__atomic_compare_exchange_n(&c->area[0], &n, 0, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			break;
	}
	if (done + c->section_words >= c->words)
		c->near_full++;
}

static inline void kcov_close(struct kcov_collector *c)
{
	if (c->area)
		munmap(c->area, c->words * sizeof(unsigned long));
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->area = NULL;
}

/*
 * A set of PCs: open addressing, insertion by compare-and-swap, so that it
 * may live in memory that processes share (MAP_SHARED) and take inserts
 * from all of them at once. @cap slots, a power of two; a full set takes
 * no more (kcov_set_add() then returns 0 and counts a miss).
 */
struct kcov_set {
	unsigned long cap, n, missed;
	uint64_t slot[];
};

static inline size_t kcov_set_size(unsigned long cap)
{
	return sizeof(struct kcov_set) + cap * sizeof(uint64_t);
}

/* 1 if @pc was new to the set, 0 if it was there (or the set is full). */
static inline int kcov_set_add(struct kcov_set *s, uint64_t pc)
{
	unsigned long i = (unsigned long)(pc * 0x9e3779b97f4a7c15ULL >> 20), k;
	uint64_t cur;

	if (!pc)
		return 0;
	for (k = 0; k < s->cap; k++, i++) {
		uint64_t *p = &s->slot[i & (s->cap - 1)];

		cur = __atomic_load_n(p, __ATOMIC_RELAXED);
		if (cur == pc)
			return 0;
		if (cur)
			continue;
		cur = 0;
		if (__atomic_compare_exchange_n(p, &cur, pc, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			__atomic_add_fetch(&s->n, 1, __ATOMIC_RELAXED);
			return 1;
		}
		if (cur == pc)
			return 0;
	}
	__atomic_add_fetch(&s->missed, 1, __ATOMIC_RELAXED);
	return 0;
}

/*
 * The text symbols of a module's current load, from /proc/kallsyms (root
 * only), sorted by address: a PC is written as SYMBOL+0xOFFSET, which does
 * not depend on where the module was loaded (scripts/coverage maps it).
 */
struct kcov_sym {
	uint64_t addr;
	char *name;
};

struct kcov_syms {
	struct kcov_sym *v;
	size_t n;
};

static inline int kcov_sym_cmp(const void *a, const void *b)
{
	const struct kcov_sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Reads @module's text symbols; 0, or -1 (out of memory, no kallsyms). */
static inline int kcov_syms_read(struct kcov_syms *s, const char *module)
{
	char line[1024], name[512], mod[128], type;
	unsigned long long a;
	size_t cap = 0, i;
	FILE *f;

	for (i = 0; i < s->n; i++)
		free(s->v[i].name);
	s->n = 0;
	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %511s [%127[^]]]", &a, &type, name, mod) != 4)
			continue;
		if ((type != 't' && type != 'T') || strcmp(mod, module) || !a)
			continue;
		if (s->n == cap) {
			struct kcov_sym *v;

			cap = cap ? 2 * cap : 1024;
			v = realloc(s->v, cap * sizeof(*v));
			if (!v)
				break;
			s->v = v;
		}
		s->v[s->n].addr = a;
		s->v[s->n].name = strdup(name);
		if (!s->v[s->n].name)
			break;
		s->n++;
	}
	fclose(f);
	qsort(s->v, s->n, sizeof(*s->v), kcov_sym_cmp);
	return s->n ? 0 : -1;
}

/* Writes @pc as a line "SYMBOL+0xOFFSET" to @out: 1, or 0 if no symbol has it. */
static inline int kcov_syms_write(const struct kcov_syms *s, FILE *out, uint64_t pc)
{
	size_t lo = 0, hi = s->n, mid;

	while (lo < hi) { /* the first symbol above pc */
		mid = (lo + hi) / 2;
		if (s->v[mid].addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || pc - s->v[lo - 1].addr >= 1 << 20)
		return 0;
	fprintf(out, "%s+0x%llx\n", s->v[lo - 1].name, (unsigned long long)(pc - s->v[lo - 1].addr));
	return 1;
}

#endif /* UCMA_KCOV_REMOTE_H */
