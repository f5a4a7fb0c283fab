// Data the globals check must flag and must not flag (each marked); compiled
// only for tests/layers' negative case, never linked into sim/.
#include <array>
#include <cstdint>
#include <string>

namespace fixture {

int counter = 1;                                    // flagged: .data
static int hidden;                                  // flagged: .bss
thread_local int per_thread;                        // flagged: .tbss

int next() {
  static int n = 0;                                 // flagged: a function-local static
  return ++n + hidden++ + per_thread;
}

constexpr std::array<uint8_t, 4> kTable = {1, 2, 3, 4};  // not flagged: .rodata
const char* const kNames[] = {"a", "b"};            // not flagged: .data.rel.ro
extern const int kExported;
const int kExported = 7;                            // not flagged: .rodata

const std::string& name() {
  static const std::string s = "x";                 // flagged: const but dynamically built
  return s;
}

int use() { return kTable[1] + kNames[0][0] + kExported + static_cast<int>(name().size()); }

}  // namespace fixture
