// The terminal side of a lesson: a story of headings, time-stamped steps and notes, printed
// plain (a file, a pipe) or with ANSI colour (a terminal).
#pragma once

#include <string>
#include <vector>

#include "sim/core/time.h"

namespace rdmasim::learn {

class Narration {
 public:
  void heading(const std::string& text) { lines_.push_back({Kind::Heading, -1, text}); }
  // A step at simulated time `t` (printed as microseconds with nanosecond digits).
  void step(Time t, const std::string& text) { lines_.push_back({Kind::Step, t, text}); }
  void note(const std::string& text) { lines_.push_back({Kind::Note, -1, text}); }
  // A figure the reader should remember (printed highlighted).
  void figure(const std::string& text) { lines_.push_back({Kind::Figure, -1, text}); }
  std::string render(bool colour) const;

 private:
  enum class Kind { Heading, Step, Note, Figure };
  struct Line {
    Kind kind;
    Time t;
    std::string text;
  };
  std::vector<Line> lines_;
};

}  // namespace rdmasim::learn
