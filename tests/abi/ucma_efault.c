// SPDX-License-Identifier: GPL-2.0
/*
 * Faulting replies: every uCMA command that copies a reply to its
 * `response` pointer is called with that pointer on a PROT_NONE page, and
 * on a page that holds only the first part of the reply (the rest falls on
 * the PROT_NONE page after it). The copy fails with EFAULT in both cases,
 * and the state it leaves is the C module's (drivers/infiniband/core/ucma.c,
 * Linux 7.3):
 *
 *   CREATE_ID      the new context is destroyed: its id is free again.
 *   DESTROY_ID     the context is destroyed all the same (its events too).
 *   QUERY_ROUTE,   read-only: the context is unchanged, the next good
 *   QUERY (ADDR,     reply is the one before the fault, and the part of
 *   PATH, GID),      the reply before the fault was written.
 *   INIT_QP_ATTR
 *   GET_EVENT      the event stays queued, first in line, not counted as
 *                  delivered, and a connect request keeps its backlog slot.
 *   MIGRATE_ID     the migration is not undone: the id is on the new file.
 *   JOIN_IP_MCAST, the join is undone (rdma_leave_multicast, its events
 *   JOIN_MCAST       purged): its multicast id is free, no event arrives.
 *   LEAVE_MCAST    the join is left all the same.
 *
 * QUERY IB_SERVICE copies nothing on rxe (no service records: ENODATA is
 * checked before the copy), WRITE_CM_EVENT and the other commands have no
 * reply. Passes unchanged with either module loaded; Documentation/abi.rst
 * lists no difference here. Needs RXE_IP in the environment. On the
 * kernel's kselftest_harness.h (tests/lib/harness.h): one TEST_F per group
 * of cases, each in a process of its own with two files of its own. Prints
 * KTAP.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/rdma_user_cm.h>

#include "harness.h"
#include "ucma_cmd.h"

#define PAGE 4096

static struct sockaddr_in rxe_addr;
/* A PROT_NONE page; and the first byte of a PROT_NONE page after a mapped one. */
static void *bad;
static uint8_t *edge;
/* The first free id at the start, for the last group's check. */
static uint32_t base_id;

/* Two files of the device per group. */
struct efault_files {
	int fd, fd2;
};

FIXTURE(efault)
{
	struct efault_files f;
};

FIXTURE_SETUP(efault)
{
	self->f.fd = ucma_dev_open();
	self->f.fd2 = ucma_dev_open();
	ASSERT_LE(0, self->f.fd) TH_LOG("open %s: %s", UCMA_DEV, strerror(errno));
	ASSERT_LE(0, self->f.fd2) TH_LOG("open %s: %s", UCMA_DEV, strerror(errno));
}

FIXTURE_TEARDOWN(efault)
{
	close(self->f.fd);
	close(self->f.fd2);
	ktap_group_end(_metadata);
}

/*
 * A reply buffer of which only the first @valid bytes are mapped (filled
 * with 0xa5): the copy of a longer reply faults after @valid bytes.
 */
static void *at_edge(size_t valid)
{
	memset(edge - valid, 0xa5, valid);
	return edge - valid;
}

static char name_buf[128];

static const char *nm(const char *a, const char *b)
{
	snprintf(name_buf, sizeof(name_buf), "%s_%s", a, b);
	return name_buf;
}

/* Nonzero if GET_EVENT of a nonblocking @fd finds no event (EAGAIN). */
static int queue_empty(int fd)
{
	struct rdma_ucm_event_resp ev;

	set_nonblock(fd, 1);
	return get_event(fd, &ev, sizeof(ev)) == -1 && errno == EAGAIN;
}

/* ---- CREATE_ID ---- */

static long create_at(int fd, uint64_t uid, void *resp)
{
	struct rdma_ucm_create_id c = { .uid = uid, .ps = RDMA_PS_TCP };

	c.response = (uintptr_t)resp;
	return CMD(fd, RDMA_USER_CM_CMD_CREATE_ID, c, sizeof(struct rdma_ucm_create_id_resp));
}

