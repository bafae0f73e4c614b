// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded random-command fuzzer for /dev/infiniband/rdma_cm, in the spirit
 * of syzkaller (security.md, section 1.7): several processes, each with
 * several threads and files, writing every command with valid, stale,
 * guessed and other files' ids, valid and garbage arguments, faulting
 * reply pointers, swapping the file behind an fd (dup2) and migrating ids
 * while other threads use them; a chaos thread adds and removes a soft-RoCE
 * device and its address, flushes neighbours and changes max_backlog
 * underneath. Bounded by a command count and a time limit; a run is
 * reproducible from its seed up to thread interleaving.
 *
 * Oracles: every errno is a plain one (1..133, or 524 ENOTSUPP, which
 * rdma_cm returns); every worker exits in time (no hung task); afterwards
 * no cm_id is left (rdma resource) and the next context gets the first id
 * again. The splat gate and kmemleak of scripts/guest-init do the rest.
 *
 * Usage: ucma_fuzz [-s seed] [-n commands] [-t seconds] [-p procs]
 *                  [-j threads] [-q]      (needs RXE_IP, SIW_IP)
 * Prints KTAP, the command mix and one summary line.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "../abi/ktap.h"
#include "../abi/ucma_cmd.h"

#define NCMD 25
#define OP_GARBAGE NCMD	   /* malformed header or length */
#define OP_SWAP_FILE (NCMD + 1) /* dup2 a fresh file over an fd */
#define OP_CHAIN (NCMD + 2)	/* a valid listener, or a valid resolve */
#define NOPS (NCMD + 3)
#define NFDS 3
#define NIDS 64
#define MAX_ERRNO 600
#define NEV 20 /* enum rdma_cm_event_type, ADDR_RESOLVED to INTERNAL */

static const char *const ev_names[NEV + 1] = {
	"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR", "CONNECT_REQUEST",
	"CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED",
	"DISCONNECTED", "DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE",
	"TIMEWAIT_EXIT", "ADDRINFO_RESOLVED", "ADDRINFO_ERROR", "USER", "INTERNAL", "other",
};

static const char *const op_names[NOPS] = {
	"create_id", "destroy_id", "bind_ip", "resolve_ip", "resolve_route", "query_route",
	"connect", "listen", "accept", "reject", "disconnect", "init_qp_attr", "get_event",
	"get_option", "set_option", "notify", "join_ip_mcast", "leave_mcast", "migrate_id",
	"query", "bind", "resolve_addr", "join_mcast", "resolve_ib_service", "write_cm_event",
	"garbage", "swap_file", "chain",
};

/* Relative weights (security.md 1.7, point 3). */
static const unsigned int weights[NOPS] = {
	[RDMA_USER_CM_CMD_CREATE_ID] = 12, [RDMA_USER_CM_CMD_DESTROY_ID] = 8,
	[RDMA_USER_CM_CMD_BIND_IP] = 4, [RDMA_USER_CM_CMD_RESOLVE_IP] = 5,
	[RDMA_USER_CM_CMD_RESOLVE_ROUTE] = 4, [RDMA_USER_CM_CMD_QUERY_ROUTE] = 3,
	[RDMA_USER_CM_CMD_CONNECT] = 3, [RDMA_USER_CM_CMD_LISTEN] = 3,
	[RDMA_USER_CM_CMD_ACCEPT] = 3, [RDMA_USER_CM_CMD_REJECT] = 2,
	[RDMA_USER_CM_CMD_DISCONNECT] = 2, [RDMA_USER_CM_CMD_INIT_QP_ATTR] = 3,
	[RDMA_USER_CM_CMD_GET_EVENT] = 15, [RDMA_USER_CM_CMD_GET_OPTION] = 1,
	[RDMA_USER_CM_CMD_SET_OPTION] = 4, [RDMA_USER_CM_CMD_NOTIFY] = 1,
	[RDMA_USER_CM_CMD_JOIN_IP_MCAST] = 4, [RDMA_USER_CM_CMD_LEAVE_MCAST] = 3,
	[RDMA_USER_CM_CMD_MIGRATE_ID] = 5, [RDMA_USER_CM_CMD_QUERY] = 4,
	[RDMA_USER_CM_CMD_BIND] = 3, [RDMA_USER_CM_CMD_RESOLVE_ADDR] = 3,
	[RDMA_USER_CM_CMD_JOIN_MCAST] = 3, [RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE] = 1,
	[RDMA_USER_CM_CMD_WRITE_CM_EVENT] = 4, [OP_GARBAGE] = 10, [OP_SWAP_FILE] = 1,
	[OP_CHAIN] = 2,
};

