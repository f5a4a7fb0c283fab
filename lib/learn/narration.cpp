#include "lib/learn/narration.h"

#include <cstdio>

namespace rdmasim::learn {

std::string Narration::render(bool colour) const {
  const char* bold = colour ? "\033[1m" : "";
  const char* dim = colour ? "\033[36m" : "";
  const char* hi = colour ? "\033[1;33m" : "";
  const char* off = colour ? "\033[0m" : "";
  std::string o;
  for (const Line& l : lines_) {
    switch (l.kind) {
      case Kind::Heading: o += std::string(o.empty() ? "" : "\n") + bold + "== " + l.text + " ==" + off + "\n"; break;
      case Kind::Step: {
        char b[40];
        std::snprintf(b, sizeof b, "[%10.3f us] ", static_cast<double>(l.t) / 1e6);
        o += std::string(dim) + b + off + l.text + "\n";
        break;
      }
      case Kind::Note: o += "  " + l.text + "\n"; break;
      case Kind::Figure: o += std::string("  ") + hi + l.text + off + "\n"; break;
    }
  }
  return o;
}

}  // namespace rdmasim::learn
