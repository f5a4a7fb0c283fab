// Loading users' programs for an in-process run. Every instance gets its own copy of the
// program's shared object (its own globals, its own static state), and every copy's
// libibverbs.so.1 is the drop-in library, loaded once into this process beforehand.
//
// Why copies and not dlmopen(LM_ID_NEWLM): glibc has 16 link-map namespaces (DL_NNS), the
// base one included, so at most 15 instances could run; a run has hundreds. A copy of the
// .so in a memfd, dlopen'ed RTLD_LOCAL as /proc/self/fd/N, is a distinct object to the
// dynamic linker (its own inode), so its data segment is its own; glibc never matches it to
// an earlier copy because the fd stays open (so its name stays unique) while it is loaded.
// All copies share one libc and one drop-in libibverbs.so.1 (and librdmacm.so.1): the
// libraries tell the instances apart by the fiber that calls them
// (lib/backend/inproc_backend.h).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace rdmasim::inproc {

using ProgramMain = int (*)(int argc, char** argv);

struct ProgramCopy {
  void* handle = nullptr;   // dlopen handle of this instance's copy
  int fd = -1;              // its memfd, open while loaded (keeps its name unique)
  ProgramMain main = nullptr;
};

class ProgramLoader {
 public:
  // `verbs_library`: the drop-in libibverbs.so.1 to load first (RTLD_GLOBAL), so that the
  // programs' NEEDED libibverbs.so.1 resolves to it by soname; `rdmacm_library` the same for
  // librdmacm.so.1 (a program that uses rdma_cm must get the drop-in, never the system's,
  // which would talk to the kernel).
  ProgramLoader(std::string verbs_library, std::string rdmacm_library)
      : verbs_path_(std::move(verbs_library)), rdmacm_path_(std::move(rdmacm_library)) {}
  ~ProgramLoader();
  ProgramLoader(const ProgramLoader&) = delete;
  ProgramLoader& operator=(const ProgramLoader&) = delete;

  // A fresh copy of `path` with its rdmasim_main. false with *why on failure (unreadable
  // file, dlopen's message, no rdmasim_main, the drop-in library cannot be loaded).
  bool load(const std::string& path, ProgramCopy* out, std::string* why);

 private:
  bool load_verbs(std::string* why);

  std::string verbs_path_, rdmacm_path_;
  void* verbs_ = nullptr;
  void* rdmacm_ = nullptr;
  std::string rdmacm_error_;   // why the drop-in librdmacm did not load (told if one is needed)
  std::map<std::string, std::vector<char>> images_;   // each program's bytes, read once
  std::vector<ProgramCopy> loaded_;
};

// The drop-in libibverbs.so.1 of this build (or $RDMASIM_VERBS_LIB when set).
std::string default_verbs_library();
// The drop-in librdmacm.so.1 of this build (or $RDMASIM_RDMACM_LIB when set).
std::string default_rdmacm_library();

}  // namespace rdmasim::inproc
