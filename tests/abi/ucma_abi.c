// SPDX-License-Identifier: GPL-2.0
/*
 * Raw-ABI selftest of /dev/infiniband/rdma_cm: speaks the write() ABI
 * directly (no librdmacm) and checks every answer against what the C
 * rdma_ucm module gives. Runs against either module (scripts/vm-run
 * --module rust|c) with the same expectations. On the kernel's
 * kselftest_harness.h (tests/lib/harness.h): one TEST_F per group of cases,
 * each on a file of its own. Prints KTAP; "ucma_abi WORD" runs the groups
 * whose name contains WORD.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/rdma_user_cm.h>

#include "harness.h"
#include "kmsg.h"
#include "ucma_dev.h"

/* One file of the device per group. */
FIXTURE(abi)
{
	int fd;
};

FIXTURE_SETUP(abi)
{
	self->fd = ucma_dev_open();
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", UCMA_DEV, strerror(errno));
}

FIXTURE_TEARDOWN(abi)
{
	close(self->fd);
	ktap_group_end(_metadata);
}

/* A command buffer: header + payload, written in one write(). */
struct cmd_buf {
	struct rdma_ucm_cmd_hdr hdr;
	uint8_t payload[512];
};

static ssize_t write_cmd(int fd, uint32_t cmd, uint16_t in, uint16_t out, size_t len)
{
	struct cmd_buf b;

	memset(&b, 0, sizeof(b));
	b.hdr.cmd = cmd;
	b.hdr.in = in;
	b.hdr.out = out;
	return write(fd, &b, len);
}

static void test_node(void)
{
	struct stat st = { 0 };
	char buf[16] = "";
	FILE *f;

	ktap_result(stat(UCMA_DEV, &st) == 0 && S_ISCHR(st.st_mode) && (st.st_mode & 0777) == 0666,
		    "node_is_char_0666", "mode %o", st.st_mode);
	f = fopen("/sys/class/misc/rdma_cm/abi_version", "r");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	ktap_result(strcmp(buf, "4\n") == 0, "abi_version_is_4", "read '%s'", buf);
}

static void test_framing(int fd)
{
	struct cmd_buf b;
	size_t len;
	void *unmapped;
	int ok = 1;

	for (len = 0; len < sizeof(struct rdma_ucm_cmd_hdr); len++) {
		errno = 0;
		if (write_cmd(fd, RDMA_USER_CM_CMD_GET_OPTION, 0, 0, len) != -1 || errno != EINVAL)
			ok = 0;
	}
	ktap_result(ok, "short_write_einval", "a write shorter than 8 bytes was not EINVAL");
	EXPECT_ERRNO("unknown_cmd_25_einval", write_cmd(fd, 25, 0, 0, 8), EINVAL);
	EXPECT_ERRNO("unknown_cmd_max_einval", write_cmd(fd, UINT32_MAX, 0, 0, 8), EINVAL);
	EXPECT_ERRNO("unknown_cmd_before_length", write_cmd(fd, 25, 200, 0, 8), EINVAL);
	EXPECT_ERRNO("in_longer_than_write_einval",
		     write_cmd(fd, RDMA_USER_CM_CMD_CREATE_ID, 24, 4, 8 + 23), EINVAL);
	EXPECT_ERRNO("in_max_einval", write_cmd(fd, RDMA_USER_CM_CMD_CREATE_ID, 0xffff, 4, 8), EINVAL);
	EXPECT_ERRNO("get_option_enosys", write_cmd(fd, RDMA_USER_CM_CMD_GET_OPTION, 0, 0, 8), ENOSYS);
	EXPECT_ERRNO("get_option_enosys_trailing",
		     write_cmd(fd, RDMA_USER_CM_CMD_GET_OPTION, 16, 0, 8 + 64), ENOSYS);
	EXPECT_ERRNO("get_option_length_first",
		     write_cmd(fd, RDMA_USER_CM_CMD_GET_OPTION, 1, 0, 8), EINVAL);

	unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_ERRNO("header_fault_efault", write(fd, unmapped, 8), EFAULT);
	munmap(unmapped, 4096);

	memset(&b, 0, sizeof(b));
	EXPECT_ERRNO("pwrite_espipe", pwrite(fd, &b, 8, 0), ESPIPE);
	EXPECT_ERRNO("lseek_espipe", lseek(fd, 0, SEEK_SET), ESPIPE);
	EXPECT_ERRNO("read_einval", read(fd, &b, sizeof(b)), EINVAL);
	EXPECT_ERRNO("ioctl_enotty", ioctl(fd, 0, 0), ENOTTY);
}

static void test_poll_idle(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT | POLLRDNORM };
	int r = poll(&p, 1, 0);

	ktap_result(r == 0 && p.revents == 0, "poll_idle_no_events", "poll %d revents %#x", r,
		    p.revents);
}

/*
 * The credential check: a forked child has its own cred struct, so its
 * write() through the inherited fd is EACCES (ib_safe_file_access), even
 * before the length check.
 */