/*
 * The id a CREATE_ID on @fd would get (created and destroyed): ids are
 * handed out lowest-free from one table, so a context left by a faulting
 * CREATE_ID would take it.
 */
static uint32_t next_id(int fd)
{
	uint32_t id = ~0u;

	if (create_id(fd, 1, RDMA_PS_TCP, &id) || destroy_id(fd, id, NULL))
		return ~0u;
	return id;
}

/*
 * C (ucma_create_id): the reply is copied before ucma_finish_ctx()
 * publishes the id; on a fault the context is destroyed
 * (ucma_destroy_private_ctx) and the id is free.
 */
static void test_create_id(struct efault_files *self)
{
	int fd = self->fd;
	uint32_t a = next_id(fd), b = ~0u, *part;
	long gone;

	EXPECT_ERRNO("create_id_reply_fault_efault", create_at(fd, 0xc1, bad), EFAULT);
	gone = destroy_id(fd, a, NULL) == -1 && errno == ENOENT;
	b = next_id(fd);
	ktap_result(a != ~0u && gone && b == a, "create_id_reply_fault_no_context",
		    "id %u before the fault: %s after it, next CREATE_ID gets %u", a,
		    gone ? "unknown" : "still there", b);

	/* The first 2 bytes of the 4-byte reply mapped. */
	part = at_edge(2);
	EXPECT_ERRNO("create_id_reply_partial_efault", create_at(fd, 0xc2, part), EFAULT);
	/* Both modules copy with copy_to_user(), which writes up to the fault. */
	ktap_result(!memcmp(part, &a, 2), "create_id_reply_partial_written",
		    "bytes %02x %02x before the fault, want those of id %u",
		    ((uint8_t *)part)[0], ((uint8_t *)part)[1], a);
	gone = destroy_id(fd, a, NULL) == -1 && errno == ENOENT;
	b = next_id(fd);
	ktap_result(gone && b == a, "create_id_reply_partial_no_context",
		    "id %u %s after the fault, next CREATE_ID gets %u", a,
		    gone ? "unknown" : "still there", b);
}

/* ---- DESTROY_ID ---- */

static long destroy_at(int fd, uint32_t id, void *resp)
{
	struct rdma_ucm_destroy_id d = { .id = id };

	d.response = (uintptr_t)resp;
	return CMD(fd, RDMA_USER_CM_CMD_DESTROY_ID, d, sizeof(struct rdma_ucm_destroy_id_resp));
}

/*
 * C (ucma_destroy_id): the context is unpublished and destroyed (its
 * queued events dropped) before the reply is copied, and not restored on a
 * fault.
 */
static void test_destroy_id(struct efault_files *self)
{
	static const char *const how[] = { "fault", "partial" };
	int fd = self->fd, k;
	uint32_t id = ~0u, next;
	long gone, dropped;

	for (k = 0; k < 2; k++) {
		create_id(fd, 0xd1, RDMA_PS_TCP, &id);
		write_user_event(fd, id, EV_USER, 1, 0);
		EXPECT_ERRNO(nm("destroy_id_reply", k ? "partial_efault" : "fault_efault"),
			     destroy_at(fd, id, k ? at_edge(2) : bad), EFAULT);
		gone = destroy_id(fd, id, NULL) == -1 && errno == ENOENT;
		dropped = queue_empty(fd);
		next = next_id(fd);
		ktap_result(gone && dropped && next == id,
			    nm("destroy_id_reply", k ? "partial_destroyed" : "fault_destroyed"),
			    "%s reply: id %u %s, its event %s, next CREATE_ID gets %u", how[k], id,
			    gone ? "gone" : "still there", dropped ? "dropped" : "queued", next);
	}
}

/* ---- The read-only replies: QUERY_ROUTE, QUERY, INIT_QP_ATTR ---- */

