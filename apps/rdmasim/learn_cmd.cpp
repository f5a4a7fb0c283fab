// `rdmasim learn`: lists the lessons, or runs one and narrates it (lib/learn).
#include <unistd.h>

#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/rdmasim/commands.h"
#include "lib/learn/lesson.h"
#include "sim/topo/fabric.h"

namespace rdmasim::cli {

int run_learn(const LearnArgs& a) {
  if (a.lesson.empty()) {
    std::cout << "Lessons (run them in this order: rdmasim learn LESSON):\n";
    for (const learn::Lesson& l : learn::lessons()) {
      std::string fabrics;
      for (const auto& f : l.fabrics) fabrics += (fabrics.empty() ? "" : "|") + f;
      std::cout << "  " << l.name << std::string(l.name.size() < 11 ? 11 - l.name.size() : 1, ' ') << l.line
                << " [" << fabrics << "]\n";
    }
    return kExitOk;
  }
  const learn::Lesson* lesson = learn::find_lesson(a.lesson);
  if (!lesson) {
    std::cerr << "rdmasim learn: no lesson named " << a.lesson << " (rdmasim learn lists them)\n";
    return kExitUsage;
  }
  learn::LessonOptions o;
  o.fabric = a.fabric;
  o.size = a.size;
  o.out_dir = a.out.empty() ? "learn-" + lesson->name : a.out;
  if (!a.params.empty()) {
    std::string why;
    if (!load_json(a.params, &o.params, &why)) {
      std::cerr << "rdmasim learn: " << why << "\n";
      return kExitUsage;
    }
  }
  try {
    const learn::LessonOutput out = learn::run_lesson(*lesson, o);
    if (a.json) {
      std::cout << out.summary.dump(2) << "\n";
    } else {
      std::cout << out.story.render(isatty(STDOUT_FILENO) == 1);
      std::cout << "\nWritten: " << o.out_dir << "/lesson.html, " << o.out_dir << "/summary.json";
      for (const auto& c : out.captures) std::cout << ", " << c;
      std::cout << "\n";
    }
    return kExitOk;
  } catch (const learn::LessonError& e) {
    std::cerr << "rdmasim learn: " << e.what() << "\n";
    return kExitUsage;
  } catch (const topo::ConfigError& e) {
    for (const auto& line : e.errors()) std::cerr << "rdmasim learn: " << line << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "rdmasim learn: " << e.what() << "\n";
    return kExitFailed;
  }
}

}  // namespace rdmasim::cli
