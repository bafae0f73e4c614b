/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading the kernel log from the tests, through /dev/kmsg: every read()
 * returns one record ("prio,seq,usec,flags;text" and its dictionary lines),
 * EAGAIN at the end of the log (the file is opened O_NONBLOCK).
 */
#ifndef UCMA_KMSG_H
#define UCMA_KMSG_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * The line scripts/guest-init and tests/vm/differential.sh log whenever they
 * load a uCMA module, so that a test can look at the log of the current
 * module load only.
 */
#define KMSG_MODULE_LOADED "ucma-rs: uCMA module loaded:"

/* Opens the log at its start, or at its end (@at_end): only new records. */
static inline int kmsg_open(int at_end)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && at_end && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Reads the records from @fd's position to the end of the log and counts
 * those containing one of the @n @needles (printing them as KTAP
 * diagnostics if @echo). A record containing @reset (if not NULL) sets the
 * count back to 0.
 */
static inline int kmsg_count(int fd, const char *const *needles, int n, const char *reset,
			     int echo)
{
	char rec[8192];
	int count = 0, i;
	ssize_t len;

	for (;;) {
		len = read(fd, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE)
			continue; /* overwritten records: go on with the oldest left */
		if (len <= 0)
			break;
		rec[len] = 0;
		if (reset && strstr(rec, reset)) {
			count = 0;
			continue;
		}
		for (i = 0; i < n; i++)
			if (strstr(rec, needles[i])) {
				count++;
				if (echo)
					printf("# kmsg: %s", strchr(rec, ';') ? strchr(rec, ';') + 1 : rec);
				break;
			}
	}
	return count;
}

#endif /* UCMA_KMSG_H */
