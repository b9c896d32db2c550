/* Transparent capture (network "proxy" and "public"): every TCP connection the command opens,
 * to any address and port, ends at the capture listener inside the sandbox, which hands it to
 * the policy proxy (captured.c); nothing else leaves loopback.
 *
 * The namespace still has no interface but lo, so nothing here can open a route out: at worst
 * a packet loops on lo and dies. What this adds, as root of the sandbox's own user and network
 * namespace (before the capabilities are dropped), is
 *   - a default route via lo (from 127.0.0.1), so that connect() to a public address gets as
 *     far as netfilter instead of failing with ENETUNREACH;
 *   - an nf_tables table, written over netlink (there is no nft program to call, and no libc):
 *       chain capture { type nat hook output priority -100;
 *                       ip daddr 127.0.0.1 tcp dport { 3128, 3129 } accept
 *                       meta l4proto tcp redirect to :3129 }
 *       chain refuse  { type filter hook output priority 0;
 *                       ip daddr != 127.0.0.0/8 drop }
 *     A redirected connection is at 127.0.0.1 by the time the filter sees it (nat runs
 *     first); whatever else leaves for a non-loopback address (UDP, ICMP, TCP the redirect
 *     missed) is dropped in the output hook, which sendto() reports as EPERM. IPv6 has no
 *     route at all (ENETUNREACH).
 * The listener finds the original destination with SO_ORIGINAL_DST (conntrack).
 *
 * The command cannot undo any of it: it has no CAP_NET_ADMIN and no way to regain one
 * (process.c), so the kernel refuses its route and nf_tables messages (ATTACKS N18). */
#include "init.h"

#include <linux/errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#define COOP_AF_NETLINK 16
#define COOP_SOCK_RAW 3
#define COOP_SOCK_CLOEXEC 02000000
#define COOP_AF_INET 2
#define COOP_LOOPBACK_IFINDEX 1 /* lo is always interface 1 in a new namespace */

/* A netlink message under construction: headers and attributes, 4-byte aligned. */
struct nl_buf {
  unsigned char data[2048];
  unsigned len;
  unsigned seq;
};

static void *nl_put(struct nl_buf *b, const void *bytes, unsigned n) {
  unsigned aligned = (n + 3) & ~3u;
  if (b->len + aligned > sizeof b->data) coop_fail(COOP_STEP_CAPTURE, E2BIG);
  unsigned char *at = b->data + b->len;
  memset(at, 0, aligned);
  if (bytes) memcpy(at, bytes, n);
  b->len += aligned;
  return at;
}

static unsigned nl_msg(struct nl_buf *b, unsigned short type, unsigned short flags,
                       unsigned char family, unsigned short res_id) {
  unsigned at = b->len;
  struct nlmsghdr h = {0, type, (unsigned short)(NLM_F_REQUEST | flags), ++b->seq, 0};
  nl_put(b, &h, sizeof h);
  /* struct nfgenmsg; res_id is big-endian */
  unsigned char gen[4] = {family, NFNETLINK_V0, (unsigned char)(res_id >> 8),
                          (unsigned char)(res_id & 0xff)};
  nl_put(b, gen, sizeof gen);
  return at;
}

static void nl_end(struct nl_buf *b, unsigned at) {
  ((struct nlmsghdr *)(b->data + at))->nlmsg_len = b->len - at;
}

static void nl_attr(struct nl_buf *b, unsigned short type, const void *v, unsigned n) {
  struct nlattr a = {(unsigned short)(sizeof a + n), type};
  nl_put(b, &a, sizeof a);
  nl_put(b, v, n);
}

static void nl_str(struct nl_buf *b, unsigned short type, const char *s) {
  nl_attr(b, type, s, (unsigned)coop_strlen(s) + 1);
}

static unsigned be32(unsigned v) {
  return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
}

static void nl_u32(struct nl_buf *b, unsigned short type, unsigned v) {
  unsigned value = be32(v);
  nl_attr(b, type, &value, 4);
}

static unsigned nl_nest(struct nl_buf *b, unsigned short type) {
  unsigned at = b->len;
  struct nlattr a = {0, (unsigned short)(type | NLA_F_NESTED)};
  nl_put(b, &a, sizeof a);
  return at;
}

static void nl_nest_end(struct nl_buf *b, unsigned at) {
  ((struct nlattr *)(b->data + at))->nla_len = (unsigned short)(b->len - at);
}

/* Sends the messages in b and waits for one acknowledgement per message that asked for one;
 * the first error fails the step with the kernel's errno. */
