/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The device and the addresses of the C suites, in one place.
 *
 * ucma_dev_open() opens /dev/infiniband/rdma_cm (whichever module serves
 * it: ucma_rs or the C rdma_ucm). ucma_setup() is each suite's first step:
 * it reads the environment into ucma_env and bails out ("Bail out! ...",
 * exit 1) when the device does not open or an address the suite needs is
 * missing or malformed. The environment (scripts/vm-run exports it in the
 * guest; on a machine of one's own, tests/run-host passes it through):
 *   RXE_IP, RXE_IP6   an IPv4 and an IPv6 address of the RoCE (rxe) device
 *   SIW_IP, SIW_IP6   an IPv4 and an IPv6 address of the iWARP (siw) device
 *   RXE_DEV, SIW_DEV  those devices' names (default rxe0 and siw0)
 */
#ifndef UCMA_DEV_H
#define UCMA_DEV_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UCMA_DEV "/dev/infiniband/rdma_cm"

/* The addresses (port 0) and device names from the environment. */
struct ucma_env {
	const char *rxe_ip, *siw_ip, *rxe_ip6, *siw_ip6; /* NULL when unset */
	const char *rxe_dev, *siw_dev;
	struct sockaddr_in rxe, siw; /* sin_family 0 when unset */
	struct sockaddr_in6 rxe6, siw6;
};

/* (Each suite is one file: this header is included once per program.) */
struct ucma_env ucma_env;

/* What ucma_setup() must find in the environment. */
#define UCMA_NEED_RXE 0x1
#define UCMA_NEED_SIW 0x2
#define UCMA_NEED_RXE6 0x4
#define UCMA_NEED_SIW6 0x8

/* A new file of the device, or -1 with errno set. */
static inline int ucma_dev_open(void)
{
	return open(UCMA_DEV, O_RDWR | O_CLOEXEC);
}

/* "Bail out! <reason>" on stdout, and exit 1. */
static inline void ucma_bail_out(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

/* One address variable: NULL when unset, the bail-out when malformed or needed. */
static inline const char *ucma_env_addr(const char *var, int family, void *sin_addr, int need)
{
	const char *v = getenv(var);

	if (!v || !*v) {
		if (need)
			ucma_bail_out("%s is not set (scripts/vm-run exports it; see tests/run-host --help)",
				      var);
		return NULL;
	}
	if (inet_pton(family, v, sin_addr) != 1)
		ucma_bail_out("%s=%s is not an address", var, v);
	return v;
}

/*
 * Reads the environment into ucma_env; bails out unless the device opens
 * and every address of @need (UCMA_NEED_*) is set.
 */
static inline void ucma_setup(unsigned int need)
{
	struct ucma_env *e = &ucma_env;
	int fd = ucma_dev_open();

	if (fd < 0)
		ucma_bail_out("open %s: %s (is a uCMA module, ucma_rs or rdma_ucm, loaded?)",
			      UCMA_DEV, strerror(errno));
	close(fd);
	e->rxe_ip = ucma_env_addr("RXE_IP", AF_INET, &e->rxe.sin_addr, need & UCMA_NEED_RXE);
	e->siw_ip = ucma_env_addr("SIW_IP", AF_INET, &e->siw.sin_addr, need & UCMA_NEED_SIW);
	e->rxe_ip6 = ucma_env_addr("RXE_IP6", AF_INET6, &e->rxe6.sin6_addr, need & UCMA_NEED_RXE6);
	e->siw_ip6 = ucma_env_addr("SIW_IP6", AF_INET6, &e->siw6.sin6_addr, need & UCMA_NEED_SIW6);
	if (e->rxe_ip)
		e->rxe.sin_family = AF_INET;
	if (e->siw_ip)
		e->siw.sin_family = AF_INET;
	if (e->rxe_ip6)
		e->rxe6.sin6_family = AF_INET6;
	if (e->siw_ip6)
		e->siw6.sin6_family = AF_INET6;
	e->rxe_dev = getenv("RXE_DEV") && *getenv("RXE_DEV") ? getenv("RXE_DEV") : "rxe0";
	e->siw_dev = getenv("SIW_DEV") && *getenv("SIW_DEV") ? getenv("SIW_DEV") : "siw0";
}

#endif /* UCMA_DEV_H */
