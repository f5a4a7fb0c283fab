// `rdmasim learn`: lessons. Each lesson is a small scenario run in virtual time on the
// simulator's models, told three ways: a narration for the terminal, a self-contained page
// (lesson.html) and its figures (summary.json), plus the packet captures it made.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/learn/narration.h"

namespace rdmasim::learn {

// Bad input to a lesson (a fabric it does not run on, a size out of range, a bad
// parameter): the command line reports it as a usage error.
class LessonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LessonOptions {
  std::string fabric;          // "roce", "ib", "iwarp"; "" = the lesson's first
  uint64_t size = 0;           // bytes; 0 = the lesson's default
  std::string out_dir;         // where captures go (the page and summary are written by write_lesson)
  nlohmann::json params;       // lesson parameters (copies: the cost model), {} = defaults
};

struct LessonOutput {
  nlohmann::json summary;      // the lesson's figures, deterministic for given options
  std::string html;
  Narration story;
  std::vector<std::string> captures;   // files written into out_dir
};

struct Lesson {
  std::string name;
  std::string line;            // one line for the list
  std::vector<std::string> fabrics;   // link layers it runs on; the first is the default
  uint64_t default_size = 0;
  uint64_t min_size = 1, max_size = 1ull << 30;
  LessonOutput (*run)(const LessonOptions&);
};

// In the order a learner should take them.
const std::vector<Lesson>& lessons();
const Lesson* find_lesson(const std::string& name);

// Checks the options against the lesson (LessonError), fills in defaults, creates out_dir,
// runs it and writes out_dir/lesson.html and out_dir/summary.json.
LessonOutput run_lesson(const Lesson& lesson, LessonOptions options);

// The lessons (one file each).
LessonOutput lesson_pfc(const LessonOptions& o);
LessonOutput lesson_copies(const LessonOptions& o);
LessonOutput lesson_transports(const LessonOptions& o);
LessonOutput lesson_hello(const LessonOptions& o);

}  // namespace rdmasim::learn
