/* The normal main() of an example built as a real process (for `rdmasim exec`, or a real
 * NIC): argv[0] becomes the host's name ($RDMASIM_HOST), as in a study, then rdmasim_main. */
#include <stdlib.h>

#include "rdmasim/oob.h"

int rdmasim_main(int argc, char **argv);

int main(int argc, char **argv) {
  char *host = getenv("RDMASIM_HOST");
  if (host && *host) argv[0] = host;
  return rdmasim_main(argc, argv);
}
