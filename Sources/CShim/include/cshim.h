// The one C shim. Swift's Glibc module hides or cannot import parts of the
// Linux API that Sluice needs; this header exposes them, with small inline
// wrappers where a macro or a variadic function stands in the way.
// Compiled with _GNU_SOURCE (see Package.swift).
#ifndef SLUICE_CSHIM_H
#define SLUICE_CSHIM_H

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <spawn.h>
#include <sched.h>
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/fib_rules.h>
#include <linux/filter.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>
#include <pcap/pcap.h>

// errno is a macro over a thread-local; Swift sees it through Glibc, but the
// Sys layer reads and clears it here so every errno access goes one way.
static inline int cshim_errno(void) { return errno; }
static inline void cshim_set_errno(int value) { errno = value; }

// ioctl is variadic, which Swift cannot call.
static inline int cshim_ioctl_ptr(int fd, unsigned long request, void *arg) {
    return ioctl(fd, request, arg);
}
static inline int cshim_ioctl_int(int fd, unsigned long request, int arg) {
    return ioctl(fd, request, arg);
}

// The TUN ioctl numbers are _IOW() expressions Swift cannot evaluate.
static const unsigned long cshim_TUNSETIFF = TUNSETIFF;
static const unsigned long cshim_TUNSETOFFLOAD = TUNSETOFFLOAD;
static const unsigned long cshim_TUNSETVNETHDRSZ = TUNSETVNETHDRSZ;
static const unsigned long cshim_TUNGETIFF = TUNGETIFF;
static const unsigned long cshim_TUNSETPERSIST = TUNSETPERSIST;
static const int cshim_IFF_TUN = IFF_TUN;
static const int cshim_IFF_NO_PI = IFF_NO_PI;
static const int cshim_IFF_MULTI_QUEUE = IFF_MULTI_QUEUE;
static const int cshim_IFF_VNET_HDR = IFF_VNET_HDR;
static const int cshim_TUN_F_CSUM = TUN_F_CSUM;
static const int cshim_TUN_F_TSO4 = TUN_F_TSO4;
static const int cshim_TUN_F_TSO6 = TUN_F_TSO6;

// fcntl is variadic too.
static inline int cshim_fcntl_getfl(int fd) { return fcntl(fd, F_GETFL); }
static inline int cshim_fcntl_setfl(int fd, int flags) { return fcntl(fd, F_SETFL, flags); }
static inline int cshim_open(const char *path, int flags) { return open(path, flags); }

// Fills an ifreq for TUNSETIFF. The name is copied with its bound.
static inline void cshim_ifreq_set(struct ifreq *req, const char *name, short flags) {
    memset(req, 0, sizeof(*req));
    strncpy(req->ifr_name, name, IFNAMSIZ - 1);
    req->ifr_flags = flags;
}
static inline const char *cshim_ifreq_name(const struct ifreq *req) { return req->ifr_name; }

// rtnetlink helpers: the NLMSG_* and RTA_* macros do pointer arithmetic on
// alignment that Swift cannot import.
static const int cshim_NLMSG_HDRLEN = NLMSG_HDRLEN;
static inline int cshim_nlmsg_align(int len) { return NLMSG_ALIGN(len); }
static inline int cshim_rta_align(int len) { return RTA_ALIGN(len); }
static inline int cshim_rta_length(int len) { return RTA_LENGTH(len); }

// SO_MARK for whole-host mode, so Sluice's own sockets bypass the TUN route.
static const int cshim_SO_MARK = SO_MARK;

// epoll_event is packed on x86_64 (12 bytes, the u64 token unaligned). These
// accessors let Swift read and write it without relying on how the importer
// lays out a packed struct.
static inline void cshim_epoll_event_set(struct epoll_event *event, uint32_t events, uint64_t token) {
    event->events = events;
    event->data.u64 = token;
}
static inline uint32_t cshim_epoll_event_events(const struct epoll_event *event) { return event->events; }
static inline uint64_t cshim_epoll_event_token(const struct epoll_event *event) { return event->data.u64; }

