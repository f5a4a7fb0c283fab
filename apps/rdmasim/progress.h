// The progress line of long runs on stderr: rewritten in place ("\r" ... erase to the end
// of the line), only on a terminal, cleared when the run ends.
#pragma once

#include <string>

#include "lib/study/study.h"

namespace rdmasim::cli {

// "sim 1.25 ms of 100 ms | 2.41 M events/s | flows 12/128 | ~3 s left"; the time left is
// the elapsed wall time scaled by what remains of the larger of the payload delivered and
// the simulated time to the limit (either one ends the run).
std::string progress_text(const study::Progress& p);

// True when stderr is a terminal (and the user did not ask for --quiet).
bool progress_wanted(bool quiet);

// Prints `text` over the current stderr line; an empty text clears the line.
void progress_show(const std::string& text);

}  // namespace rdmasim::cli
