#ifndef CBLUEZ_SHIM_H
#define CBLUEZ_SHIM_H
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <errno.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/l2cap.h>

/* Macros Swift cannot import, as functions. */

/* Host to Bluetooth (little-endian) byte order, 16 bits. */
static inline uint16_t cbluez_htobs(uint16_t value) { return htobs(value); }

/* Bluetooth (little-endian) to host byte order, 16 bits. */
static inline uint16_t cbluez_btohs(uint16_t value) { return btohs(value); }

/* The "any adapter" address, 00:00:00:00:00:00. */
static inline bdaddr_t cbluez_bdaddr_any(void) { bdaddr_t any = {{0, 0, 0, 0, 0, 0}}; return any; }

/* Copies a device address. */
static inline void cbluez_bacpy(bdaddr_t *dst, const bdaddr_t *src) { bacpy(dst, src); }

/* Bytes a Bluetooth socket still holds for sending (queued for credits or the
 * controller), from TIOCOUTQ, which Bluetooth sockets answer with the free send-buffer
 * space. -1 on error. */
static inline int cbluez_unsent_bytes(int fd) {
    int free_space = 0, sndbuf = 0;
    socklen_t length = sizeof(sndbuf);
    if (ioctl(fd, TIOCOUTQ, &free_space) < 0) return -1;
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &length) < 0) return -1;
    return sndbuf > free_space ? sndbuf - free_space : 0;
}

/* epoll for the transport's reactor (FDReactor), without the packed struct epoll_event
 * in Swift. Readiness flags: 1 readable, 2 writable, 4 error or hang-up. */

/* A new epoll instance (close-on-exec), or -1. */
static inline int cbluez_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

/* Arms fd for one event (EPOLLONESHOT) of `flags` (1 readable, 2 writable), adding it
 * to the set when it is not there yet. 0, or -1 with errno set. */
static inline int cbluez_epoll_arm(int epfd, int fd, int flags) {
    struct epoll_event event;
    event.events = EPOLLONESHOT | ((flags & 1) ? EPOLLIN : 0) | ((flags & 2) ? EPOLLOUT : 0);
    event.data.u64 = 0;
    event.data.fd = fd;
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event) == 0) return 0;
    if (errno != ENOENT) return -1;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) == 0) return 0;
    if (errno != EEXIST) return -1;
    return epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event);
}

/* Removes fd from the set (errors ignored: it may not be there). */
static inline void cbluez_epoll_remove(int epfd, int fd) {
    struct epoll_event unused;
    (void)epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &unused);
}

/* Waits up to `timeout_ms` (-1: no limit) for up to `max` ready descriptors; fills
 * fds[i] and flags[i] (1 readable, 2 writable, 4 error or hang-up). The count (0 on
 * timeout), or -1 with errno set. */
static inline int cbluez_epoll_wait(int epfd, int *fds, int *flags, int max, int timeout_ms) {
    struct epoll_event events[64];
    if (max > 64) max = 64;
    int count = epoll_wait(epfd, events, max, timeout_ms);
    for (int i = 0; i < count; i++) {
        uint32_t e = events[i].events;
        fds[i] = events[i].data.fd;
        flags[i] = ((e & EPOLLIN) ? 1 : 0) | ((e & EPOLLOUT) ? 2 : 0) | ((e & (EPOLLERR | EPOLLHUP)) ? 4 : 0);
    }
    return count;
}

/* The reactor's wake-up counter: an eventfd (non-blocking, close-on-exec) in the epoll
 * set, level-triggered for reading, so a write ends the reactor's epoll_wait. The
 * descriptor, or -1 with errno set. */
static inline int cbluez_wakeup_create(int epfd) {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) return -1;
    struct epoll_event event;
    event.events = EPOLLIN;
    event.data.u64 = 0;
    event.data.fd = fd;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) < 0) { close(fd); return -1; }
    return fd;
}

/* Wakes the reactor (adds one to the counter). */
static inline void cbluez_wakeup_signal(int fd) { (void)eventfd_write(fd, 1); }

/* Resets the counter after a wake-up. */
static inline void cbluez_wakeup_clear(int fd) { eventfd_t value; (void)eventfd_read(fd, &value); }

#endif
