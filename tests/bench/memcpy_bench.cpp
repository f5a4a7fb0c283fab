// memcpy bandwidth of this machine: the ceiling for any simulated data movement, since
// every byte a simulated RDMA operation moves is copied at least once by the daemon.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>

int main(int argc, char** argv) {
  const size_t block = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 65536;
  const size_t total = size_t(8) << 30;  // bytes copied per run
  std::vector<char> src(block * 64, 1), dst(block * 64, 0);
  std::vector<double> gbps;
  for (int run = 0; run < 5; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t done = 0, i = 0; done < total; done += block, i = (i + 1) % 64)
      std::memcpy(dst.data() + i * block, src.data() + i * block, block);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gbps.push_back(total * 8 / s / 1e9);
  }
  std::sort(gbps.begin(), gbps.end());
  std::printf("memcpy: %zu B blocks (4 MiB working set): %.1f Gb/s (median of 5)\n", block, gbps[2]);
  return dst[block] == 1 ? 0 : 1;
}
