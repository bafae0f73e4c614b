/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Memory cgroups for the suites that charge a tenant: a fresh cgroup v2
 * group with a memory.max, entering it, reading its files.
 */
#ifndef UCMA_CGROUP_H
#define UCMA_CGROUP_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define CGROOT "/sys/fs/cgroup"

static inline int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* A number from a cgroup file: its first one, or the one after "@key ". */
static inline long cg_read(const char *cg, const char *file, const char *key)
{
	char path[512], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!key) {
			v = strtol(line, NULL, 10);
			break;
		}
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ' ') {
			v = strtol(line + strlen(key) + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/*
 * A fresh memory cgroup @name under the cgroup2 root (mounted if it is
 * not), with memory.max = @max bytes (no limit if @max is negative). NULL,
 * or the step that failed.
 */
static inline const char *cg_make(char *cg, size_t len, const char *name, long max)
{
	char path[512], v[32];

	if (access(CGROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CGROOT, "cgroup2", 0, NULL))
		return "mount cgroup2";
	if (write_file(CGROOT "/cgroup.subtree_control", "+memory"))
		return "enable the memory controller";
	snprintf(cg, len, CGROOT "/%s", name);
	rmdir(cg);
	if (mkdir(cg, 0755))
		return "mkdir";
	snprintf(path, sizeof(path), "%s/memory.max", cg);
	if (max < 0)
		snprintf(v, sizeof(v), "max");
	else
		snprintf(v, sizeof(v), "%ld", max);
	if (write_file(path, v))
		return "memory.max";
	return NULL;
}

/* Moves the calling process into @cg. */
static inline int cg_enter(const char *cg)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	return write_file(path, "0");
}

#endif /* UCMA_CGROUP_H */