/* Shared by all processes (MAP_SHARED). */
struct stats {
	unsigned long done, limit;
	unsigned long ops[NOPS], ok[NOPS], ns[NOPS];
	unsigned long errnos[NOPS][MAX_ERRNO + 1];
	unsigned long chain_writes;
	unsigned long events[NEV + 1];
	unsigned long bad;
	int bad_op, bad_errno;
};

static struct stats *st;
static time_t deadline;
static int nthreads = 3;
static struct sockaddr_in rxe, siw;
static void *bad_ptr;

/* One worker process: its files, the ids it has seen and their files. */
static int fds[NFDS];
static uint32_t ids[NIDS];
static uint8_t id_fd[NIDS];
/* The file the current command goes to (an index into fds). */
static __thread unsigned int cur_slot;

/* xorshift64*: one state per thread, derived from the seed. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

#define RND(n) ((unsigned int)(next_rand(r) % (n)))

/* An event fetched whole: counted by type. */
static void count_event(const struct rdma_ucm_event_resp *ev)
{
	__atomic_add_fetch(&st->events[ev->event < NEV ? ev->event : NEV], 1, __ATOMIC_RELAXED);
}

static uint32_t pick_id(uint64_t *r)
{
	switch (RND(8)) {
	case 0:
		return RND(64); /* guessed */
	case 1:
		return (uint32_t)next_rand(r); /* garbage */
	default: {
		/* Seen, maybe stale; mostly on the file it was seen on. */
		unsigned int k = RND(NIDS);

		if (RND(8))
			cur_slot = __atomic_load_n(&id_fd[k], __ATOMIC_RELAXED);
		return __atomic_load_n(&ids[k], __ATOMIC_RELAXED);
	}
	}
}

static void remember(uint64_t *r, uint32_t id)
{
	unsigned int k = RND(NIDS);

	__atomic_store_n(&ids[k], id, __ATOMIC_RELAXED);
	__atomic_store_n(&id_fd[k], cur_slot, __ATOMIC_RELAXED);
}

static int pick_fd(uint64_t *r)
{
	return fds[RND(NFDS)];
}

/* An address: rxe, siw, a spare device's, loopback, wildcard, IPv6, garbage. */
static void pick_addr(uint64_t *r, void *out, size_t size)
{
	struct sockaddr_in a;
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };

	memset(out, 0, size);
	switch (RND(10)) {
	case 0:
	case 1:
	case 2:
		a = rxe;
		break;
	case 3:
	case 4:
		a = siw;
		break;
	case 5:
		a = ipv4("203.0.113.77", 0);
		break;
	case 6:
		a = ipv4(RND(2) ? "127.0.0.1" : "0.0.0.0", 0);
		break;
	case 7:
		a6.sin6_addr.s6_addr[15] = RND(2);
		a6.sin6_port = htons(7000 + RND(8));
		memcpy(out, &a6, size < sizeof(a6) ? size : sizeof(a6));
		return;
	case 8:
		a = ipv4("239.1.9.9", 0);
		a.sin_addr.s_addr ^= htonl(RND(4));
		break;
	default:
		for (size_t i = 0; i < size; i++)
			((uint8_t *)out)[i] = RND(256);
		if (RND(2))
			((uint8_t *)out)[0] = RND(2) ? 27 : RND(64);
		return;
	}
	a.sin_port = htons(7000 + RND(8));
	memcpy(out, &a, size < sizeof(a) ? size : sizeof(a));
}