// TUNSETOFFLOAD takes its flags as an unsigned long by value.
static inline int cshim_ioctl_ulong(int fd, unsigned long request, unsigned long arg) {
    return ioctl(fd, request, arg);
}

// prctl is variadic: the one use, a signal when the parent dies.
#include <sys/prctl.h>
static inline int cshim_set_parent_death_signal(int signal) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0UL, 0UL, 0UL);
}

// getrandom(2): keys and TLS randoms (glibc declares it in <sys/random.h>).
#include <sys/random.h>
static inline long cshim_getrandom(void *buffer, unsigned long length) {
    return (long)getrandom(buffer, (size_t)length, 0);
}

// open with O_CREAT needs the variadic mode argument.
static inline int cshim_open_mode(const char *path, int flags, unsigned int mode) {
    return open(path, flags, (mode_t)mode);
}

// Namespaces. setns, unshare, gettid and the CLONE_NEW* flags are behind
// _GNU_SOURCE, which Swift's Glibc module is not built with, so they are
// defined out of line in shim.c (compiled with _GNU_SOURCE).
int cshim_unshare(int flags);
int cshim_setns(int fd, int nstype);
int cshim_gettid(void);
int cshim_sched_idle_current_thread(void);
int cshim_pipe2(int fds[2], int flags);
// splice(2) between a socket and a pipe, offsets unused (both are streams).
ssize_t cshim_splice(int from, int to, size_t length, unsigned int flags);
extern const unsigned int cshim_SPLICE_F_MOVE;
extern const unsigned int cshim_SPLICE_F_NONBLOCK;
int cshim_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
int cshim_spawn_closefrom(posix_spawn_file_actions_t *actions, int from);
extern const int cshim_CLONE_NEWNS;
extern const int cshim_CLONE_NEWNET;
extern const int cshim_CLONE_NEWUSER;
int cshim_owning_user_namespace(int namespace_fd);
#define CSHIM_MAXIMUM_PASSED_DESCRIPTORS 4
int cshim_send_descriptors(int socket, const void *data, size_t length, const int *descriptors, int count);
ssize_t cshim_receive_descriptors(int socket, void *data, size_t capacity, int *descriptors, int maximum, int *received);
extern const int cshim_O_DIRECT;

// pidfd_open has no glibc wrapper in Debian 12; a descriptor that becomes
// readable when the child exits lets the event loop wait for it in epoll.
static inline int cshim_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

// struct mmsghdr, sendmmsg and recvmmsg are GNU extensions the Swift
// importer cannot see (it reads the headers without _GNU_SOURCE). This
// struct has the same layout as glibc's mmsghdr; shim.c checks that.
struct cshim_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};
int cshim_sendmmsg(int fd, struct cshim_mmsghdr *vector, unsigned int count, int flags);
int cshim_recvmmsg(int fd, struct cshim_mmsghdr *vector, unsigned int count, int flags);

// One entry of a socket's error queue (IP_RECVERR, IPV6_RECVERR): the ICMP
// error a network sent about one of its datagrams. The cmsg walk and struct
// sock_extended_err do not import into Swift. `origin` is SO_EE_ORIGIN_*;
// `offender` is who sent the error (family 0 when unknown); `name` the
// datagram's destination; `data`, what the error quoted of its payload.
struct cshim_queued_error {
    unsigned int error;
    unsigned char origin, type, code;
    struct sockaddr_storage offender;
};
ssize_t cshim_receive_error(int fd, void *data, size_t capacity, struct cshim_queued_error *queued, struct sockaddr_storage *name);
extern const int cshim_SO_EE_ORIGIN_ICMP;
extern const int cshim_SO_EE_ORIGIN_ICMP6;
extern const int cshim_IP_RECVERR;
extern const int cshim_IPV6_RECVERR;

// stdout is a global Swift 6 will not touch from a nonisolated context.
static inline void cshim_line_buffer_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }
static inline void cshim_flush_all(void) { fflush(NULL); }

#endif