static long query_route_at(int fd, uint32_t id, void *resp, uint16_t out)
{
	struct rdma_ucm_query q = { .id = id };

	q.response = (uintptr_t)resp;
	return CMD(fd, RDMA_USER_CM_CMD_QUERY_ROUTE, q, out);
}

static long query_at(int fd, uint32_t id, uint32_t option, void *resp, uint16_t out)
{
	struct rdma_ucm_query q = { .id = id, .option = option };

	q.response = (uintptr_t)resp;
	return CMD(fd, RDMA_USER_CM_CMD_QUERY, q, out);
}

static long query_addr_at(int fd, uint32_t id, void *resp, uint16_t out)
{
	return query_at(fd, id, RDMA_USER_CM_QUERY_ADDR, resp, out);
}

static long query_path_at(int fd, uint32_t id, void *resp, uint16_t out)
{
	return query_at(fd, id, RDMA_USER_CM_QUERY_PATH, resp, out);
}

static long query_gid_at(int fd, uint32_t id, void *resp, uint16_t out)
{
	return query_at(fd, id, RDMA_USER_CM_QUERY_GID, resp, out);
}

static long init_qp_attr_at(int fd, uint32_t id, void *resp, uint16_t out)
{
	struct rdma_ucm_init_qp_attr ia = { .id = id, .qp_state = 1 /* INIT */ };

	ia.response = (uintptr_t)resp;
	return CMD(fd, RDMA_USER_CM_CMD_INIT_QP_ATTR, ia, out);
}

struct ro_probe {
	const char *name;
	long (*run)(int fd, uint32_t id, void *resp, uint16_t out);
	uint16_t out; /* the command's out */
	uint16_t len; /* the bytes it copies: min(out, reply size) */
};

/* QUERY PATH copies its 8-byte header and one record per path: one on RoCE. */
#define PATH_REPLY (sizeof(struct rdma_ucm_query_path_resp) + sizeof(struct ib_path_rec_data))

static const struct ro_probe ro_probes[] = {
	{ "query_route", query_route_at, sizeof(struct rdma_ucm_query_route_resp),
	  sizeof(struct rdma_ucm_query_route_resp) },
	{ "query_addr", query_addr_at, sizeof(struct rdma_ucm_query_addr_resp),
	  sizeof(struct rdma_ucm_query_addr_resp) },
	{ "query_path", query_path_at, PATH_REPLY, PATH_REPLY },
	{ "query_gid", query_gid_at, sizeof(struct rdma_ucm_query_addr_resp),
	  sizeof(struct rdma_ucm_query_addr_resp) },
	{ "init_qp_attr", init_qp_attr_at, sizeof(struct ib_uverbs_qp_attr),
	  sizeof(struct ib_uverbs_qp_attr) },
};

/*
 * C: each copies its reply last (copy_to_user, then EFAULT) and changes
 * nothing before it. A good reply, one to the PROT_NONE page, one whose
 * first half is mapped, and a good one again: both faults EFAULT, the
 * half written as the good reply's first half, the last reply the first.
 */
static void probe_read_only(const struct ro_probe *p, int fd, uint32_t id)
{
	uint8_t first[512], again[512], *part = at_edge(p->len / 2);
	long rc0, rc1;
	int path_ok = 1;

	memset(first, 0xa5, sizeof(first));
	rc0 = p->run(fd, id, first, p->out);
	if (p->run == query_path_at)
		path_ok = ((struct rdma_ucm_query_path_resp *)first)->num_paths == 1;
	EXPECT_ERRNO(nm(p->name, "reply_fault_efault"), p->run(fd, id, bad, p->out), EFAULT);
	EXPECT_ERRNO(nm(p->name, "reply_partial_efault"), p->run(fd, id, part, p->out), EFAULT);
	memset(again, 0x5a, sizeof(again));
	rc1 = p->run(fd, id, again, p->out);
	ktap_result(rc0 == 0 && rc1 == 0 && path_ok && !memcmp(first, again, p->len) &&
			    !memcmp(part, first, p->len / 2),
		    nm(p->name, "unchanged_after_fault"),
		    "good reply rc %ld, after the faults rc %ld errno %d; %s; %s%s", rc0, rc1, errno,
		    memcmp(first, again, p->len) ? "the replies differ" : "same replies",
		    memcmp(part, first, p->len / 2) ? "the partial copy differs" : "partial copy ok",
		    path_ok ? "" : "; want 1 path");
}