static struct sockaddr_in with_port(struct sockaddr_in a, uint16_t port)
{
	a.sin_port = htons(port);
	return a;
}

static uint64_t reply_ptr(uint64_t *r, void *good)
{
	switch (RND(16)) {
	case 0:
		return 0;
	case 1:
		return (uintptr_t)bad_ptr;
	default:
		return (uintptr_t)good;
	}
}

/* Builds and writes one command; returns the write's result. */
static long do_op(uint64_t *r, int op)
{
	union {
		uint8_t raw[512];
		struct rdma_ucm_create_id create;
		struct rdma_ucm_destroy_id destroy;
		struct rdma_ucm_bind_ip bind_ip;
		struct rdma_ucm_resolve_ip resolve_ip;
		struct rdma_ucm_resolve_route resolve_route;
		struct rdma_ucm_query query;
		struct rdma_ucm_connect connect;
		struct rdma_ucm_listen listen;
		struct rdma_ucm_accept accept;
		struct rdma_ucm_reject reject;
		struct rdma_ucm_disconnect disconnect;
		struct rdma_ucm_init_qp_attr init_qp_attr;
		struct rdma_ucm_get_event get_event;
		struct rdma_ucm_set_option set_option;
		struct rdma_ucm_notify notify;
		struct rdma_ucm_join_ip_mcast join_ip;
		struct rdma_ucm_migrate_id migrate;
		struct rdma_ucm_bind bind;
		struct rdma_ucm_resolve_addr resolve_addr;
		struct rdma_ucm_join_mcast join;
		struct rdma_ucm_resolve_ib_service ib_service;
		struct rdma_ucm_write_cm_event write_event;
	} in;
	static __thread uint8_t reply[1024];
	static __thread uint8_t optval[256];
	uint16_t in_len = 0, out_len = 0;
	int fd;
	long ret;

	cur_slot = RND(NFDS);
	fd = fds[cur_slot];

	memset(&in, 0, sizeof(in));
	switch (op) {
	case RDMA_USER_CM_CMD_CREATE_ID: {
		static const uint16_t ps[] = { RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IPOIB, RDMA_PS_IB, 0x999 };

		in.create.uid = RND(5);
		in.create.ps = ps[RND(5)];
		in.create.qp_type = RND(3) ? 2 + 2 * RND(2) : RND(256);
		in.create.response = reply_ptr(r, reply);
		in_len = sizeof(in.create);
		out_len = RND(16) ? 4 : RND(4);
		ret = cmd(fd, op, &in, in_len, out_len);
		if (!ret && in.create.response == (uintptr_t)reply)
			remember(r, *(uint32_t *)reply);
		return ret;
	}
	case RDMA_USER_CM_CMD_DESTROY_ID:
	case RDMA_USER_CM_CMD_LEAVE_MCAST:
		in.destroy.id = pick_id(r);
		in.destroy.response = reply_ptr(r, reply);
		in_len = sizeof(in.destroy);
		out_len = 4;
		break;
	case RDMA_USER_CM_CMD_BIND_IP:
		in.bind_ip.id = pick_id(r);
		pick_addr(r, &in.bind_ip.addr, sizeof(in.bind_ip.addr));
		in_len = sizeof(in.bind_ip);
		break;
	case RDMA_USER_CM_CMD_RESOLVE_IP:
		in.resolve_ip.id = pick_id(r);
		if (RND(4) == 0)
			pick_addr(r, &in.resolve_ip.src_addr, sizeof(in.resolve_ip.src_addr));
		pick_addr(r, &in.resolve_ip.dst_addr, sizeof(in.resolve_ip.dst_addr));
		in.resolve_ip.timeout_ms = RND(2000);
		in_len = sizeof(in.resolve_ip);
		break;
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
		in.resolve_route.id = pick_id(r);
		in.resolve_route.timeout_ms = RND(2000);
		in_len = sizeof(in.resolve_route);
		break;
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
	case RDMA_USER_CM_CMD_QUERY:
		in.query.id = pick_id(r);
		in.query.option = RND(8) ? RND(4) : RND(1000);
		in.query.response = reply_ptr(r, reply);
		in_len = sizeof(in.query);
		out_len = RND(8) ? 1024 : RND(300);
		break;
	case RDMA_USER_CM_CMD_CONNECT:
	case RDMA_USER_CM_CMD_ACCEPT: {
		struct rdma_ucm_conn_param *p = op == RDMA_USER_CM_CMD_CONNECT ? &in.connect.conn_param :
										&in.accept.conn_param;

		p->valid = RND(8) != 0;
		p->qp_num = RND(4) ? RND(1 << 24) : (uint32_t)next_rand(r);
		p->private_data_len = RND(4) ? RND(64) : RND(256);
		p->responder_resources = RND(4);
		p->initiator_depth = RND(4);
		p->retry_count = RND(8);
		p->rnr_retry_count = RND(8);
		p->srq = RND(2);
		if (op == RDMA_USER_CM_CMD_CONNECT) {
			in.connect.id = pick_id(r);
			in_len = RND(8) ? sizeof(in.connect) : 280 - RND(2) * RND(280);
		} else {
			in.accept.id = pick_id(r);
			in.accept.uid = RND(5);
			in_len = RND(8) ? sizeof(in.accept) : 288 - RND(2) * RND(288);
		}
		break;
	}
	case RDMA_USER_CM_CMD_LISTEN:
		in.listen.id = pick_id(r);
		in.listen.backlog = RND(4) ? RND(8) : (int)next_rand(r);
		in_len = sizeof(in.listen);
		break;
	case RDMA_USER_CM_CMD_REJECT:
		in.reject.id = pick_id(r);
		in.reject.reason = RND(4) ? 0 : RND(64);
		in.reject.private_data_len = RND(256);
		in_len = sizeof(in.reject);
		break;
	case RDMA_USER_CM_CMD_DISCONNECT:
		in.disconnect.id = pick_id(r);
		in_len = sizeof(in.disconnect);
		break;
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		in.init_qp_attr.id = pick_id(r);
		in.init_qp_attr.qp_state = RND(8) ? RND(7) : (uint32_t)next_rand(r);
		in.init_qp_attr.response = reply_ptr(r, reply);
		in_len = sizeof(in.init_qp_attr);
		out_len = RND(8) ? 144 : RND(200);
		break;
	case RDMA_USER_CM_CMD_GET_EVENT: {
		struct rdma_ucm_event_resp *ev = (void *)reply;

		/* Non-blocking: the fds are O_NONBLOCK (blocking ones in the chaos). */
		in.get_event.response = reply_ptr(r, reply);
		in_len = sizeof(in.get_event);
		out_len = RND(8) ? sizeof(*ev) : RND(400);
		memset(ev, 0xff, sizeof(*ev));
		ret = cmd(fd, op, &in, in_len, out_len);
		if (ret || in.get_event.response != (uintptr_t)reply || out_len < 16)
			return ret;
		count_event(ev);
		if (ev->event == EV_CONNECT_REQUEST)
			remember(r, ev->id);
		return ret;
	}
	case RDMA_USER_CM_CMD_GET_OPTION:
		break;
	case RDMA_USER_CM_CMD_SET_OPTION: {
		static const uint32_t names[][2] = { { 0, 0 }, { 0, 1 }, { 0, 2 }, { 0, 3 }, { 0, 4 },
						     { 1, 1 }, { 1, 1 }, { 9, 9 } };
		unsigned int k = RND(8);

		in.set_option.id = pick_id(r);
		in.set_option.level = names[k][0];
		in.set_option.optname = names[k][1];
		in.set_option.optlen = RND(8) ? RND(200) : (uint32_t)next_rand(r);
		for (unsigned int i = 0; i < sizeof(optval); i++)
			optval[i] = RND(4) ? 0 : RND(256);
		if (k >= 5)
			optval[64] = 0x2b; /* a primary path record now and then */
		in.set_option.optval = RND(16) ? (uintptr_t)optval : (uintptr_t)bad_ptr;
		in_len = sizeof(in.set_option);
		break;
	}
	case RDMA_USER_CM_CMD_NOTIFY:
		in.notify.id = pick_id(r);
		in.notify.event = RND(24);
		in_len = sizeof(in.notify);
		break;
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST:
		in.join_ip.id = pick_id(r);
		in.join_ip.uid = RND(5);
		pick_addr(r, &in.join_ip.addr, sizeof(in.join_ip.addr));
		in.join_ip.response = reply_ptr(r, reply);
		in_len = sizeof(in.join_ip);
		out_len = 4;
		ret = cmd(fds[cur_slot], op, &in, in_len, out_len);
		if (!ret && in.join_ip.response == (uintptr_t)reply)
			remember(r, *(uint32_t *)reply);
		return ret;
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		in.migrate.id = pick_id(r);
		in.migrate.fd = RND(16) ? (uint32_t)pick_fd(r) : RND(2) ? 0 : 9999;
		in.migrate.response = reply_ptr(r, reply);
		in_len = sizeof(in.migrate);
		out_len = 4;
		break;
	case RDMA_USER_CM_CMD_BIND:
		in.bind.id = pick_id(r);
		pick_addr(r, &in.bind.addr, sizeof(in.bind.addr));
		in.bind.addr_size = RND(4) ? (in.bind.addr.ss_family == AF_INET6 ? 28 : 16) : RND(130);
		in_len = sizeof(in.bind);
		break;
	case RDMA_USER_CM_CMD_RESOLVE_ADDR:
		in.resolve_addr.id = pick_id(r);
		pick_addr(r, &in.resolve_addr.dst_addr, sizeof(in.resolve_addr.dst_addr));
		in.resolve_addr.dst_size = RND(4) ? (in.resolve_addr.dst_addr.ss_family == AF_INET6 ? 28 : 16) :
						    RND(130);
		in.resolve_addr.timeout_ms = RND(2000);
		in_len = sizeof(in.resolve_addr);
		break;
	case RDMA_USER_CM_CMD_JOIN_MCAST:
		in.join.id = pick_id(r);
		in.join.uid = RND(5);
		pick_addr(r, &in.join.addr, sizeof(in.join.addr));
		in.join.addr_size = RND(4) ? (in.join.addr.ss_family == AF_INET6 ? 28 : 16) : RND(130);
		in.join.join_flags = RND(4) ? RND(2) : RND(8);
		in.join.response = reply_ptr(r, reply);
		in_len = sizeof(in.join);
		out_len = RND(8) ? 4 : RND(4);
		ret = cmd(fds[cur_slot], op, &in, in_len, out_len);
		if (!ret && in.join.response == (uintptr_t)reply)
			remember(r, *(uint32_t *)reply);
		return ret;
	case RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE:
		in.ib_service.id = pick_id(r);
		in.ib_service.ibs.flags = RND(4);
		in_len = sizeof(in.ib_service);
		break;
	case RDMA_USER_CM_CMD_WRITE_CM_EVENT:
		in.write_event.id = pick_id(r);
		in.write_event.event = RND(4) ? 18 + RND(2) : RND(32);
		in.write_event.status = RND(4);
		in.write_event.param.arg = next_rand(r);
		in_len = sizeof(in.write_event);
		break;
	case OP_GARBAGE: {
		struct {
			struct rdma_ucm_cmd_hdr hdr;
			uint8_t payload[64];
		} b;
		size_t len = RND(sizeof(b) + 1);

		for (size_t i = 0; i < sizeof(b); i++)
			((uint8_t *)&b)[i] = RND(256);
		b.hdr.cmd = RND(2) ? RND(NCMD + 2) : (uint32_t)next_rand(r);
		if (RND(2))
			b.hdr.in = len > sizeof(b.hdr) ? len - sizeof(b.hdr) : 0;
		errno = 0;
		return write(fd, &b, len) < 0 ? -1 : 0;
	}
	case OP_SWAP_FILE: {
		/* Swap the file behind one fd while the other threads use it. */
		int nfd = open(DEV, O_RDWR | O_CLOEXEC | O_NONBLOCK);

		if (nfd < 0)
			return -1;
		ret = dup3(nfd, fds[RND(NFDS)], O_CLOEXEC) < 0 ? -1 : 0;
		close(nfd);
		return ret;
	}
	case OP_CHAIN: {
		/* An id in a useful state: listening, or resolving, on a known port. */
		struct sockaddr_in a = with_port(RND(2) ? rxe : siw, 7000 + RND(8));
		struct rdma_ucm_event_resp ev;
		unsigned long writes = 1;
		uint32_t id;

		ret = create_id(fd, 1 + RND(4), RND(4) ? RDMA_PS_TCP : RDMA_PS_UDP, &id);
		if (!ret) {
			remember(r, id);
			switch (RND(3)) {
			case 0:
				ret = (writes++, bind_ip(fd, id, &a)) || (writes++, listen_id(fd, id, RND(8)));
				break;
			case 1:
				ret = (writes++, resolve_ip(fd, id, &a));
				break;
			default:
				/* As far as CONNECT, if no other thread takes the events first. */
				ret = (writes++, resolve_ip(fd, id, &a)) || next_event(fd, &ev, 20) ||
				      (writes += 2, resolve_route(fd, id)) || next_event(fd, &ev, 20) ||
				      (writes += 2, connect_id(fd, id, RND(1 << 24)));
				break;
			}
		}
		/* The commands written, GET_EVENTs included. */
		__atomic_add_fetch(&st->chain_writes, writes, __ATOMIC_RELAXED);
		return ret ? -1 : 0;
	}
	}
	return cmd(fds[cur_slot], op, &in, in_len, out_len);
}