static void nl_talk(long fd, struct nl_buf *b, int acks) {
  struct {
    unsigned short family, pad;
    unsigned pid, groups;
  } kernel = {COOP_AF_NETLINK, 0, 0, 0};
  coop_check(COOP_STEP_CAPTURE, SYS6(__NR_sendto, fd, b->data, b->len, 0, &kernel, sizeof kernel));
  unsigned char reply[4096] __attribute__((aligned(4)));
  while (acks > 0) {
    long n = SYS6(__NR_recvfrom, fd, reply, sizeof reply, 0, 0, 0);
    if (n == -EINTR) continue;
    coop_check(COOP_STEP_CAPTURE, n);
    for (long off = 0; off + (long)sizeof(struct nlmsghdr) <= n;) {
      struct nlmsghdr *h = (struct nlmsghdr *)(reply + off);
      if (h->nlmsg_len < sizeof *h) coop_fail(COOP_STEP_CAPTURE, EPROTO);
      if (h->nlmsg_type == NLMSG_ERROR) {
        int error = ((struct nlmsgerr *)(h + 1))->error;
        if (error) coop_fail(COOP_STEP_CAPTURE, -error);
        acks--;
      }
      off += (h->nlmsg_len + 3) & ~3u;
    }
  }
}

static long netlink_socket(int protocol) {
  return coop_check(COOP_STEP_CAPTURE, SYS3(__NR_socket, COOP_AF_NETLINK,
                                            COOP_SOCK_RAW | COOP_SOCK_CLOEXEC, protocol));
}

/* ip route add default dev lo src 127.0.0.1 */
static void default_route_via_lo(void) {
  long fd = netlink_socket(NETLINK_ROUTE);
  struct nl_buf b = {.len = 0};
  unsigned at = b.len;
  struct nlmsghdr h = {0, RTM_NEWROUTE,
                       NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, 1, 0};
  nl_put(&b, &h, sizeof h);
  struct rtmsg rt = {.rtm_family = COOP_AF_INET,
                     .rtm_table = RT_TABLE_MAIN,
                     .rtm_protocol = RTPROT_BOOT,
                     .rtm_scope = RT_SCOPE_LINK,
                     .rtm_type = RTN_UNICAST};
  nl_put(&b, &rt, sizeof rt);
  unsigned lo = COOP_LOOPBACK_IFINDEX;
  nl_attr(&b, RTA_OIF, &lo, sizeof lo);
  /* Without a source, the kernel finds no address of link scope on lo (127.0.0.1 is host
   * scope) and sends from 0.0.0.0 — which conntrack cannot match with the replies. */
  const unsigned char source[4] = {127, 0, 0, 1};
  nl_attr(&b, RTA_PREFSRC, source, sizeof source);
  nl_end(&b, at);
  nl_talk(fd, &b, 1);
  SYS1(__NR_close, fd);
}

/* One expression of a rule: LIST_ELEM { NAME, DATA { … } }; returns DATA's offset. */
static unsigned expr_begin(struct nl_buf *b, const char *name, unsigned *elem) {
  *elem = nl_nest(b, NFTA_LIST_ELEM);
  nl_str(b, NFTA_EXPR_NAME, name);
  return nl_nest(b, NFTA_EXPR_DATA);
}

static void expr_end(struct nl_buf *b, unsigned data, unsigned elem) {
  nl_nest_end(b, data);
  nl_nest_end(b, elem);
}

/* cmp: register 1 <op> the n bytes at value */
static void expr_cmp(struct nl_buf *b, unsigned op, const void *value, unsigned n) {
  unsigned elem, data = expr_begin(b, "cmp", &elem);
  nl_u32(b, NFTA_CMP_SREG, NFT_REG_1);
  nl_u32(b, NFTA_CMP_OP, op);
  unsigned v = nl_nest(b, NFTA_CMP_DATA);
  nl_attr(b, NFTA_DATA_VALUE, value, n);
  nl_nest_end(b, v);
  expr_end(b, data, elem);
}

/* payload: n bytes at offset of a header into register 1 */
static void expr_payload(struct nl_buf *b, unsigned base, unsigned offset, unsigned n) {
  unsigned elem, data = expr_begin(b, "payload", &elem);
  nl_u32(b, NFTA_PAYLOAD_DREG, NFT_REG_1);
  nl_u32(b, NFTA_PAYLOAD_BASE, base);
  nl_u32(b, NFTA_PAYLOAD_OFFSET, offset);
  nl_u32(b, NFTA_PAYLOAD_LEN, n);
  expr_end(b, data, elem);
}

/* meta l4proto == tcp */
static void expr_tcp(struct nl_buf *b) {
  unsigned elem, data = expr_begin(b, "meta", &elem);
  nl_u32(b, NFTA_META_DREG, NFT_REG_1);
  nl_u32(b, NFTA_META_KEY, NFT_META_L4PROTO);
  expr_end(b, data, elem);
  const unsigned char tcp = 6; /* IPPROTO_TCP */
  expr_cmp(b, NFT_CMP_EQ, &tcp, 1);
}

