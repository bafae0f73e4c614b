/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The write() ABI of /dev/infiniband/rdma_cm as small C helpers, shared by
 * the raw-ABI selftests (ucma_cmds.c, ucma_failnth.c, ucma_races.c).
 * Every helper returns 0 or -1 with errno set, like the write() it does.
 */
#ifndef UCMA_CMD_H
#define UCMA_CMD_H

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/rdma_user_cm.h>

#include "ucma_dev.h"

#define DEV UCMA_DEV
#ifndef ARRAY_SIZE /* kselftest.h has it too */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#define EV_ADDR_RESOLVED 0
#define EV_ROUTE_RESOLVED 2
#define EV_CONNECT_REQUEST 4
#define EV_CONNECT_RESPONSE 5
#define EV_CONNECT_ERROR 6
#define EV_UNREACHABLE 7
#define EV_REJECTED 8
#define EV_ESTABLISHED 9
#define EV_MULTICAST_JOIN 12
#define EV_DEVICE_REMOVAL 11
#define EV_USER 18
#define QPT_UD 4

/*
 * The highest context id this suite was handed (by CREATE_ID or in an
 * event), or -1: how far a leak check must look (ids_free_from()). Shared
 * (MAP_SHARED, mapped before main()) by the processes of the suite, the
 * harness's one per group included, so that a check sees the ids of the
 * groups before it.
 */
static int64_t ids_seen_local = -1;
static int64_t *ids_seen_max = &ids_seen_local;

static void __attribute__((constructor)) ids_seen_map(void)
{
	int64_t *p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			  -1, 0);

	if (p != MAP_FAILED) {
		*p = -1;
		ids_seen_max = p;
	}
}

