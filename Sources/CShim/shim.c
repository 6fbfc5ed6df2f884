// Most of the shim is static inline in include/cshim.h. What lives here needs
// _GNU_SOURCE, which is defined for this file (Package.swift) but not for the
// Swift importer's view of the system headers.
#include "cshim.h"

int cshim_unshare(int flags) { return unshare(flags); }
int cshim_setns(int fd, int nstype) { return setns(fd, nstype); }
int cshim_pipe2(int fds[2], int flags) { return pipe2(fds, flags); }
ssize_t cshim_splice(int from, int to, size_t length, unsigned int flags) { return splice(from, NULL, to, NULL, length, flags); }
const unsigned int cshim_SPLICE_F_MOVE = SPLICE_F_MOVE;
const unsigned int cshim_SPLICE_F_NONBLOCK = SPLICE_F_NONBLOCK;
int cshim_gettid(void) { return (int)gettid(); }
const int cshim_CLONE_NEWNET = CLONE_NEWNET;
int cshim_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) { return accept4(fd, address, length, flags); }
const int cshim_CLONE_NEWNS = CLONE_NEWNS;
// O_DIRECT is a GNU flag too: StagedFile writes capture files with it.
const int cshim_O_DIRECT = O_DIRECT;
int cshim_spawn_closefrom(posix_spawn_file_actions_t *actions, int from) { return posix_spawn_file_actions_addclosefrom_np(actions, from); }

_Static_assert(sizeof(struct cshim_mmsghdr) == sizeof(struct mmsghdr), "cshim_mmsghdr must match mmsghdr");
_Static_assert(__builtin_offsetof(struct cshim_mmsghdr, msg_len) == __builtin_offsetof(struct mmsghdr, msg_len), "msg_len offset");
int cshim_sendmmsg(int fd, struct cshim_mmsghdr *vector, unsigned int count, int flags) {
    return sendmmsg(fd, (struct mmsghdr *)vector, count, flags);
}
int cshim_recvmmsg(int fd, struct cshim_mmsghdr *vector, unsigned int count, int flags) {
    return recvmmsg(fd, (struct mmsghdr *)vector, count, flags, NULL);
}

// SCHED_IDLE is a GNU name too. The calling thread only (Linux schedules threads).
int cshim_sched_idle_current_thread(void) {
    struct sched_param param = { .sched_priority = 0 };
    return sched_setscheduler(0, SCHED_IDLE, &param);
}

// Descriptor passing (SCM_RIGHTS): the CMSG_* macros do not import into Swift.
// `sluice exec` without root gets its TUN and sock_diag socket this way from
// the helper that made them inside a user namespace.
int cshim_send_descriptors(int socket, const void *data, size_t length, const int *descriptors, int count) {
    if (count < 0 || count > CSHIM_MAXIMUM_PASSED_DESCRIPTORS) { errno = EINVAL; return -1; }
    struct iovec vector = { .iov_base = (void *)data, .iov_len = length };
    union { char buffer[CMSG_SPACE(sizeof(int) * CSHIM_MAXIMUM_PASSED_DESCRIPTORS)]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1 };
    if (count > 0) {
        message.msg_control = control.buffer;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
        memcpy(CMSG_DATA(header), descriptors, sizeof(int) * (size_t)count);
    }
    return (int)sendmsg(socket, &message, MSG_NOSIGNAL);
}

ssize_t cshim_receive_descriptors(int socket, void *data, size_t capacity, int *descriptors, int maximum, int *received) {
    *received = 0;
    struct iovec vector = { .iov_base = data, .iov_len = capacity };
    union { char buffer[CMSG_SPACE(sizeof(int) * CSHIM_MAXIMUM_PASSED_DESCRIPTORS)]; struct cmsghdr align; } control;
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof control.buffer };
    ssize_t n = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    if (n < 0) return n;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int count = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int passed[CSHIM_MAXIMUM_PASSED_DESCRIPTORS];
        if (count > CSHIM_MAXIMUM_PASSED_DESCRIPTORS) count = CSHIM_MAXIMUM_PASSED_DESCRIPTORS;
        memcpy(passed, CMSG_DATA(header), sizeof(int) * (size_t)count);
        for (int i = 0; i < count; i++) {
            // More than the caller takes: closed, never leaked.
            if (*received < maximum) descriptors[(*received)++] = passed[i]; else close(passed[i]);
        }
    }
    return n;
}

const int cshim_CLONE_NEWUSER = CLONE_NEWUSER;

// The user namespace that owns a namespace (NS_GET_USERNS, Linux 4.9): joining
// a user's own network namespace without root means joining its owner first.
#include <linux/nsfs.h>
int cshim_owning_user_namespace(int namespace_fd) { return ioctl(namespace_fd, NS_GET_USERNS); }

// The error queue (IP_RECVERR): MSG_ERRQUEUE never blocks, and reading an
// entry is what clears the socket's EPOLLERR.
#include <linux/errqueue.h>
const int cshim_SO_EE_ORIGIN_ICMP = SO_EE_ORIGIN_ICMP;
const int cshim_SO_EE_ORIGIN_ICMP6 = SO_EE_ORIGIN_ICMP6;
const int cshim_IP_RECVERR = IP_RECVERR;
const int cshim_IPV6_RECVERR = IPV6_RECVERR;
ssize_t cshim_receive_error(int fd, void *data, size_t capacity, struct cshim_queued_error *queued, struct sockaddr_storage *name) {
    memset(queued, 0, sizeof *queued);
    struct iovec vector = { .iov_base = data, .iov_len = capacity };
    union { char buffer[512]; struct cmsghdr align; } control;
    struct msghdr message = { .msg_name = name, .msg_namelen = sizeof *name, .msg_iov = &vector, .msg_iovlen = 1,
                              .msg_control = control.buffer, .msg_controllen = sizeof control.buffer };
    memset(name, 0, sizeof *name);
    ssize_t n = recvmsg(fd, &message, MSG_ERRQUEUE | MSG_DONTWAIT);
    if (n < 0) return n;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        int ours = (header->cmsg_level == IPPROTO_IP && header->cmsg_type == IP_RECVERR)
                || (header->cmsg_level == IPPROTO_IPV6 && header->cmsg_type == IPV6_RECVERR);
        if (!ours || header->cmsg_len < CMSG_LEN(sizeof(struct sock_extended_err))) continue;
        struct sock_extended_err extended;
        memcpy(&extended, CMSG_DATA(header), sizeof extended);
        queued->error = extended.ee_errno;
        queued->origin = extended.ee_origin;
        queued->type = extended.ee_type;
        queued->code = extended.ee_code;
        size_t room = header->cmsg_len - CMSG_LEN(sizeof extended);
        struct sockaddr *offender = SO_EE_OFFENDER((struct sock_extended_err *)CMSG_DATA(header));
        if (room >= sizeof(struct sockaddr_in6) && offender->sa_family == AF_INET6) {
            memcpy(&queued->offender, offender, sizeof(struct sockaddr_in6));
        } else if (room >= sizeof(struct sockaddr_in) && offender->sa_family == AF_INET) {
            memcpy(&queued->offender, offender, sizeof(struct sockaddr_in));
        }
    }
    return n;
}