static void test_foreign_creds(int fd)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		errno = 0;
		long r = write_cmd(fd, RDMA_USER_CM_CMD_GET_OPTION, 0, 0, 4);

		_exit(r == -1 && errno == EACCES ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	ktap_result(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked_child_eacces",
		    "child status %#x", status);
	EXPECT_ERRNO("opener_still_allowed", write_cmd(fd, RDMA_USER_CM_CMD_GET_OPTION, 0, 0, 8),
		     ENOSYS);
}

/* Runs @fn in a child and reports whether it returned 0. */
static void in_child(const char *name, int (*fn)(int), int arg)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(arg));
	waitpid(pid, &status, 0);
	ktap_result(WIFEXITED(status) && WEXITSTATUS(status) == 0, name, "child status %#x", status);
}

/* The opener's own credentials change (setresuid): its writes become EACCES. */
static int cred_change(int unused)
{
	int fd = ucma_dev_open();
	long r;

	(void)unused;
	errno = 0;
	r = write_cmd(fd, RDMA_USER_CM_CMD_GET_OPTION, 0, 0, 8);
	if (r != -1 || errno != ENOSYS)
		return 2;
	if (setresuid(65534, 65534, 65534))
		return 3;
	errno = 0;
	r = write_cmd(fd, RDMA_USER_CM_CMD_GET_OPTION, 0, 0, 8);
	return r == -1 && errno == EACCES ? 0 : 1;
}

/* An fd received over SCM_RIGHTS by a process of another user: EACCES. */
static int receive_as_other_user(int sock)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;
	long r;

	if (setresuid(65534, 65534, 65534))
		return 3;
	if (recvmsg(sock, &msg, 0) != 1)
		return 4;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return 5;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	errno = 0;
	r = write_cmd(fd, RDMA_USER_CM_CMD_CREATE_ID, 24, 4, 32);
	return r == -1 && errno == EACCES ? 0 : 1;
}

/*
 * Sends @fd to a child that takes another user's credentials and writes a
 * command to it; the child's exit status (0: EACCES, as it should), or -1
 * with @what set when the socket pair could not be made.
 */
static int pass_to_other_user(int fd, const char **what)
{
	char byte = 0, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int sv[2], status = 0;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		*what = strerror(errno);
		return -1;
	}
	pid = fork();
	if (pid == 0)
		_exit(receive_as_other_user(sv[1]));
	memset(cbuf, 0, sizeof(cbuf));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	sendmsg(sv[0], &msg, 0);
	waitpid(pid, &status, 0);
	close(sv[0]);
	close(sv[1]);
	return status;
}

static void test_passed_fd(int fd)
{
	const char *what = "";
	int status = pass_to_other_user(fd, &what);

	if (status < 0)
		ktap_result(0, "scm_rights_other_user_eacces", "socketpair: %s", what);
	else
		ktap_result(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			    "scm_rights_other_user_eacces", "child status %#x", status);
}

/*
 * The C module logs the credential check's EACCES once per module load
 * (pr_err_once): "ucma_write: process N (comm) changed security contexts
 * after opening file descriptor, this is not allowed." The groups above hit
 * it three times, and this one twice more itself (so that it holds when it
 * runs alone): the log since the module was loaded must have it once.
 */
static void test_eacces_logged_once(int fd)
{
	static const char *const msg[] = { "changed security contexts" };
	const char *what = "";
	int kfd = kmsg_open(0), n, i, status;

	if (kfd < 0) {
		ktap_result(0, "eacces_logs_once", "open /dev/kmsg: %s", strerror(errno));
		return;
	}
	for (i = 0; i < 2; i++) {
		status = pass_to_other_user(fd, &what);
		if (status) {
			close(kfd);
			ktap_result(0, "eacces_logs_once", "passing the file to another user: %s %#x",
				    what, status);
			return;
		}
	}
	n = kmsg_count(kfd, msg, 1, KMSG_MODULE_LOADED, 0);
	close(kfd);
	ktap_result(n == 1, "eacces_logs_once",
		    "the log since the module was loaded has %d \"changed security contexts\" lines, want 1",
		    n);
}

TEST_F(abi, node)
{
	ktap_header(2);
	test_node();
}

TEST_F(abi, framing)
{
	ktap_header(14);
	test_framing(self->fd);
}

TEST_F(abi, poll_idle)
{
	ktap_header(1);
	test_poll_idle(self->fd);
}

TEST_F(abi, foreign_creds)
{
	ktap_header(2);
	test_foreign_creds(self->fd);
}

TEST_F(abi, cred_change)
{
	ktap_header(1);
	in_child("cred_change_eacces", cred_change, 0);
}

TEST_F(abi, passed_fd)
{
	ktap_header(1);
	test_passed_fd(self->fd);
}

TEST_F(abi, eacces_logged_once)
{
	ktap_header(1);
	test_eacces_logged_once(self->fd);
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	return harness_main(argc, argv, 0, NULL);
}