/* The number a file (sysfs, debugfs, procfs) holds, or -1. */
static inline long file_number(const char *path)
{
	long v = -1;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static inline void note_id_seen(uint32_t id)
{
	int64_t cur = __atomic_load_n(ids_seen_max, __ATOMIC_RELAXED);

	while ((int64_t)id > cur &&
	       !__atomic_compare_exchange_n(ids_seen_max, &cur, (int64_t)id, 0, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

static inline long cmd(int fd, uint32_t op, void *in, uint16_t in_len, uint16_t out_len)
{
	struct {
		struct rdma_ucm_cmd_hdr hdr;
		uint8_t payload[512];
	} b;

	if (in_len > sizeof(b.payload)) {
		errno = E2BIG;
		return -1;
	}
	memset(&b, 0, sizeof(b));
	b.hdr.cmd = op;
	b.hdr.in = in_len;
	b.hdr.out = out_len;
	memcpy(b.payload, in, in_len);
	errno = 0;
	return write(fd, &b, sizeof(b.hdr) + in_len) < 0 ? -1 : 0;
}

#define CMD(fd, op, s, out) cmd(fd, op, &(s), sizeof(s), out)

/* CREATE_ID, without noting the id in ids_seen_max (for the probes). */
static inline int create_id_unseen(int fd, uint64_t uid, uint16_t ps, uint32_t *id)
{
	struct rdma_ucm_create_id c = { .uid = uid, .ps = ps, .qp_type = 0 };
	struct rdma_ucm_create_id_resp r = { .id = ~0u };
	long ret;

	c.response = (uintptr_t)&r;
	ret = CMD(fd, RDMA_USER_CM_CMD_CREATE_ID, c, sizeof(r));
	*id = ret ? ~0u : r.id;
	return ret ? -1 : 0;
}

static inline int create_id(int fd, uint64_t uid, uint16_t ps, uint32_t *id)
{
	if (create_id_unseen(fd, uid, ps, id))
		return -1;
	note_id_seen(*id);
	return 0;
}

static inline long destroy_id(int fd, uint32_t id, uint32_t *reported)
{
	struct rdma_ucm_destroy_id d = { .id = id };
	struct rdma_ucm_destroy_id_resp r = { .events_reported = ~0u };
	long ret;

	d.response = (uintptr_t)&r;
	ret = CMD(fd, RDMA_USER_CM_CMD_DESTROY_ID, d, sizeof(r));
	if (reported)
		*reported = r.events_reported;
	return ret;
}

static inline long get_event(int fd, struct rdma_ucm_event_resp *ev, uint16_t out)
{
	struct rdma_ucm_get_event g = { .response = (uintptr_t)ev };
	long ret = CMD(fd, RDMA_USER_CM_CMD_GET_EVENT, g, out);

	if (!ret && out >= sizeof(*ev))
		note_id_seen(ev->id);
	return ret;
}

static inline long write_user_event(int fd, uint32_t id, uint32_t event, uint32_t status, uint64_t arg)
{
	struct rdma_ucm_write_cm_event w = { .id = id, .event = event, .status = status };

	w.param.arg = arg;
	return CMD(fd, RDMA_USER_CM_CMD_WRITE_CM_EVENT, w, 0);
}

static inline long bind_ip(int fd, uint32_t id, const struct sockaddr_in *addr)
{
	struct rdma_ucm_bind_ip b = { .id = id };

	memcpy(&b.addr, addr, sizeof(*addr));
	return CMD(fd, RDMA_USER_CM_CMD_BIND_IP, b, 0);
}

static inline void set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

static inline struct sockaddr_in ipv4(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

/* RESOLVE_IP with a timeout of @ms. */
static inline long resolve_ip_ms(int fd, uint32_t id, const struct sockaddr_in *dst, uint32_t ms)
{
	struct rdma_ucm_resolve_ip r = { .id = id, .timeout_ms = ms };

	memcpy(&r.dst_addr, dst, sizeof(*dst));
	return CMD(fd, RDMA_USER_CM_CMD_RESOLVE_IP, r, 0);
}

static inline long resolve_ip(int fd, uint32_t id, const struct sockaddr_in *dst)
{
	return resolve_ip_ms(fd, id, dst, 2000);
}

static inline long resolve_route(int fd, uint32_t id)
{
	struct rdma_ucm_resolve_route r = { .id = id, .timeout_ms = 2000 };

	return CMD(fd, RDMA_USER_CM_CMD_RESOLVE_ROUTE, r, 0);
}

static inline long listen_id(int fd, uint32_t id, int backlog)
{
	struct rdma_ucm_listen l = { .id = id, .backlog = backlog };

	return CMD(fd, RDMA_USER_CM_CMD_LISTEN, l, 0);
}

/*
 * CONNECT with a caller-managed QP (qp_num only, as librdmacm sends it) and
 * the string @pd (without its NUL) as private data.
 */
static inline long connect_pd(int fd, uint32_t id, uint32_t qpn, const char *pd)
{
	struct rdma_ucm_connect c = { .id = id };

	c.conn_param.valid = 1;
	c.conn_param.qp_num = qpn;
	c.conn_param.responder_resources = 1;
	c.conn_param.initiator_depth = 1;
	c.conn_param.retry_count = 7;
	c.conn_param.rnr_retry_count = 7;
	c.conn_param.private_data_len = strlen(pd);
	memcpy(c.conn_param.private_data, pd, strlen(pd));
	return CMD(fd, RDMA_USER_CM_CMD_CONNECT, c, 0);
}

/* CONNECT with a caller-managed QP and no private data. */
static inline long connect_id(int fd, uint32_t id, uint32_t qpn)
{
	return connect_pd(fd, id, qpn, "");
}

/* ACCEPT; valid 0 is the active side's "send RTU". */
static inline long accept_id(int fd, uint32_t id, uint32_t qpn, int valid)
{
	struct rdma_ucm_accept a = { .id = id, .uid = 0x5e };

	a.conn_param.valid = valid;
	a.conn_param.qp_num = qpn;
	a.conn_param.responder_resources = 1;
	a.conn_param.initiator_depth = 1;
	return CMD(fd, RDMA_USER_CM_CMD_ACCEPT, a, 0);
}

static inline long join_ip(int fd, uint32_t id, const struct sockaddr_in *group, uint32_t *mc)
{
	struct rdma_ucm_join_ip_mcast j = { .id = id, .uid = 0x3c };
	struct rdma_ucm_create_id_resp r = { .id = ~0u };
	long ret;

	memcpy(&j.addr, group, sizeof(*group));
	j.response = (uintptr_t)&r;
	ret = CMD(fd, RDMA_USER_CM_CMD_JOIN_IP_MCAST, j, sizeof(r));
	if (mc)
		*mc = r.id;
	return ret;
}

static inline long leave_mc(int fd, uint32_t mc)
{
	struct rdma_ucm_destroy_id l = { .id = mc };
	struct rdma_ucm_destroy_id_resp r;

	l.response = (uintptr_t)&r;
	return CMD(fd, RDMA_USER_CM_CMD_LEAVE_MCAST, l, sizeof(r));
}

/* MIGRATE_ID of @id, now on @from, to the file of @to. */
static inline long migrate_id(int to, uint32_t id, int from)
{
	struct rdma_ucm_migrate_id m = { .id = id, .fd = from };
	struct rdma_ucm_migrate_resp r;

	m.response = (uintptr_t)&r;
	return CMD(to, RDMA_USER_CM_CMD_MIGRATE_ID, m, sizeof(r));
}

/* Waits up to @ms for an event and fetches it; -1 with ETIMEDOUT if none. */
static inline long next_event(int fd, struct rdma_ucm_event_resp *ev, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, ms) != 1) {
		errno = ETIMEDOUT;
		return -1;
	}
	return get_event(fd, ev, sizeof(*ev));
}

/* Fetches events until one of type @type arrives (within @ms each). */
static inline long wait_event(int fd, uint32_t type, struct rdma_ucm_event_resp *ev, int ms)
{
	struct rdma_ucm_event_resp tmp;

	if (!ev)
		ev = &tmp;
	do {
		if (next_event(fd, ev, ms))
			return -1;
	} while (ev->event != type);
	return 0;
}

/*
 * A listener on @fl bound to @addr (with its port), and a TCP id on @fc
 * with its address and route resolved to it. Returns NULL, or the step
 * that failed (errno set).
 */
static inline const char *route_to_listener(int fl, int fc, const struct sockaddr_in *addr,
					    uint32_t *listener, uint32_t *client)
{
	if (create_id(fl, 8, RDMA_PS_TCP, listener))
		return "create listener";
	if (bind_ip(fl, *listener, addr))
		return "bind listener";
	if (listen_id(fl, *listener, 16))
		return "listen";
	if (create_id(fc, 7, RDMA_PS_TCP, client))
		return "create client";
	if (resolve_ip(fc, *client, addr) || wait_event(fc, EV_ADDR_RESOLVED, NULL, 10000))
		return "resolve address";
	if (resolve_route(fc, *client) || wait_event(fc, EV_ROUTE_RESOLVED, NULL, 10000))
		return "resolve route";
	return NULL;
}

/* The number a file (a sysctl, a sysfs attribute) starts with, or -1. */
static inline long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/*
 * The value of @key in /proc/@pid/fdinfo/@fd (@pid 0: this process's), or -1
 * if there is no line.
 */
static inline long fdinfo_number_of(pid_t pid, int fd, const char *key)
{
	char path[64], line[256];
	size_t n = strlen(key);
	long v = -1;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	else
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

/* The value of @key in /proc/self/fdinfo/@fd, or -1 if there is no line. */
static inline long fdinfo_number(int fd, const char *key)
{
	return fdinfo_number_of(0, fd, key);
}

/* Whether the C rdma_ucm serves /dev/infiniband/rdma_cm now. */
static inline int c_module_loaded(void)
{
	char line[256];
	FILE *f = fopen("/proc/modules", "r");
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "rdma_ucm ", 9))
			found = 1;
	fclose(f);
	return found;
}

/*
 * The id the next context gets. Ids are allocated lowest-free from one
 * table, so once a test has left nothing behind this is the first id again.
 */
static inline uint32_t probe_id(void)
{
	uint32_t id = ~0u;
	int fd = ucma_dev_open();

	create_id_unseen(fd, 1, RDMA_PS_TCP, &id);
	close(fd);
	return id;
}

/*
 * Whether the @n context ids @base..@base+@n-1 are all free: a fresh file
 * creates @n ids and must get exactly those, in that order (both modules
 * hand out the lowest free id: C's xa_alloc() on ctx_table, ucma_rs's
 * id_table.rs), then is closed. This sees a context left at any of those
 * ids, bound to a device or not. Cost: @n CREATE_IDs and a close (about
 * 10 us per id under TCG). Unless NULL, *@first_taken is set to the lowest
 * id of the range that was in use, to the id handed out instead if that
 * was below @base (then @base was not the lowest free id), to ~0u if all
 * were free or if the probe itself failed (open or CREATE_ID: errno set).
 */
static inline int ids_free_from_at(uint32_t base, unsigned int n, uint32_t *first_taken)
{
	int fd = ucma_dev_open(), ok = fd >= 0, e;
	uint32_t id, taken = ~0u;
	unsigned int k;

	for (k = 0; k < n && ok; k++) {
		if (create_id_unseen(fd, 1, RDMA_PS_TCP, &id)) {
			ok = 0;
		} else if (id != base + k) {
			taken = id > base + k ? base + k : id;
			ok = 0;
		}
	}
	e = errno;
	if (fd >= 0)
		close(fd);
	errno = e;
	if (first_taken)
		*first_taken = taken;
	return ok;
}

/* ids_free_from_at() without the diagnostic: nonzero if all @n are free. */
static inline int ids_free_from(uint32_t base, unsigned int n)
{
	return ids_free_from_at(base, n, NULL);
}

/*
 * ids_free_from_at(), once it holds or @ms have passed: a context of a
 * closed file may still be torn down by a handler that raced the close.
 */
static inline int ids_free_after(uint32_t base, unsigned int n, int ms, uint32_t *first_taken)
{
	int ok = ids_free_from_at(base, n, first_taken);

	for (; !ok && ms > 0; ms -= 50) {
		usleep(50000);
		ok = ids_free_from_at(base, n, first_taken);
	}
	return ok;
}

/*
 * How many ids from @base a leak check probes: every id this suite was
 * handed (ids_seen_max), plus @margin for ids it never saw (the children
 * of connect requests it never fetched, the id of a CREATE_ID whose reply
 * faulted), at most 1 << 20 (ucma_rs's default max_ids_per_file).
 */
static inline unsigned int ids_to_probe(uint32_t base, unsigned int margin)
{
	int64_t high = __atomic_load_n(ids_seen_max, __ATOMIC_RELAXED);
	int64_t n = (high >= (int64_t)base ? high - base + 1 : 0) + margin;

	return n > (1 << 20) ? 1 << 20 : (unsigned int)n;
}

/*
 * The number of rdma_cm ids the kernel lists (rdma resource show cm_id:
 * every id attached to a device, a listener's children and rdma_cm's
 * per-device listeners included), or -1 if the tool failed.
 */
static inline int listed_cm_ids(void)
{
	FILE *f = popen("rdma resource show cm_id 2>/dev/null", "r");
	int n = 0, c, bol = 1;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF) {
		n += bol && c != '\n';
		bol = c == '\n';
	}
	return pclose(f) == 0 ? n : -1;
}

/*
 * The leftover checks see ids: rdma lists none at first, then one bound id
 * (on @addr). Prints a KTAP bail-out and returns 0 if not.
 */
static inline int cm_id_listing_sees(const struct sockaddr_in *addr)
{
	int fd = ucma_dev_open(), before = listed_cm_ids(), during = -1;
	uint32_t id;

	if (create_id(fd, 1, RDMA_PS_UDP, &id) == 0 && bind_ip(fd, id, addr) == 0)
		during = listed_cm_ids();
	close(fd);
	if (before != 0 || during != 1) {
		printf("Bail out! rdma resource show cm_id lists %d ids at start, %d with one bound\n",
		       before, during);
		return 0;
	}
	return 1;
}

/*
 * A suite's start, for its leftover checks: the lowest free id, with the
 * @margin ids from it free too, and rdma's listing able to see an id bound
 * to @addr. Bails out (exits) otherwise; returns the first id.
 */
static inline uint32_t start_ids_free(const struct sockaddr_in *addr, unsigned int margin)
{
	uint32_t base = probe_id();

	if (base == ~0u || !ids_free_from(base, margin))
		ucma_bail_out("ids %u..%u are not free at the start", base, base + margin - 1);
	if (!cm_id_listing_sees(addr))
		exit(1);
	return base;
}

/* listed_cm_ids(), once it is 0 or @ms have passed (deferred teardown). */
static inline int listed_cm_ids_after(int ms)
{
	int n = listed_cm_ids();

	for (; n > 0 && ms > 0; ms -= 50) {
		usleep(50000);
		n = listed_cm_ids();
	}
	return n;
}

/*
 * True if a fresh UD id bound to @dev gets multicast ids 0..@n-1 for its
 * first @n joins (groups 239.4.x.y): the global multicast id table, lowest
 * free id first, holds none of them, so no join below @n was left behind.
 */
static inline int multicast_table_empty(const struct sockaddr_in *dev, int n)
{
	int fd = ucma_dev_open(), k, ok = 1;
	uint32_t id, mc;

	if (create_id(fd, 0x31, RDMA_PS_UDP, &id) || bind_ip(fd, id, dev))
		ok = 0;
	for (k = 0; k < n && ok; k++) {
		struct sockaddr_in g = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(0xef040000u | (k & 0xffff)) };

		ok = join_ip(fd, id, &g, &mc) == 0 && mc == (uint32_t)k;
	}
	close(fd);
	return ok;
}

#endif /* UCMA_CMD_H */