/*
 * A TCP id on @fc with its route resolved to a listener on @fl: QUERY_ROUTE
 * and the QUERY options need no more, INIT_QP_ATTR a device.
 */
static void test_read_only(struct efault_files *self)
{
	int fl = self->fd, fc = self->fd2;
	struct sockaddr_in a = rxe_addr;
	uint32_t l = ~0u, c = ~0u;
	const char *failed;
	unsigned int i;

	a.sin_port = htons(7491);
	failed = route_to_listener(fl, fc, &a, &l, &c);
	if (failed)
		printf("# route to the listener: %s: %s\n", failed, strerror(errno));
	for (i = 0; i < ARRAY_SIZE(ro_probes); i++)
		probe_read_only(&ro_probes[i], fc, c);
	/* No service records on rxe: ENODATA, before any copy (as in C). */
	EXPECT_ERRNO("query_ib_service_reply_fault_enodata",
		     query_at(fc, c, RDMA_USER_CM_QUERY_IB_SERVICE, bad,
			      sizeof(struct rdma_ucm_query_ib_service_resp) +
				      sizeof(struct ib_user_service_rec)),
		     ENODATA);
}

/* ---- GET_EVENT ---- */

/*
 * C (ucma_get_event): the event is copied while still first in the queue
 * and removed, counted (events_reported) and its backlog slot given back
 * only after the copy succeeded.
 */
static void test_get_event(struct efault_files *self)
{
	struct rdma_ucm_event_resp e1, e2, e3, *part;
	const size_t half = sizeof(e1) / 2;
	int fd = self->fd;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint32_t id = ~0u, rep = ~0u;
	long r1, r2, r3;

	set_nonblock(fd, 1);
	create_id(fd, 0xe1, RDMA_PS_TCP, &id);
	write_user_event(fd, id, EV_USER, 1, 0x1111);
	write_user_event(fd, id, EV_USER, 2, 0x2222);
	write_user_event(fd, id, EV_USER, 3, 0x3333);
	EXPECT_ERRNO("get_event_reply_fault_efault", get_event(fd, bad, sizeof(e1)), EFAULT);
	part = at_edge(half);
	EXPECT_ERRNO("get_event_reply_partial_efault", get_event(fd, part, sizeof(e1)), EFAULT);
	memset(&e1, 0, sizeof(e1));
	memset(&e2, 0, sizeof(e2));
	memset(&e3, 0, sizeof(e3));
	ktap_result(poll(&p, 1, 0) == 1 && p.revents == POLLIN, "get_event_fault_still_pollin",
		    "revents %#x", p.revents);
	r1 = get_event(fd, &e1, sizeof(e1));
	r2 = get_event(fd, &e2, sizeof(e2));
	r3 = get_event(fd, &e3, sizeof(e3));
	/* Three events: two faults that each moved the first to the tail would show. */
	ktap_result(r1 == 0 && e1.id == id && e1.status == 1 && r2 == 0 && e2.status == 2 &&
			    r3 == 0 && e3.status == 3 && queue_empty(fd),
		    "get_event_fault_event_kept_first",
		    "after the faults: rc %ld/%ld/%ld status %u, %u, %u (want 1, 2, 3, then none)", r1,
		    r2, r3, e1.status, e2.status, e3.status);
	ktap_result(!memcmp(part, &e1, half), "get_event_reply_partial_written",
		    "the %zu bytes before the fault are not the event's", half);
	ktap_result(destroy_id(fd, id, &rep) == 0 && rep == 3, "get_event_fault_not_counted",
		    "DESTROY_ID reports %u events delivered, want 3", rep);
}

