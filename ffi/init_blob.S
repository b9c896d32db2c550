/* The pid-1 init, embedded in the shared object so one file carries the whole sandbox
 * (and `deno compile` can carry that file). scripts/build_ffi.ts builds coop-init first. */
  .section .rodata
  .global coop_init_blob
  .global coop_init_blob_size
  .balign 16
coop_init_blob:
  .incbin "coop-init"
coop_init_blob_end:
  .balign 8
coop_init_blob_size:
  .quad coop_init_blob_end - coop_init_blob
  .section .note.GNU-stack,"",@progbits
