/* Debug builds may switch one protection off, to prove that a test notices
 * (tests/sandbox/layer_proof_test.ts; `deno task build:ffi --disable LAYER`). A release build
 * defines none of these. The library names what is off through coop_disabled_layers(), and
 * the loader refuses such a library unless COOP_ALLOW_DEBUG_LIBRARY=1. */
#ifndef COOP_LAYERS_H
#define COOP_LAYERS_H

/* The switches: COOP_DISABLE_SECCOMP, COOP_DISABLE_LANDLOCK, COOP_DISABLE_CAPABILITIES,
 * COOP_DISABLE_NO_NEW_PRIVS, COOP_DISABLE_NETNS, COOP_DISABLE_PIDNS, COOP_DISABLE_CLOSE_FDS.
 * The mount namespace and pivot_root have no switch: without them the setup itself fails
 * (there is no /work to enter), which is already fail-closed. */

#endif
