// SPDX-License-Identifier: GPL-2.0
/*
 * C shim of ucma-rs. See ucma_shim.h.
 */
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/namei.h>
#include <linux/sysfs.h>
#include <rdma/ib.h>
#include <rdma/rdma_user_cm.h>

#include "ucma_shim.h"

static ssize_t abi_version_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", RDMA_USER_CM_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

static struct attribute *ucma_attrs[] = {
	&dev_attr_abi_version.attr,
	NULL,
};
ATTRIBUTE_GROUPS(ucma);

const struct attribute_group **ucma_shim_misc_groups(void)
{
	return ucma_groups;
}

bool ucma_shim_safe_file_access(struct file *filp)
{
	return ib_safe_file_access(filp);
}

bool ucma_shim_misc_name_taken(const char *name)
{
	char buf[64];
	struct path path;

	if (snprintf(buf, sizeof(buf), "/sys/class/misc/%s", name) >= sizeof(buf))
		return false;
	if (kern_path(buf, LOOKUP_FOLLOW, &path))
		return false;
	path_put(&path);
	return true;
}