/* A verdict: accept or drop. */
static void expr_verdict(struct nl_buf *b, unsigned code) {
  unsigned elem, data = expr_begin(b, "immediate", &elem);
  nl_u32(b, NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
  unsigned value = nl_nest(b, NFTA_IMMEDIATE_DATA);
  unsigned verdict = nl_nest(b, NFTA_DATA_VERDICT);
  nl_u32(b, NFTA_VERDICT_CODE, code);
  nl_nest_end(b, verdict);
  nl_nest_end(b, value);
  expr_end(b, data, elem);
}

static void add_chain(struct nl_buf *b, const char *name, const char *type, int priority) {
  unsigned m = nl_msg(b, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWCHAIN,
                      NLM_F_CREATE | NLM_F_ACK, NFPROTO_IPV4, 0);
  nl_str(b, NFTA_CHAIN_TABLE, "coop");
  nl_str(b, NFTA_CHAIN_NAME, name);
  unsigned hook = nl_nest(b, NFTA_CHAIN_HOOK);
  nl_u32(b, NFTA_HOOK_HOOKNUM, NF_INET_LOCAL_OUT);
  nl_u32(b, NFTA_HOOK_PRIORITY, (unsigned)priority);
  nl_nest_end(b, hook);
  nl_str(b, NFTA_CHAIN_TYPE, type);
  nl_end(b, m);
}

static unsigned rule_begin(struct nl_buf *b, const char *chain, unsigned *exprs) {
  unsigned m = nl_msg(b, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWRULE,
                      NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK, NFPROTO_IPV4, 0);
  nl_str(b, NFTA_RULE_TABLE, "coop");
  nl_str(b, NFTA_RULE_CHAIN, chain);
  *exprs = nl_nest(b, NFTA_RULE_EXPRESSIONS);
  return m;
}

static void rule_end(struct nl_buf *b, unsigned m, unsigned exprs) {
  nl_nest_end(b, exprs);
  nl_end(b, m);
}

static void capture_tables(void) {
  long fd = netlink_socket(NETLINK_NETFILTER);
  static struct nl_buf b;
  b.len = 0;
  /* A batch, so that the table appears whole or not at all. */
  unsigned m = nl_msg(&b, NFNL_MSG_BATCH_BEGIN, 0, 0, NFNL_SUBSYS_NFTABLES);
  nl_end(&b, m);

  m = nl_msg(&b, (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_ACK,
             NFPROTO_IPV4, 0);
  nl_str(&b, NFTA_TABLE_NAME, "coop");
  nl_end(&b, m);
  add_chain(&b, "capture", "nat", -100);
  add_chain(&b, "refuse", "filter", 0);
  const unsigned char loopback[4] = {127, 0, 0, 1}, first_octet = 127;

  /* capture: tcp ip daddr 127.0.0.1 tcp dport { COOP_PROXY_PORT, COOP_CAPTURE_PORT } accept —
   * the init's own listeners are reached as they are (an accept in a nat chain: no NAT). */
  unsigned exprs;
  const unsigned ports[] = {COOP_PROXY_PORT, COOP_CAPTURE_PORT};
  for (unsigned i = 0; i < 2; i++) {
    m = rule_begin(&b, "capture", &exprs);
    expr_tcp(&b);
    expr_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 16, 4);
    expr_cmp(&b, NFT_CMP_EQ, loopback, 4);
    expr_payload(&b, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2);
    const unsigned char port[2] = {(unsigned char)(ports[i] >> 8), (unsigned char)ports[i]};
    expr_cmp(&b, NFT_CMP_EQ, port, 2);
    expr_verdict(&b, NF_ACCEPT);
    rule_end(&b, m, exprs);
  }

  /* capture: meta l4proto tcp redirect to :COOP_CAPTURE_PORT — every other TCP connection,
   * loopback included: nothing else listens inside (Landlock refuses bind), and an owner's
   * IP-literal entry such as 127.0.0.1:11434 names the host's loopback, which only the proxy
   * can reach. */
  m = rule_begin(&b, "capture", &exprs);
  expr_tcp(&b);
  unsigned elem, data = expr_begin(&b, "immediate", &elem);
  nl_u32(&b, NFTA_IMMEDIATE_DREG, NFT_REG_1);
  unsigned value = nl_nest(&b, NFTA_IMMEDIATE_DATA);
  const unsigned char capture_port[2] = {COOP_CAPTURE_PORT >> 8, COOP_CAPTURE_PORT & 0xff};
  nl_attr(&b, NFTA_DATA_VALUE, capture_port, 2);
  nl_nest_end(&b, value);
  expr_end(&b, data, elem);
  data = expr_begin(&b, "redir", &elem);
  nl_u32(&b, NFTA_REDIR_REG_PROTO_MIN, NFT_REG_1);
  expr_end(&b, data, elem);
  rule_end(&b, m, exprs);

  /* refuse: ip daddr != 127.0.0.0/8 drop */
  m = rule_begin(&b, "refuse", &exprs);
  expr_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 16, 1);
  expr_cmp(&b, NFT_CMP_NEQ, &first_octet, 1);
  expr_verdict(&b, NF_DROP);
  rule_end(&b, m, exprs);

  m = nl_msg(&b, NFNL_MSG_BATCH_END, 0, 0, NFNL_SUBSYS_NFTABLES);
  nl_end(&b, m);
  nl_talk(fd, &b, 7); /* table, two chains, four rules */
  SYS1(__NR_close, fd);
}

void coop_setup_capture(void) {
  default_route_via_lo();
  capture_tables();
}
