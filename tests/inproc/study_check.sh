#!/bin/bash
# Runs verbs programs in studies (lib/inproc) and checks what the study reports.
# usage: study_check.sh RDMASIM OPS_SO MISBEHAVE_SO CASE WORKDIR
#   ops2 / ops64: verbs_ops.so on 2 hosts (default fabric) / 64 hosts of a k=8 fat tree,
#                 every operation; every check "ok", none "FAIL"; exit 0; run twice, the
#                 outputs byte-identical (the summary's wall time aside, which is stdout only)
#   exit3, segv, overflow, hang_poll, hang_oob: one instance misbehaves on host "client", one
#                 returns 0 on "server"; exit 1 and a FAILED line naming the host and why
#   fibers1024:   misbehave.so "ring" 8 times on each of the 128 hosts of a k=8 fat tree
#   hugepages:    misbehave.so "tunables" prints the study's GLIBC_TUNABLES: glibc.malloc.hugetlb=1
#                 added when the kernel has transparent huge pages (apps/rdmasim/huge_pages.h),
#                 the user's own choice kept, nothing with RDMASIM_HUGE_PAGES=0
set -u
rdmasim=$1 ops=$2 mis=$3 case=$4 work=$5
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

fat_tree='{"name": "ft8", "link_layer": "roce", "topology": {"type": "fat_tree", "k": 8},
           "link": {"rate_gbps": 100, "latency_ns": 1000}, "mtu": 4096}'

run() {  # run STUDY OUT: the study's exit status in $status, stdout in OUT.stdout
  timeout 120 "$rdmasim" study "$1" --out "$2" > "$2.stdout" 2>&1
  status=$?
  [ $status -ne 124 ] || fail "study $1 did not end within 120 s"
}

case $case in
  ops2|ops64)
    if [ "$case" = ops2 ]; then
      fabric='"fabric": {"name": "pair", "hosts": [{"name": "server", "ip": "127.0.1.1", "nics": [{"name": "mlx5_0"}]}, {"name": "client", "ip": "127.0.1.2", "nics": [{"name": "mlx5_0"}]}], "switches": [{"name": "sw0"}], "links": [{"a": "server/mlx5_0", "b": "sw0", "rate_gbps": 100, "latency_ns": 400}, {"a": "client/mlx5_0", "b": "sw0", "rate_gbps": 100, "latency_ns": 400}]}'
      hosts='"all"'; n=2
    else
      fabric="\"fabric\": $fat_tree"
      hosts=$(seq 1 64 | sed 's/.*/"host&"/' | paste -sd, | sed 's/.*/[&]/'); n=64
    fi
    cat > "$work/study.json" <<JSON
{"name": "$case", $fabric, "time_limit_us": 10000,
 "programs": [{"path": "$ops", "hosts": $hosts, "args": ["all"]}]}
JSON
    for r in 1 2; do
      run "$work/study.json" "$work/out$r"
      [ $status -eq 0 ] || { cat "$work/out$r.stdout"; fail "run $r exited $status"; }
    done
    log=$work/out1/programs.log
    ! grep -q FAIL "$log" || { grep FAIL "$log"; fail "a check failed"; }
    # Per pair (verbs_ops.c): write 2, read 1, send 2, atomic 3, ud 2, channel 2, resize 1,
    # dm 2 checks.
    want=$(( n / 2 * 15 ))
    got=$(grep -c '\] ok ' "$log")
    [ "$got" -eq "$want" ] || fail "$got ok checks, expected $want (15 per pair of $n hosts)"
    [ "$(grep -c '\] 0 failures$' "$log")" -eq "$n" ] || fail "not every instance reported 0 failures"
    grep -q "programs: $n instances, $n returned 0, 0 failed" "$work/out1.stdout" || fail "summary"
    for f in programs.log programs.json counters.json flows.json; do
      cmp -s "$work/out1/$f" "$work/out2/$f" || fail "$f differs between two runs"
    done
    echo "ok: $n hosts, $got checks, two runs identical"
    ;;
  exit3|segv|overflow|hang_poll|hang_oob)
    cat > "$work/study.json" <<JSON
{"name": "$case", "time_limit_us": 1000,
 "programs": [{"path": "$mis", "hosts": ["client"], "args": ["$case"]},
              {"path": "$mis", "hosts": ["server"], "args": ["ok"]}]}
