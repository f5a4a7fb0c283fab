// The hardware backend: every exported call forwards to the real rdma-core libibverbs,
// loaded with dlmopen(LM_ID_NEWLM) so its providers bind to it and not to us.
#pragma once

#include <cerrno>
#include <type_traits>

namespace rdmasim::backend {

// True when RDMASIM_BACKEND=hardware (read once).
bool hardware_selected();
// The real library's symbol (default version), or nullptr when it could not be loaded.
void* hardware_sym(const char* name);

// What a forwarded call returns when the real library is missing.
template <typename R>
R hardware_unavailable() {
  errno = EOPNOTSUPP;
  if constexpr (std::is_void_v<R>) return;
  else if constexpr (std::is_pointer_v<R>) return nullptr;
  else return static_cast<R>(EOPNOTSUPP);
}

}  // namespace rdmasim::backend

// Forwards the enclosing exported function `fn` to the real library in hardware mode.
#define RDMASIM_HW_FORWARD(fn, ...)                                                       \
  do {                                                                                    \
    if (::rdmasim::backend::hardware_selected()) {                                        \
      using Fn = decltype(&fn);                                                           \
      static Fn real = reinterpret_cast<Fn>(::rdmasim::backend::hardware_sym(#fn));       \
      using R = decltype(real(__VA_ARGS__));                                              \
      if (!real) return ::rdmasim::backend::hardware_unavailable<R>();                    \
      return real(__VA_ARGS__);                                                           \
    }                                                                                     \
  } while (0)
