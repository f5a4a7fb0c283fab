// rdma-core's IBVERBS_1.0 compat copies (the pre-1.1 struct layouts), the private helpers
// librdmacm still binds at 1.0, and ibv_register_driver@1.1. The 1.0 layouts are not
// emulated: those entry points report EOPNOTSUPP so an ancient binary fails loudly.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <fcntl.h>
#include <unistd.h>

namespace {
void* null_eopnotsupp() { errno = EOPNOTSUPP; return nullptr; }
int int_eopnotsupp() { errno = EOPNOTSUPP; return EOPNOTSUPP; }
}  // namespace

#define COMPAT_PTR(name)                                                        \
  extern "C" void* rdmasim_compat_##name() { return null_eopnotsupp(); }        \
  __asm__(".symver rdmasim_compat_" #name ", " #name "@IBVERBS_1.0");
#define COMPAT_INT(name)                                                        \
  extern "C" int rdmasim_compat_##name() { return int_eopnotsupp(); }           \
  __asm__(".symver rdmasim_compat_" #name ", " #name "@IBVERBS_1.0");
#define COMPAT_VOID(name)                                                       \
  extern "C" void rdmasim_compat_##name() {}                                    \
  __asm__(".symver rdmasim_compat_" #name ", " #name "@IBVERBS_1.0");

COMPAT_PTR(ibv_alloc_pd)
COMPAT_PTR(ibv_create_ah)
COMPAT_PTR(ibv_create_cq)
COMPAT_PTR(ibv_create_qp)
COMPAT_PTR(ibv_create_srq)
COMPAT_PTR(ibv_get_device_list)
COMPAT_PTR(ibv_get_device_name)
COMPAT_PTR(ibv_open_device)
COMPAT_PTR(ibv_reg_mr)
COMPAT_VOID(ibv_ack_async_event)
COMPAT_VOID(ibv_ack_cq_events)
COMPAT_VOID(ibv_free_device_list)
COMPAT_INT(ibv_attach_mcast)
COMPAT_INT(ibv_close_device)
COMPAT_INT(ibv_dealloc_pd)
COMPAT_INT(ibv_dereg_mr)
COMPAT_INT(ibv_destroy_ah)
COMPAT_INT(ibv_destroy_cq)
COMPAT_INT(ibv_destroy_qp)
COMPAT_INT(ibv_destroy_srq)
COMPAT_INT(ibv_detach_mcast)
COMPAT_INT(ibv_get_async_event)
COMPAT_INT(ibv_get_cq_event)
COMPAT_INT(ibv_get_device_guid)
COMPAT_INT(ibv_modify_qp)
COMPAT_INT(ibv_modify_srq)
COMPAT_INT(ibv_query_device)
COMPAT_INT(ibv_query_gid)
COMPAT_INT(ibv_query_pkey)
COMPAT_INT(ibv_query_port)
COMPAT_INT(ibv_query_qp)
COMPAT_INT(ibv_query_srq)
COMPAT_INT(ibv_resize_cq)

// Old driver registration (pre-34 providers): accepted and ignored, we load no providers.
extern "C" void rdmasim_compat_ibv_register_driver(const char*, void*) {}
__asm__(".symver rdmasim_compat_ibv_register_driver, ibv_register_driver@IBVERBS_1.1");

// Kernel-ABI struct conversions used by librdmacm's kernel path. There is no kernel ABI
// here; librdmacm only needs them to resolve.
extern "C" void ibv_copy_path_rec_from_kern(void*, const void*) {}
extern "C" void ibv_copy_path_rec_to_kern(void*, const void*) {}
extern "C" void ibv_copy_qp_attr_from_kern(void*, void*) {}
extern "C" void ibv_copy_ah_attr_from_kern(void*, void*) {}

// rdma-core 44 (libibverbs/sysfs.c): `const char *ibv_get_sysfs_path(void)`, the sysfs
// root — $SYSFS_PATH without trailing slashes when set, else "/sys". librdmacm passes the
// string on to ibv_read_sysfs_file. (An older prototype with a buffer was a crash: the
// caller passes no arguments.) The string lives as long as the process.
extern "C" const char* ibv_get_sysfs_path(void) {
  static const std::string path = [] {
    const char* env = getenv("SYSFS_PATH");
    std::string p = env && *env ? env : "/sys";
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
  }();
  return path.c_str();
}

// Returns the number of bytes read, or -1 with errno.
extern "C" int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  char path[4096];
  if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= static_cast<int>(sizeof(path))) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, size);
  close(fd);
  if (n < 0) return -1;
  if (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
  if (static_cast<size_t>(n) < size) buf[n] = '\0';
  return static_cast<int>(n);
}
