/* ibv_get_sysfs_path as rdma-core 44 declares it (libibverbs/driver.h: `const char
 * *ibv_get_sysfs_path(void)`) and as Debian's librdmacm calls it from
 * rdma_create_event_channel (cma.c: ibv_read_sysfs_file(ibv_get_sysfs_path(), ...)).
 * usage: sysfs_path EXPECTED_ROOT [DEBIAN_LIBRDMACM]
 * With a librdmacm path, that library's rdma_create_event_channel is called too: with no
 * /dev/infiniband/rdma_cm it must fail with errno set (cma.c: ENODEV, or the open's
 * errno), never crash. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *ibv_get_sysfs_path(void);

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *p = ibv_get_sysfs_path();
  if (!p || strcmp(p, argv[1]) != 0) {
    printf("FAIL: ibv_get_sysfs_path() = %s, want %s\n", p ? p : "(null)", argv[1]);
    return 1;
  }
  if (ibv_get_sysfs_path() != p) {
    printf("FAIL: the returned string moved between calls\n");
    return 1;
  }
  printf("ok: ibv_get_sysfs_path() = %s\n", p);
  if (argc < 3) return 0;
  void *cm = dlopen(argv[2], RTLD_NOW);
  if (!cm) {
    printf("FAIL: dlopen %s: %s\n", argv[2], dlerror());
    return 1;
  }
  void *(*create)(void) = (void *(*)(void))dlsym(cm, "rdma_create_event_channel");
  if (!create) return 1;
  errno = 0;
  void *ch = create();
  if (ch || errno == 0) {
    printf("FAIL: rdma_create_event_channel = %p errno %d, want NULL with errno (no rdma_cm device)\n", ch, errno);
    return 1;
  }
  printf("ok: Debian librdmacm rdma_create_event_channel fails with %s, no crash\n", strerror(errno));
  return 0;
}
