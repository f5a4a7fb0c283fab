// The list of lessons and the one way to run one: check, run, write the page and figures.
#include "lib/learn/lesson.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace rdmasim::learn {

const std::vector<Lesson>& lessons() {
  static const std::vector<Lesson> kLessons = {
      {"hello", "one RDMA READ step by step: doorbell, WQE fetch, wire, switch, remote DMA, CQE, poll",
       {"roce", "ib", "iwarp"}, 4096, 1, 65536, lesson_hello},
      {"copies", "the same transfer by RDMA WRITE and through kernel TCP sockets: copies, system calls, CPU time",
       {"roce", "ib"}, 1 << 20, 1, 64 << 20, lesson_copies},
      {"transports", "InfiniBand, RoCEv2 and iWARP side by side: headers, goodput vs size, latency, 1 % loss",
       {"roce", "ib", "iwarp"}, 65536, 64, 16 << 20, lesson_transports},
      {"pfc", "an 8:1 incast three times: lossy, PFC (pauses, a victim flow's head-of-line blocking), PFC+ECN+DCQCN",
       {"roce"}, 1 << 20, 64 * 1024, 16 << 20, lesson_pfc},
  };
  return kLessons;
}

const Lesson* find_lesson(const std::string& name) {
  for (const Lesson& l : lessons())
    if (l.name == name) return &l;
  return nullptr;
}

namespace {

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

}  // namespace

LessonOutput run_lesson(const Lesson& lesson, LessonOptions o) {
  if (o.fabric.empty()) o.fabric = lesson.fabrics.front();
  if (std::find(lesson.fabrics.begin(), lesson.fabrics.end(), o.fabric) == lesson.fabrics.end()) {
    std::string names;
    for (const auto& f : lesson.fabrics) names += (names.empty() ? "" : ", ") + f;
    throw LessonError("lesson " + lesson.name + " runs on " + names + ", not " + o.fabric);
  }
  if (o.size == 0) o.size = lesson.default_size;
  if (o.size < lesson.min_size || o.size > lesson.max_size)
    throw LessonError("--size " + std::to_string(o.size) + " is outside " + std::to_string(lesson.min_size) +
                      ".." + std::to_string(lesson.max_size) + " bytes for lesson " + lesson.name);
  if (o.out_dir.empty()) o.out_dir = "learn-" + lesson.name;
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) throw std::runtime_error("cannot create " + o.out_dir + ": " + ec.message());
  LessonOutput out = lesson.run(o);
  write_file(std::filesystem::path(o.out_dir) / "lesson.html", out.html);
  write_file(std::filesystem::path(o.out_dir) / "summary.json", out.summary.dump(2) + "\n");
  return out;
}

}  // namespace rdmasim::learn