static int pick_op(uint64_t *r)
{
	static unsigned int total;
	unsigned int i, x;

	if (!total)
		for (i = 0; i < NOPS; i++)
			total += weights[i];
	x = RND(total);
	for (i = 0; i < NOPS; i++) {
		if (x < weights[i])
			return i;
		x -= weights[i];
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

static void record(int op, long ret, int e, uint64_t ns)
{
	__atomic_add_fetch(&st->ops[op], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&st->ns[op], ns, __ATOMIC_RELAXED);
	if (ret == 0) {
		__atomic_add_fetch(&st->ok[op], 1, __ATOMIC_RELAXED);
		return;
	}
	if (e < 0 || e > MAX_ERRNO)
		e = MAX_ERRNO;
	__atomic_add_fetch(&st->errnos[op][e], 1, __ATOMIC_RELAXED);
	/* A plain errno; 524 (ENOTSUPP) is what rdma_cm itself returns for some joins. */
	if ((e < 1 || e > 133) && e != 524) {
		if (__atomic_add_fetch(&st->bad, 1, __ATOMIC_RELAXED) == 1) {
			st->bad_op = op;
			st->bad_errno = e;
		}
	}
}

static void *worker_thread(void *arg)
{
	uint64_t state = (uintptr_t)arg, *r = &state;

	while (time(NULL) < deadline &&
	       __atomic_add_fetch(&st->done, 1, __ATOMIC_RELAXED) <= st->limit) {
		int op = pick_op(r);
		uint64_t t0 = now_ns();
		long ret = do_op(r, op);
		int e = errno;

		record(op, ret, e, now_ns() - t0);
	}
	return NULL;
}

static void worker(uint64_t seed)
{
	pthread_t t[8];
	int i;

	for (i = 0; i < NFDS; i++)
		fds[i] = open(DEV, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	for (i = 0; i < NIDS; i++)
		ids[i] = i;
	for (i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker_thread, (void *)(uintptr_t)(seed * 7919 + i + 1));
	for (i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	/* Half the workers close their files, half leave it to exit (events still queued). */
	if (seed & 1)
		for (i = 0; i < NFDS; i++)
			close(fds[i]);
	_exit(0);
}

/* The environment changing underneath: a spare device, addresses, neighbours. */
static void chaos(uint64_t seed)
{
	static const char *const steps[] = {
		"rdma link add rxef type rxe netdev vethf0 2>/dev/null",
		"rdma link delete rxef 2>/dev/null",
		"ip addr add 203.0.113.77/24 dev vethf0 2>/dev/null",
		"ip addr del 203.0.113.77/24 dev vethf0 2>/dev/null",
		"ip link set vethf0 down; ip link set vethf0 up",
		"ip neigh flush dev veth0; ip neigh flush dev veth2",
		"sysctl -qw net.rdma_ucm.max_backlog=",
	};
	uint64_t state = seed ^ 0xc4a05, *r = &state;
	time_t start = time(NULL), shown = start;
	char line[128];

	while (time(NULL) < deadline && __atomic_load_n(&st->done, __ATOMIC_RELAXED) < st->limit) {
		unsigned int k = RND(ARRAY_SIZE(steps));

		snprintf(line, sizeof(line), "%s%s", steps[k], k == 6 ? (RND(2) ? "1" : "1024") : "");
		if (system(line) < 0)
			break;
		if (time(NULL) - shown >= 60) {
			shown = time(NULL);
			printf("# progress: %lu commands after %ld s\n",
			       __atomic_load_n(&st->done, __ATOMIC_RELAXED), (long)(shown - start));
		}
		usleep(50000 + RND(200000));
	}
	_exit(0);
}

/* Waits for @pid until @until; kills it and returns -1 if it is late. */
static int reap(pid_t pid, time_t until)
{
	int status;

	while (time(NULL) < until) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? 0 : -1;
		usleep(100000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* Events fetched, by type, and the success share of the state-changing commands. */
static void print_reached(void)
{
	static const int ops[] = { RDMA_USER_CM_CMD_CONNECT, RDMA_USER_CM_CMD_ACCEPT, -1 };
	unsigned long jo, jn;
	int i;

	printf("# events fetched (type count):");
	for (i = 0; i <= NEV; i++)
		if (st->events[i])
			printf(" %s:%lu", ev_names[i], st->events[i]);
	printf("\n");
	for (i = 0; ops[i] >= 0; i++)
		printf("# success: %-7s %6lu of %6lu (%.1f%%)\n", op_names[ops[i]], st->ok[ops[i]],
		       st->ops[ops[i]], st->ops[ops[i]] ? 100.0 * st->ok[ops[i]] / st->ops[ops[i]] : 0);
	jo = st->ok[RDMA_USER_CM_CMD_JOIN_IP_MCAST] + st->ok[RDMA_USER_CM_CMD_JOIN_MCAST];
	jn = st->ops[RDMA_USER_CM_CMD_JOIN_IP_MCAST] + st->ops[RDMA_USER_CM_CMD_JOIN_MCAST];
	printf("# success: %-7s %6lu of %6lu (%.1f%%) (join_ip_mcast and join_mcast)\n", "join", jo,
	       jn, jn ? 100.0 * jo / jn : 0);
}

static void print_mix(void)
{
	int op, e;

	printf("# command mix (count, succeeded, mean microseconds, errnos):\n");
	for (op = 0; op < NOPS; op++) {
		char buf[512] = "";

		for (e = 0; e <= MAX_ERRNO; e++)
			if (st->errnos[op][e])
				snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), " %s:%lu",
					 e == MAX_ERRNO ? "other" : e == 524 ? "ENOTSUPP" :
					 strerrorname_np(e) ?: "?", st->errnos[op][e]);
		printf("#   %-18s %8lu %8lu %8lu%s\n", op_names[op], st->ops[op], st->ok[op],
		       st->ops[op] ? st->ns[op] / 1000 / st->ops[op] : 0, buf);
	}
}

int main(int argc, char **argv)
{
	const char *ri = getenv("RXE_IP"), *si = getenv("SIW_IP");
	unsigned long seed = 1, limit = 20000;
	int seconds = 60, procs = 4, c, i, late = 0, left;
	pid_t pids[16], chaos_pid;
	uint32_t base;
	struct timespec t0, t1;
	char out[64] = "";
	FILE *p;

	while ((c = getopt(argc, argv, "s:n:t:p:j:")) != -1) {
		switch (c) {
		case 's':
			seed = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			limit = strtoul(optarg, NULL, 0);
			break;
		case 't':
			seconds = atoi(optarg);
			break;
		case 'p':
			procs = atoi(optarg) > 16 ? 16 : atoi(optarg);
			break;
		case 'j':
			nthreads = atoi(optarg) > 8 ? 8 : atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!ri || !si) {
		printf("Bail out! RXE_IP/SIW_IP not set (run through scripts/vm-run)\n");
		return 1;
	}
	rxe = ipv4(ri, 0);
	siw = ipv4(si, 0);
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	bad_ptr = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	st->limit = limit;
	base = probe_id();
	if (system("ip link add vethf0 type veth peer name vethf1 && ip link set vethf0 up && ip link set vethf1 up"))
		printf("# no spare veth: the chaos runs without it\n");
	ktap_header(4);
	printf("# seed %lu, %lu commands max, %d s max, %d processes x %d threads\n", seed, limit,
	       seconds, procs, nthreads);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	deadline = time(NULL) + seconds;
	chaos_pid = fork();
	if (chaos_pid == 0)
		chaos(seed);
	for (i = 0; i < procs; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			worker(seed * 1000003 + i);
	}
	for (i = 0; i < procs; i++)
		late += reap(pids[i], deadline + 120) != 0;
	reap(chaos_pid, deadline + 120);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (system("rdma link delete rxef 2>/dev/null; ip link delete vethf0 2>/dev/null"))
		printf("# the spare device or veth was already gone\n");
	/* Queued destructions (device removal) finish asynchronously. */
	for (i = 0; i < 50; i++) {
		p = popen("rdma resource show cm_id 2>/dev/null | wc -l", "r");
		out[0] = 0;
		if (p) {
			if (!fgets(out, sizeof(out), p))
				out[0] = 0;
			pclose(p);
		}
		left = atoi(out);
		if (!left)
			break;
		usleep(100000);
	}
	print_mix();
	print_reached();
	unsigned long total = 0;

	for (i = 0; i < NOPS; i++)
		if (i != OP_SWAP_FILE && i != OP_CHAIN)
			total += st->ops[i];
	total += st->chain_writes;

	ktap_result(st->bad == 0, "fuzz_plain_errnos", "%lu bad results, first %s errno %d", st->bad,
		    op_names[st->bad_op], st->bad_errno);
	ktap_result(!late, "fuzz_workers_exit_in_time", "%d workers hung", late);
	ktap_result(!left, "fuzz_no_cm_id_left", "%d cm_ids left", left);
	ktap_result(probe_id() == base, "fuzz_no_context_left", "the first id is still taken");
	printf("# chain: %lu commands written\n", st->chain_writes);
	printf("fuzz: seed %lu, %lu commands (writes) in %.1f s, %d processes x %d threads\n", seed, total,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, procs, nthreads);
	return ktap_finish();
}
