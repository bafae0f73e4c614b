// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers of the rdma_cm abstraction (rust/rdma_cm.rs): the static inlines
 * and macros of the rdma_cm, ib_addr and ib_sa headers it calls, and the
 * two fields of struct ib_device it reads. In a kernel tree they are among
 * the kernel's Rust helpers; the out-of-tree module builds them itself
 * (include/rdma_helpers_module.c).
 */

#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

/*
 * rdma_create_id() is a macro that names the caller by KBUILD_MODNAME;
 * @net: the id's network namespace (the id takes its own reference).
 */
__rust_helper struct rdma_cm_id *
rust_helper_rdma_create_id(struct net *net, rdma_cm_event_handler event_handler,
			   void *context, enum rdma_ucm_port_space ps,
			   enum ib_qp_type qp_type)
{
	return rdma_create_id(net, event_handler, context, ps, qp_type);
}

/*
 * rdma_create_user_id() takes the calling task's network namespace through
 * current->nsproxy, which an exiting task has cleared already when it
 * closes the files it left open (exit_task_namespaces() runs before
 * exit_task_work()). Only the task itself clears it, so the check holds
 * for the call. Returns the new id, ERR_PTR(-ESRCH) if the calling task
 * has no namespaces any more, or rdma_create_user_id()'s error.
 */
__rust_helper struct rdma_cm_id *
rust_helper_rdma_create_user_id_checked(rdma_cm_event_handler event_handler,
					void *context,
					enum rdma_ucm_port_space ps,
					enum ib_qp_type qp_type)
{
	if (!current->nsproxy)
		return ERR_PTR(-ESRCH);
	return rdma_create_user_id(event_handler, context, ps, qp_type);
}

/*
 * Copies min(@room, the id's count) of @id's service records to @out.
 * The records of an id are set once, by rdma_resolve_ib_service()'s SA
 * callback, and freed only when the id is destroyed. That callback
 * publishes the pointer and the count before it copies the records in,
 * with no lock a reader could take: a copy racing it may read bytes not
 * yet written, as C's QUERY does. The race stays here, in C, as a plain
 * read like ucma.c's. Returns the id's count of records (clamped to
 * INT_MAX), or -ENODATA when none was resolved.
 */
__rust_helper int rust_helper_rdma_copy_service_recs(struct rdma_cm_id *id,
						     void *out, size_t room)
{
	struct sa_service_rec *recs = READ_ONCE(id->route.service_recs);
	unsigned int num = READ_ONCE(id->route.num_service_recs);

	if (!recs)
		return -ENODATA;
	memcpy(out, recs, array_size(min_t(size_t, room, num), sizeof(*recs)));
	return min_t(unsigned int, num, INT_MAX);
}

/* @dev's node GUID, in network byte order. */
__rust_helper u64 rust_helper_ib_device_node_guid(struct ib_device *dev)
{
	return (__force u64)dev->node_guid;
}

__rust_helper u32 rust_helper_ib_device_index(struct ib_device *dev)
{
	return dev->index;
}

__rust_helper bool rust_helper_rdma_cap_ib_sa(struct ib_device *dev, u32 port)
{
	return rdma_cap_ib_sa(dev, port);
}

__rust_helper bool rust_helper_rdma_cap_opa_ah(struct ib_device *dev, u32 port)
{
	return rdma_cap_opa_ah(dev, port);
}

__rust_helper bool rust_helper_rdma_protocol_roce(struct ib_device *dev,
						  u32 port)
{
	return rdma_protocol_roce(dev, port);
}

__rust_helper bool rust_helper_rdma_protocol_iwarp(struct ib_device *dev,
						   u32 port)
{
	return rdma_protocol_iwarp(dev, port);
}

__rust_helper void rust_helper_rdma_addr_get_sgid(struct rdma_dev_addr *dev_addr,
						  union ib_gid *gid)
{
	rdma_addr_get_sgid(dev_addr, gid);
}

__rust_helper void rust_helper_rdma_addr_get_dgid(struct rdma_dev_addr *dev_addr,
						  union ib_gid *gid)
{
	rdma_addr_get_dgid(dev_addr, gid);
}

__rust_helper u16 rust_helper_ib_addr_get_pkey(struct rdma_dev_addr *dev_addr)
{
	return ib_addr_get_pkey(dev_addr);
}

__rust_helper void rust_helper_rdma_ip2gid(struct sockaddr *addr,
					   union ib_gid *gid)
{
	rdma_ip2gid(addr, gid);
}

__rust_helper void rust_helper_sa_convert_path_opa_to_ib(struct sa_path_rec *dest,
							 struct sa_path_rec *src)
{
	sa_convert_path_opa_to_ib(dest, src);
}

__rust_helper void rust_helper_sa_convert_path_ib_to_opa(struct sa_path_rec *dest,
							 struct sa_path_rec *src)
{
	sa_convert_path_ib_to_opa(dest, src);
}