/* A TCP id on @fc with its route resolved to @a; NULL or the step that failed. */
static const char *client_route(int fc, uint64_t uid, const struct sockaddr_in *a, uint32_t *c)
{
	if (create_id(fc, uid, RDMA_PS_TCP, c))
		return "create client";
	if (resolve_ip(fc, *c, a) || wait_event(fc, EV_ADDR_RESOLVED, NULL, 10000))
		return "resolve address";
	if (resolve_route(fc, *c) || wait_event(fc, EV_ROUTE_RESOLVED, NULL, 10000))
		return "resolve route";
	return NULL;
}

/*
 * A listener with backlog 1 holds a CONNECT_REQUEST whose GET_EVENT faulted:
 * the request still holds the slot, so a second client's is refused (no
 * event: rdma_cm drops it without a REJ, the client would retry after its
 * ~8 s REQ timeout; the listener's queue is read 1.5 s after the CONNECT,
 * where a connect takes 0.6-1.6 ms under TCG, vm.md), and the kept request
 * names a live child.
 */
static void test_get_event_connect_request(struct efault_files *self)
{
	int fl = self->fd, fc = self->fd2;
	struct pollfd p = { .fd = fl, .events = POLLIN };
	struct sockaddr_in a = rxe_addr;
	struct rdma_ucm_event_resp ev;
	uint32_t l = ~0u, c = ~0u, c2 = ~0u;
	const char *failed;
	int reqs = 0, others = 0, child_ok = 0;

	a.sin_port = htons(7492);
	if (create_id(fl, 8, RDMA_PS_TCP, &l) || bind_ip(fl, l, &a) || listen_id(fl, l, 1))
		failed = "listener with backlog 1";
	else
		failed = client_route(fc, 0x500, &a, &c);
	if (!failed && connect_id(fc, c, 0x501))
		failed = "connect";
	if (!failed && poll(&p, 1, 10000) != 1)
		failed = "no CONNECT_REQUEST";
	if (failed)
		printf("# %s: %s\n", failed, strerror(errno));
	EXPECT_ERRNO("get_event_connect_request_reply_fault_efault", get_event(fl, bad, sizeof(ev)),
		     EFAULT);
	if (!failed)
		failed = client_route(fc, 0x502, &a, &c2);
	if (!failed && connect_id(fc, c2, 0x503))
		failed = "second connect";
	usleep(1500000);
	set_nonblock(fl, 1);
	while (!failed && get_event(fl, &ev, sizeof(ev)) == 0) {
		if (ev.event != EV_CONNECT_REQUEST) {
			others++;
			continue;
		}
		/* The child of the kept request is live on the listener's file. */
		child_ok = reqs++ == 0 && ev.uid == 8 && destroy_id(fl, ev.id, NULL) == 0;
	}
	ktap_result(!failed && reqs == 1 && others == 0 && child_ok,
		    "get_event_connect_request_kept_with_slot",
		    "%s: %d CONNECT_REQUESTs and %d other events with backlog 1 (want 1 and 0), child %s",
		    failed ? failed : "two clients connected", reqs, others,
		    child_ok ? "destroyed" : "not destroyable");
}

/* ---- MIGRATE_ID ---- */

static long migrate_at(int to, uint32_t id, int from, void *resp)
{
	struct rdma_ucm_migrate_id m = { .id = id, .fd = from };

	m.response = (uintptr_t)resp;
	return CMD(to, RDMA_USER_CM_CMD_MIGRATE_ID, m, sizeof(struct rdma_ucm_migrate_resp));
}

/*
 * C (ucma_migrate_id): the context and its queued events are moved before
 * the reply is copied, and stay moved on a fault.
 */
