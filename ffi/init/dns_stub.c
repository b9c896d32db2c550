/* The stub resolver of networks "proxy" and "public" (/etc/resolv.conf: nameserver
 * 127.0.0.1). It never talks to a DNS server: for each name it asks the policy proxy whether
 * the name may be reached at all (RESOLVE, which consults the allowlist and never resolves),
 * and answers
 *   - an allowed name: one A record from COOP_FAKE_NET (the same address for the same name,
 *     TTL 60 s), and no AAAA (IPv6 has no route here); the capture listener turns the address
 *     back into the name, and the proxy resolves the name itself when the command connects;
 *   - a name that is not allowed: NXDOMAIN, from here — no query leaves the host (ATTACKS N4);
 *   - anything it cannot parse: FORMERR; the proxy unreachable: SERVFAIL.
 * The last denied names are remembered, so a lookup's A and AAAA queries are one denial. */
#include "init.h"

#include <linux/errno.h>

#define DNS_MAX 512
#define DENIED_CACHE 32
#define TTL_SECONDS 60
enum { RCODE_OK = 0, RCODE_FORMERR = 1, RCODE_SERVFAIL = 2, RCODE_NXDOMAIN = 3, RCODE_NOTIMP = 4 };

static char denied[DENIED_CACHE][COOP_NAME_MAX];
static unsigned denied_next;

/* The query's name, lowercased and dotted, into `name`; returns the offset after it, or 0. */
static unsigned parse_name(const unsigned char *q, unsigned n, char *name) {
  unsigned pos = 12, len = 0;
  for (;;) {
    if (pos >= n) return 0;
    unsigned label = q[pos++];
    if (label == 0) break;
    if (label > 63 || pos + label > n || len + label + 1 >= COOP_NAME_MAX - 1) return 0;
    if (len) name[len++] = '.';
    for (unsigned i = 0; i < label; i++) {
      unsigned char c = q[pos++];
      if (c >= 'A' && c <= 'Z') c = (unsigned char)(c + 32);
      /* Host names only: nothing that could end the proxy's request line early. */
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return 0;
      name[len++] = (char)c;
    }
  }
  name[len] = 0;
  return len ? pos : 0;
}

static int find(char table[][COOP_NAME_MAX], unsigned count, const char *name) {
  for (unsigned i = 0; i < count; i++)
    if (table[i][0] && coop_streq(table[i], name)) return (int)i;
  return -1;
}

/* RCODE_OK (allowed), RCODE_NXDOMAIN or RCODE_SERVFAIL, as the policy proxy says. */
static int ask_proxy(const char *name, const char *auth) {
  char request[COOP_NAME_MAX + 512];
  unsigned long len = 0;
  const char *parts[] = {"RESOLVE ", name, " HTTP/1.1\r\nProxy-Authorization: ", auth, "\r\n\r\n"};
  for (unsigned i = 0; i < sizeof parts / sizeof parts[0]; i++)
    coop_append(request, &len, sizeof request, parts[i]);
  char head[1024];
  long up = coop_proxy_send(request);
  if (up < 0) return RCODE_SERVFAIL;
  int complete = coop_proxy_read_head(up, head, sizeof head) == 0;
  SYS1(__NR_close, up);
  if (!complete) return RCODE_SERVFAIL;
  if (coop_strneq(head, "HTTP/1.1 200 ", 13)) return RCODE_OK;
  if (coop_strneq(head, "HTTP/1.1 403 ", 13)) return RCODE_NXDOMAIN;
  return RCODE_SERVFAIL;
}

/* Looks the name up in the shared table, asking the proxy about names not yet in it. Returns
 * the rcode, and for RCODE_OK the slot. */
static int decide(const char *name, const char *auth, struct coop_fake_names *names, int *slot) {
  *slot = find(names->names, COOP_FAKE_NAMES, name);
  if (*slot >= 0) return RCODE_OK;
  if (find(denied, DENIED_CACHE, name) >= 0) return RCODE_NXDOMAIN;
  int rcode = ask_proxy(name, auth);
  if (rcode == RCODE_NXDOMAIN) {
    memcpy(denied[denied_next++ % DENIED_CACHE], name, COOP_NAME_MAX);
  } else if (rcode == RCODE_OK) {
    *slot = (int)(names->next++ % COOP_FAKE_NAMES);
    memcpy(names->names[*slot], name, COOP_NAME_MAX);
  }
  return rcode;
}

static unsigned put16(unsigned char *at, unsigned value) {
  at[0] = (unsigned char)(value >> 8), at[1] = (unsigned char)value;
  return 2;
}

void coop_dns_stub(int fd, const char *auth, struct coop_fake_names *names) {
  static unsigned char q[DNS_MAX], r[DNS_MAX + 16];
  char name[COOP_NAME_MAX];
  for (;;) {
    struct coop_sockaddr_in from;
    int from_len = sizeof from;
    long n = SYS6(__NR_recvfrom, fd, q, sizeof q, 0, &from, &from_len);
    if (n < 12 || (q[2] & 0x80)) continue; /* too short to answer, or not a query */
    unsigned opcode = (q[2] >> 3) & 0xf, qdcount = (unsigned)q[4] << 8 | q[5];
    unsigned end = opcode == 0 && qdcount == 1 ? parse_name(q, (unsigned)n, name) : 0;
    if (end && end + 4 > (unsigned)n) end = 0;
    unsigned qtype = end ? (unsigned)q[end] << 8 | q[end + 1] : 0;
    unsigned qclass = end ? (unsigned)q[end + 2] << 8 | q[end + 3] : 0;
    int rcode = opcode != 0 ? RCODE_NOTIMP : !end || qclass != 1 ? RCODE_FORMERR : RCODE_OK;
    int slot = -1;
    if (rcode == RCODE_OK) rcode = decide(name, auth, names, &slot);
    int answer = rcode == RCODE_OK && (qtype == 1 /* A */ || qtype == 255 /* ANY */);

    unsigned len = 0;
    r[len++] = q[0], r[len++] = q[1];                   /* id */
    r[len++] = (unsigned char)(0x84 | (q[2] & 0x01)); /* QR, AA, RD as asked */
    r[len++] = (unsigned char)(0x80 | rcode);          /* RA */
    len += put16(r + len, end ? 1 : 0);
    len += put16(r + len, answer ? 1 : 0);
    len += put16(r + len, 0);
    len += put16(r + len, 0);
    if (end) {
      memcpy(r + len, q + 12, end + 4 - 12); /* the question as asked */
      len += end + 4 - 12;
    }
    if (answer) {
      unsigned address = (unsigned)slot + 1;
      const unsigned char record[] = {0xc0, 12, 0, 1, 0, 1, 0, 0, 0, TTL_SECONDS, 0, 4,
                                      COOP_FAKE_NET_A, COOP_FAKE_NET_B,
                                      (unsigned char)(address >> 8), (unsigned char)address};
      memcpy(r + len, record, sizeof record);
      len += sizeof record;
    }
    SYS6(__NR_sendto, fd, r, len, 0, &from, from_len);
  }
}
