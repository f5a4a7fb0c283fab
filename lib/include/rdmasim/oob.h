/* rdmasim/oob.h: the out-of-band API of a verbs program run by rdmasim, in place of the TCP
 * exchange verbs tools do before they connect their queue pairs.
 *
 * In a study ("programs" in the study file) each instance of the program is one simulated
 * process on its own host, running `int rdmasim_main(int argc, char **argv)` in a fiber, in
 * virtual time; argv[0] is the host's name. The calls below then act in virtual time: a
 * get or a barrier that must wait lets the simulation run until it can return.
 * Under `rdmasim exec` (real processes through the daemon) the same calls go over TCP on
 * the loopback interface (examples/oob_tcp.c).
 *
 * Every call returns 0 on success or a positive errno value (rank and size excepted).
 */
#ifndef RDMASIM_OOB_H
#define RDMASIM_OOB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* This process's rank, 0 .. size - 1: instances in the order the study lists them. */
int rdmasim_rank(void);
/* How many processes the run has (every instance of every program). */
int rdmasim_size(void);
/* Publishes `len` bytes under `key` (at most 255 bytes); a key is written once
 * (EEXIST otherwise). EINVAL for a NULL or over-long key, or len > 65536. */
int rdmasim_oob_put(const char *key, const void *val, size_t len);
/* Waits until `key` exists, then copies it into `val`: EMSGSIZE (nothing copied) when its
 * value is not exactly `len` bytes. */
int rdmasim_oob_get(const char *key, void *val, size_t len);
/* Returns once every process of the run has called it (as often as this one). */
int rdmasim_oob_barrier(void);
/* Charges `ns` nanoseconds of computation: virtual time moves on by that much for this
 * process (in a real process: nothing). */
int rdmasim_compute(uint64_t ns);
/* The clock a program measures with: in a study, this process's virtual time in ns (it
 * moves only while the process waits, polls or computes); in a real process, CLOCK_MONOTONIC. */
uint64_t rdmasim_time_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* RDMASIM_OOB_H */