static void test_migrate_id(struct efault_files *self)
{
	int fa = self->fd, fb = self->fd2, k;
	struct rdma_ucm_event_resp ev;
	uint32_t id = ~0u, rep = ~0u;
	int files[2] = { fa, fb };
	long foreign, got;

	set_nonblock(fa, 1);
	set_nonblock(fb, 1);
	create_id(fa, 0xf1, RDMA_PS_TCP, &id);
	/* One event delivered (events_reported 1), one queued. */
	write_user_event(fa, id, EV_USER, 1, 0);
	get_event(fa, &ev, sizeof(ev));
	write_user_event(fa, id, EV_USER, 2, 0);
	/* fa to fb with the reply on the PROT_NONE page, back with half of it. */
	for (k = 0; k < 2; k++) {
		int from = files[k], to = files[!k];

		EXPECT_ERRNO(nm("migrate_id_reply", k ? "partial_efault" : "fault_efault"),
			     migrate_at(to, id, from, k ? at_edge(2) : bad), EFAULT);
		foreign = write_user_event(from, id, EV_USER, 3, 0) == -1 && errno == EINVAL;
		memset(&ev, 0, sizeof(ev));
		got = k ? get_event(to, &ev, sizeof(ev)) : -1;
		ktap_result(foreign && queue_empty(from) && (!k || (got == 0 && ev.status == 2)),
			    nm("migrate_id_reply", k ? "partial_moved" : "fault_moved"),
			    "id %u %s on the old file, its queued event %s", id,
			    foreign ? "foreign" : "still", k ? (got == 0 && ev.status == 2 ?
			    "on the new file" : "not on the new file") : "checked next");
	}
	ktap_result(destroy_id(fa, id, &rep) == 0 && rep == 2, "migrate_id_fault_counts_kept",
		    "DESTROY_ID on the last file reports %u events delivered, want 2", rep);
}

/* ---- JOIN_IP_MCAST, JOIN_MCAST, LEAVE_MCAST ---- */

static long join_ip_at(int fd, uint32_t id, const char *group, uint64_t uid, void *resp)
{
	struct rdma_ucm_join_ip_mcast j = { .id = id, .uid = uid };
	struct sockaddr_in g = ipv4(group, 0);

	memcpy(&j.addr, &g, sizeof(g));
	j.response = (uintptr_t)resp;
	return CMD(fd, RDMA_USER_CM_CMD_JOIN_IP_MCAST, j, sizeof(struct rdma_ucm_create_id_resp));
}

static long join_mcast_at(int fd, uint32_t id, const char *group, uint64_t uid, void *resp)
{
	struct rdma_ucm_join_mcast j = { .id = id, .uid = uid, .join_flags = 0 };
	struct sockaddr_in g = ipv4(group, 0);

	j.addr_size = sizeof(g);
	memcpy(&j.addr, &g, sizeof(g));
	j.response = (uintptr_t)resp;
	return CMD(fd, RDMA_USER_CM_CMD_JOIN_MCAST, j, sizeof(struct rdma_ucm_create_id_resp));
}

static long leave_at(int fd, uint32_t mc, void *resp)
{
	struct rdma_ucm_destroy_id l = { .id = mc };

	l.response = (uintptr_t)resp;
	return CMD(fd, RDMA_USER_CM_CMD_LEAVE_MCAST, l, sizeof(struct rdma_ucm_destroy_id_resp));
}

/*
 * Reads @fd's events until the MULTICAST_JOIN of @uid (within 5 s), then
 * 300 ms more: the joins are RoCE work on rdma_cm's workqueue, done in
 * well under a millisecond. Counts in *@stray the events of @stray_uid
 * (the undone join's). 0 if @uid's join event came.
 */
static int join_event(int fd, uint64_t uid, uint64_t stray_uid, int *stray)
{
	struct rdma_ucm_event_resp ev;
	int seen = 0;

	*stray = 0;
	while (next_event(fd, &ev, seen ? 300 : 5000) == 0) {
		*stray += ev.uid == stray_uid;
		seen |= ev.uid == uid && ev.event == EV_MULTICAST_JOIN;
	}
	return seen ? 0 : -1;
}

