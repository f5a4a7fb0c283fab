// Program copies in memfds, dlopen'ed one per instance.
#include "lib/inproc/loader.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#ifndef RDMASIM_VERBS_LIB
#define RDMASIM_VERBS_LIB "libibverbs.so.1"
#endif
#ifndef RDMASIM_RDMACM_LIB
#define RDMASIM_RDMACM_LIB "librdmacm.so.1"
#endif

namespace rdmasim::inproc {

std::string default_verbs_library() {
  if (const char* p = getenv("RDMASIM_VERBS_LIB"); p && *p) return p;
  return RDMASIM_VERBS_LIB;
}

std::string default_rdmacm_library() {
  if (const char* p = getenv("RDMASIM_RDMACM_LIB"); p && *p) return p;
  return RDMASIM_RDMACM_LIB;
}

ProgramLoader::~ProgramLoader() {
  // The copies stay mapped: a killed instance may have left handlers (atexit) in them, and
  // unloading runs those. Their fds are closed with the process.
}

bool ProgramLoader::load_verbs(std::string* why) {
  if (verbs_) return true;
  verbs_ = dlopen(verbs_path_.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!verbs_) {
    *why = "cannot load the drop-in libibverbs (" + verbs_path_ + "): " + dlerror();
    return false;
  }
  // Whatever asks for libibverbs.so.1 by name must now get this one.
  void* by_name = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (by_name) dlclose(by_name);
  if (by_name != verbs_) {
    *why = "another libibverbs.so.1 is already loaded in this process";
    return false;
  }
  // The drop-in librdmacm (it needs the drop-in libibverbs, loaded above). Programs that
  // do not use rdma_cm run without it, so a failure is only reported for one that does.
  rdmacm_ = dlopen(rdmacm_path_.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!rdmacm_) rdmacm_error_ = dlerror();
  return true;
}

bool ProgramLoader::load(const std::string& path, ProgramCopy* out, std::string* why) {
  if (!load_verbs(why)) return false;
  auto it = images_.find(path);
  if (it == images_.end()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      *why = "cannot read " + path + ": " + strerror(errno);
      return false;
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    it = images_.emplace(path, std::move(bytes)).first;
  }
  const std::vector<char>& img = it->second;
  int fd = memfd_create("rdmasim-program", MFD_CLOEXEC);
  if (fd < 0) {
    *why = std::string("memfd_create: ") + strerror(errno);
    return false;
  }
  for (size_t off = 0; off < img.size();) {
    ssize_t n = write(fd, img.data() + off, img.size() - off);
    if (n <= 0) {
      *why = std::string("writing the copy of ") + path + ": " + strerror(errno);
      close(fd);
      return false;
    }
    off += static_cast<size_t>(n);
  }
  const std::string name = "/proc/self/fd/" + std::to_string(fd);
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    *why = path + ": " + dlerror();
    close(fd);
    return false;
  }
  // Whichever librdmacm.so.1 the copy pulled in must be the drop-in one.
  if (void* cm = dlopen("librdmacm.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(cm);
    if (cm != rdmacm_) {
      *why = path + " uses librdmacm.so.1 but the drop-in one (" + rdmacm_path_ +
             ") could not be loaded" + (rdmacm_error_.empty() ? "" : ": " + rdmacm_error_);
      dlclose(h);
      close(fd);
      return false;
    }
  }
  auto main = reinterpret_cast<ProgramMain>(dlsym(h, "rdmasim_main"));
  if (!main) {
    *why = path + ": no rdmasim_main (a program exports int rdmasim_main(int, char **))";
    dlclose(h);
    close(fd);
    return false;
  }
  *out = {h, fd, main};
  loaded_.push_back(*out);
  return true;
}

}  // namespace rdmasim::inproc
