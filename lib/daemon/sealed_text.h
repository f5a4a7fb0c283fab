// Text of any length passed with a reply as a sealed memfd (the Counters reply's JSON).
#pragma once

#include <string>
#include <string_view>

namespace rdmasim::daemon {

// A memfd holding exactly `text`, sealed against writes, growth and shrinking (so the
// receiver can trust its size and contents); -1 with errno set on failure. The caller
// owns the fd.
int make_sealed_text(const char* name, std::string_view text);

// Reads a whole memfd made by make_sealed_text into *out. Returns 0, or a positive errno:
// EPERM when the fd is not sealed that way (its sender could still change it), or what
// fstat/pread failed with. Does not close `fd`.
int read_sealed_text(int fd, std::string* out);

}  // namespace rdmasim::daemon
