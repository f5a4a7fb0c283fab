// Sealed memfds carrying text: no size limit, and the reader sees a fixed snapshot.
#include "lib/daemon/sealed_text.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace rdmasim::daemon {
namespace {

constexpr int kSeals = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK;

}  // namespace

int make_sealed_text(const char* name, std::string_view text) {
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      close(fd);
      errno = e;
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  if (fcntl(fd, F_ADD_SEALS, kSeals | F_SEAL_SEAL) != 0) {
    const int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int read_sealed_text(int fd, std::string* out) {
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) return errno;
  if ((seals & kSeals) != kSeals) return EPERM;
  struct stat st{};
  if (fstat(fd, &st) != 0) return errno;
  out->assign(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < out->size()) {
    ssize_t n = pread(fd, out->data() + done, out->size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;  // shorter than fstat said: cannot happen with F_SEAL_SHRINK
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace rdmasim::daemon