JSON
    run "$work/study.json" "$work/out"
    cat "$work/out.stdout"
    [ $status -eq 1 ] || fail "exit status $status, expected 1"
    case $case in
      exit3) why='exit 3' ;;
      segv) why='crashed: SIGSEGV at address 0x0' ;;
      overflow) why='crashed: stack overflow \(SIGSEGV in the guard page below its 1024 KiB stack\)' ;;
      hang_poll) why='did not finish: time limit reached while it waits in a poll of an empty CQ' ;;
      hang_oob) why='did not finish: nothing left to happen while it waits in rdmasim_oob_get' ;;
    esac
    grep -Eq "^FAILED program .*misbehave.so on client \(rank 0\): $why\$" "$work/out.stdout" ||
      fail "no FAILED line naming client with: $why"
    [ "$(grep -c '^FAILED' "$work/out.stdout")" -eq 1 ] || fail "the server's instance failed too"
    grep -q '"host": "server"' "$work/out/programs.json" || fail "programs.json"
    echo "ok: $case reported for host client"
    ;;
  fibers1024)
    progs=$(for i in 1 2 3 4 5 6 7 8; do echo "{\"path\": \"$mis\", \"hosts\": \"all\", \"args\": [\"ring\"]}"; done | paste -sd,)
    cat > "$work/study.json" <<JSON
{"name": "fibers1024", "fabric": $fat_tree, "time_limit_us": 1000, "programs": [$progs]}
JSON
    run "$work/study.json" "$work/out"
    [ $status -eq 0 ] || { tail "$work/out.stdout"; fail "exit status $status"; }
    grep -q 'programs: 1024 instances, 1024 returned 0, 0 failed' "$work/out.stdout" || fail "summary"
    # rank r read (r + 1) % 1024: the reads are a permutation of 0..1023.
    [ "$(grep -o 'read [0-9]*$' "$work/out/programs.log" | sort -u | wc -l)" -eq 1024 ] || fail "reads"
    # The barrier releases everyone once the last rank has computed 1023 ns: all print then.
    [ "$(grep -c '^\[0.000001023 host[0-9]*\] read ' "$work/out/programs.log")" -eq 1024 ] ||
      fail "not every line at 1.023 us"
    echo "ok: 1024 fibers"
    ;;
  hugepages)
    cat > "$work/study.json" <<JSON
{"name": "hugepages", "time_limit_us": 1000,
 "programs": [{"path": "$mis", "hosts": ["client"], "args": ["tunables"]}]}
JSON
    mode=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
    expect() {  # expect WHAT ENV...: the program printed GLIBC_TUNABLES=WHAT
      env -u GLIBC_TUNABLES -u RDMASIM_HUGE_PAGES "${@:2}" "$rdmasim" study "$work/study.json" \
        --out "$work/out" > "$work/out.stdout" 2>&1 || { cat "$work/out.stdout"; fail "study exited $?"; }
      grep -qxF "[0.000000000 client] GLIBC_TUNABLES=$1" "$work/out/programs.log" ||
        { cat "$work/out/programs.log"; fail "${*:2}: expected GLIBC_TUNABLES=$1"; }
      echo "ok: ${*:2}: GLIBC_TUNABLES=$1"
    }
    if [ "$mode" = always ] || [ "$mode" = madvise ]; then
      expect glibc.malloc.hugetlb=1
      expect glibc.malloc.tcache_count=7:glibc.malloc.hugetlb=1 GLIBC_TUNABLES=glibc.malloc.tcache_count=7
    else
      expect "(unset)"  # the kernel has none to give ("$mode")
    fi
    expect glibc.malloc.hugetlb=0 GLIBC_TUNABLES=glibc.malloc.hugetlb=0
    expect "(unset)" RDMASIM_HUGE_PAGES=0
    ;;
  *) fail "unknown case $case" ;;
esac
