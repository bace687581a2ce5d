#ifndef CBLUEZ_SHIM_H
#define CBLUEZ_SHIM_H
#include <sys/socket.h>
#include <sys/ioctl.h>
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

#endif