/*
 * C (ucma_process_join): the join is reserved a multicast id, joined, and
 * published only once the reply is out; on a fault it is left
 * (rdma_leave_multicast, which cancels RoCE's join work), its events purged
 * and its id freed. So: EFAULT; LEAVE of the id it had answers ENOENT; a
 * good join of the same group gets that id (ucma_rs would answer
 * EADDRINUSE to a second join of a group still joined); no event of the
 * undone join arrives. @mc is the lowest free multicast id.
 */
typedef long (*join_fn)(int fd, uint32_t id, const char *group, uint64_t uid, void *resp);

static void probe_join(const char *name, join_fn join, int fd, uint32_t id, uint32_t mc,
		       const char *group, uint64_t uid, int partial)
{
	struct rdma_ucm_create_id_resp r = { .id = ~0u };
	long unknown, rejoined;
	int stray = 0, ev;

	EXPECT_ERRNO(nm(name, partial ? "reply_partial_efault" : "reply_fault_efault"),
		     join(fd, id, group, uid, partial ? at_edge(2) : bad), EFAULT);
	unknown = leave_at(fd, mc, &r) == -1 && errno == ENOENT;
	rejoined = join(fd, id, group, uid + 1, &r);
	ev = rejoined == 0 ? join_event(fd, uid + 1, uid, &stray) : -1;
	ktap_result(unknown && rejoined == 0 && r.id == mc && ev == 0 && stray == 0 &&
			    leave_mc(fd, mc) == 0,
		    nm(name, partial ? "reply_partial_undone" : "reply_fault_undone"),
		    "multicast id %u %s after the fault; a good join of %s: rc %ld errno %d id %u, %s, %d events of the undone join",
		    mc, unknown ? "unknown" : "still joined", group, rejoined, errno, r.id,
		    ev ? "no join event" : "its join event", stray);
}

/*
 * C (ucma_leave_multicast): the join is unpublished, left and freed before
 * the reply is copied. After a faulting LEAVE a second LEAVE answers
 * ENOENT and the group can be joined again, with the same multicast id.
 */
static void probe_leave(int fd, uint32_t id, uint32_t mc, const char *group, uint64_t uid,
			int partial)
{
	struct rdma_ucm_create_id_resp r = { .id = ~0u };
	long joined, unknown, rejoined;
	int stray = 0;

	joined = join_ip_at(fd, id, group, uid, &r) == 0 && r.id == mc &&
		 join_event(fd, uid, 0, &stray) == 0;
	EXPECT_ERRNO(partial ? "leave_mcast_reply_partial_efault" : "leave_mcast_reply_fault_efault",
		     leave_at(fd, mc, partial ? at_edge(2) : bad), EFAULT);
	unknown = leave_at(fd, mc, &r) == -1 && errno == ENOENT;
	r.id = ~0u;
	rejoined = join_ip_at(fd, id, group, uid + 1, &r) == 0 && r.id == mc &&
		   join_event(fd, uid + 1, uid, &stray) == 0 && stray == 0 && leave_mc(fd, mc) == 0;
	ktap_result(joined && unknown && rejoined,
		    partial ? "leave_mcast_reply_partial_left" : "leave_mcast_reply_fault_left",
		    "join %s; multicast id %u %s after the faulting LEAVE; rejoin %s (id %u, %d stray events)",
		    joined ? "ok" : "failed", mc, unknown ? "unknown" : "still joined",
		    rejoined ? "ok" : "failed", r.id, stray);
}

