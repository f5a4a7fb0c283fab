// RC reliability: remote access errors, RNR, ACK timeout and retries, go-back-N, flush.
#include <doctest/doctest.h>

#include "tests/unit/nic/test_wire.h"

using namespace rdmasim;
using namespace rdmasim::nic;
using namespace rdmasim::nic::test;
