/* cocecho -- plain C L2CAP LE credit-based channel echo and benchmark: the baseline the
 * Swift transport is measured against inside the BLE VM (scripts/ble-vm/run.sh).
 *
 *   cocecho server <hci> <psm>                 echo every packet back, one client at a time
 *   cocecho bench  <hci> <remote-hci> <psm> <rtt-count> <bulk-bytes>
 *       connects from hci<hci> to the server on hci<remote-hci>, then prints
 *       "cocecho: rtt ..." (round trips of one 64-byte packet) and
 *       "cocecho: bulk ..." (MTU-sized packets streamed and echoed back, payload each way)
 *   cocecho agent                              mgmt agent: accepts Just Works confirmations
 *
 * Static build: gcc -O2 -static -o cocecho cocecho.c (BlueZ headers only, no libbluetooth). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <time.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/l2cap.h>

static void die(const char *m) { printf("cocecho: %s: %s (errno %d)\n", m, strerror(errno), errno); fflush(stdout); exit(1); }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

static bdaddr_t dev_addr(int id) {
	struct hci_dev_info di; int s = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
	if (s < 0) die("socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)");
	memset(&di, 0, sizeof(di)); di.dev_id = id;
	if (ioctl(s, HCIGETDEVINFO, &di) < 0) die("HCIGETDEVINFO");
	close(s); return di.bdaddr;
}

static int le_socket(void) {
	int s = socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP);
	if (s < 0) die("socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)");
	return s;
}

static void bind_le(int s, bdaddr_t *a, unsigned psm) {
	struct sockaddr_l2 la; memset(&la, 0, sizeof(la));
	la.l2_family = AF_BLUETOOTH; la.l2_psm = htobs(psm); bacpy(&la.l2_bdaddr, a); la.l2_bdaddr_type = BDADDR_LE_PUBLIC;
	if (bind(s, (struct sockaddr *)&la, sizeof(la)) < 0) die("bind");
}

__attribute__((noreturn)) static void server(int hci, unsigned psm) {
	bdaddr_t A = dev_addr(hci);
	int ls = le_socket();
	bind_le(ls, &A, psm);
	if (listen(ls, 4) < 0) die("listen");
	printf("cocecho: server listening on hci%d psm 0x%04x\n", hci, psm); fflush(stdout);
	for (;;) {
		int s = accept(ls, NULL, NULL);
		if (s < 0) die("accept");
		static char buf[65536];
		for (;;) {
			ssize_t n = read(s, buf, sizeof(buf));
			if (n <= 0) break;
			if (write(s, buf, n) != n) break;
		}
		close(s);
	}
}

static int cmp_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct reader { int fd; long packets; long bytes; double *arrivals; };
static void *drain(void *p) {
	struct reader *r = p; static char buf[65536];
	long got = 0;
	while (got < r->packets) {
		ssize_t n = read(r->fd, buf, sizeof(buf));
		if (n <= 0) die("bulk read");
		r->arrivals[got] = now();
		r->bytes += n; got++;
	}
	return NULL;
}

/* The bulk run's idle gaps: echoes arriving more than 5 ms after the previous one (the
 * first counts from the start), and the time the writer spent blocked over 1 ms. */
static void bulk_trace(double start, const double *arrivals, long packets, double blocked) {
	double last = start, gaps = 0, longest = 0; long count = 0;
	for (long i = 0; i < packets; i++) {
		double gap = arrivals[i] - last; last = arrivals[i];
		if (gap > longest) longest = gap;
		if (gap > 0.005) { gaps += gap; count++; }
	}
	printf("cocecho: bulk-trace gaps_over_5ms=%ld gap_sum=%.1f ms longest_gap=%.1f ms writer_blocked=%.1f ms\n",
	       count, gaps * 1000, longest * 1000, blocked * 1000);
}