static void test_multicast(struct efault_files *self)
{
	int fd = self->fd, stray;
	struct rdma_ucm_create_id_resp r = { .id = ~0u };
	uint32_t id = ~0u, mc = ~0u;

	if (create_id(fd, 0x3e, RDMA_PS_UDP, &id) || bind_ip(fd, id, &rxe_addr))
		printf("# UDP id on rxe: %s\n", strerror(errno));
	/* The lowest free multicast id: joined and left. */
	if (join_ip_at(fd, id, "239.7.0.1", 0x70, &r) == 0 && join_event(fd, 0x70, 0, &stray) == 0 &&
	    leave_mc(fd, r.id) == 0)
		mc = r.id;
	printf("# multicast id probe: %u\n", mc);
	probe_join("join_ip_mcast", join_ip_at, fd, id, mc, "239.7.0.2", 0x72, 0);
	probe_join("join_ip_mcast", join_ip_at, fd, id, mc, "239.7.0.3", 0x74, 1);
	probe_join("join_mcast", join_mcast_at, fd, id, mc, "239.7.0.4", 0x76, 0);
	probe_join("join_mcast", join_mcast_at, fd, id, mc, "239.7.0.5", 0x78, 1);
	probe_leave(fd, id, mc, "239.7.0.6", 0x7a, 0);
	probe_leave(fd, id, mc, "239.7.0.7", 0x7c, 1);
	destroy_id(fd, id, NULL);
}

/* ---- Nothing left behind ---- */

static void test_leftovers(uint32_t base)
{
	uint32_t first = ~0u;
	int ok = ids_free_after(base, ids_to_probe(base, 16), 2000, &first), listed;

	ktap_result(ok, "efault_no_context_left", "id %u still taken (ids from %u)", first, base);
	ktap_result(multicast_table_empty(&rxe_addr, 8), "efault_no_join_left",
		    "a multicast id below 8 is still taken");
	listed = listed_cm_ids_after(2000);
	ktap_result(listed == 0, "efault_no_cm_id_left", "rdma lists %d cm ids", listed);
}

/*
 * The groups, each in a process of its own (kselftest_harness.h) with its
 * number of cases and its timeout (three times its longest run on the
 * debug kernel).
 */
TEST_F_TIMEOUT(efault, create_id, 30)
{
	ktap_header(5);
	test_create_id(&self->f);
}

TEST_F_TIMEOUT(efault, destroy_id, 30)
{
	ktap_header(4);
	test_destroy_id(&self->f);
}

TEST_F_TIMEOUT(efault, read_only, 30)
{
	ktap_header(16);
	test_read_only(&self->f);
}

TEST_F_TIMEOUT(efault, get_event, 30)
{
	ktap_header(6);
	test_get_event(&self->f);
}

TEST_F_TIMEOUT(efault, connect_request, 30)
{
	ktap_header(2);
	test_get_event_connect_request(&self->f);
}

TEST_F_TIMEOUT(efault, migrate_id, 30)
{
	ktap_header(5);
	test_migrate_id(&self->f);
}

TEST_F_TIMEOUT(efault, multicast, 30)
{
	ktap_header(12);
	test_multicast(&self->f);
}

/* Last: what the groups before it left behind (their files are closed). */
TEST_F_TIMEOUT(efault, leftovers, 30)
{
	ktap_header(3);
	test_leftovers(base_id);
}

static void efault_init(void)
{
	rxe_addr = ucma_env.rxe;
	bad = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	edge = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bad == MAP_FAILED || edge == MAP_FAILED || mprotect(edge + PAGE, PAGE, PROT_NONE))
		ucma_bail_out("mmap: %s", strerror(errno));
	edge += PAGE;
	base_id = probe_id();
	if (base_id == ~0u)
		ucma_bail_out("CREATE_ID on %s: %s", UCMA_DEV, strerror(errno));
	if (!cm_id_listing_sees(&rxe_addr))
		exit(1);
}

/* Usage: ucma_efault [GROUP...]: every group, or those whose name contains a GROUP. */
int main(int argc, char **argv)
{
	return harness_main(argc, argv, UCMA_NEED_RXE, efault_init);
}