static int bench(int hci, int remote, unsigned psm, int rtts, long bulk) {
	bdaddr_t L = dev_addr(hci), R = dev_addr(remote);
	int s = le_socket();
	bind_le(s, &L, 0);
	struct sockaddr_l2 ra; memset(&ra, 0, sizeof(ra));
	ra.l2_family = AF_BLUETOOTH; ra.l2_psm = htobs(psm); bacpy(&ra.l2_bdaddr, &R); ra.l2_bdaddr_type = BDADDR_LE_PUBLIC;
	double t0 = now();
	if (connect(s, (struct sockaddr *)&ra, sizeof(ra)) < 0) die("connect");
	double tc = now() - t0;
	uint16_t smtu = 0, rmtu = 0; socklen_t ol = sizeof(smtu);
	getsockopt(s, SOL_BLUETOOTH, BT_SNDMTU, &smtu, &ol); ol = sizeof(rmtu);
	getsockopt(s, SOL_BLUETOOTH, BT_RCVMTU, &rmtu, &ol);
	printf("cocecho: connected in %.1f ms, sndmtu=%u rcvmtu=%u\n", tc * 1000, smtu, rmtu); fflush(stdout);
	char buf[65536]; memset(buf, 0xA5, sizeof(buf));
	double total = 0, best = 1e9;
	double *samples = calloc(rtts > 0 ? rtts : 1, sizeof(double));
	if (!samples) die("calloc");
	for (int i = 0; i < rtts; i++) {
		double a = now();
		if (write(s, buf, 64) != 64) die("rtt write");
		if (read(s, buf, sizeof(buf)) != 64) die("rtt read");
		double d = now() - a; total += d; if (d < best) best = d;
		samples[i] = d;
	}
	qsort(samples, rtts, sizeof(double), cmp_double);
	printf("cocecho: rtt count=%d size=64 mean=%.3f ms min=%.3f ms median=%.3f ms\n", rtts, total / rtts * 1000, best * 1000,
	       rtts > 0 ? samples[rtts / 2] * 1000 : 0);
	free(samples);
	long packets = (bulk + smtu - 1) / smtu;
	struct reader r = { s, packets, 0, calloc(packets > 0 ? packets : 1, sizeof(double)) };
	if (!r.arrivals) die("calloc");
	pthread_t th; double b0 = now(), blocked = 0;
	pthread_create(&th, NULL, drain, &r);
	for (long i = 0; i < packets; i++) {
		double w = now();
		if (write(s, buf, smtu) != smtu) die("bulk write");
		if (now() - w > 0.001) blocked += now() - w;
	}
	pthread_join(th, NULL);
	double bt = now() - b0;
	printf("cocecho: bulk bytes=%ld packets=%ld mtu=%u seconds=%.3f throughput=%.1f kB/s (echoed, payload each way)\n",
	       r.bytes, packets, smtu, bt, r.bytes / bt / 1000);
	bulk_trace(b0, r.arrivals, packets, blocked);
	free(r.arrivals);
	fflush(stdout);
	close(s);
	return 0;
}

/* Minimal mgmt agent: auto-accepts Just Works user-confirmation requests (what bluetoothd + an agent would do). */
__attribute__((noreturn)) static void agent(void) {
	int s = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
	if (s < 0) die("agent socket");
	struct sockaddr_hci a; memset(&a, 0, sizeof(a));
	a.hci_family = AF_BLUETOOTH; a.hci_dev = HCI_DEV_NONE; a.hci_channel = HCI_CHANNEL_CONTROL;
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0) die("agent bind HCI_CHANNEL_CONTROL");
	for (;;) {
		unsigned char buf[512]; ssize_t n = read(s, buf, sizeof(buf));
		if (n < 6) continue;
		unsigned op = buf[0] | buf[1] << 8, idx = buf[2] | buf[3] << 8;
		if (op == 0x000F) { /* MGMT_EV_USER_CONFIRM_REQUEST -> MGMT_OP_USER_CONFIRM_REPLY */
			unsigned char r[6 + 7];
			r[0] = 0x1C; r[1] = 0; r[2] = idx & 0xff; r[3] = idx >> 8; r[4] = 7; r[5] = 0;
			memcpy(r + 6, buf + 6, 7);
			if (write(s, r, sizeof(r)) < 0) perror("agent write");
			printf("cocecho-agent: hci%u pairing confirmed\n", idx); fflush(stdout);
		}
	}
}

int main(int argc, char **argv) {
	if (argc >= 2 && !strcmp(argv[1], "agent")) agent();
	if (argc >= 4 && !strcmp(argv[1], "server")) server(atoi(argv[2]), strtoul(argv[3], 0, 0));
	if (argc >= 7 && !strcmp(argv[1], "bench"))
		return bench(atoi(argv[2]), atoi(argv[3]), strtoul(argv[4], 0, 0), atoi(argv[5]), atol(argv[6]));
	fprintf(stderr, "usage: cocecho server HCI PSM | bench HCI REMOTE_HCI PSM RTTS BYTES | agent\n");
	return 2;
}
