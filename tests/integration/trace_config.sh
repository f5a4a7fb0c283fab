#!/usr/bin/env bash
# Capture asked for by the config (exit 77 = skipped when tshark is missing).
#
# usage: trace_config.sh RDMASIM RUN_PAIR DEFAULT_CONFIG (configs/default.json)
# A daemon started from a config whose "trace" key names a pcap directory (no --pcap)
# captures the ports that key selects (configs/README.md, "Packet capture"): an
# ibv_rc_pingpong pair runs through it, once with "ports": "hosts" and once with the
# default ("all"). The files named after the ports must appear, and only those; tshark must
# decode them as RoCEv2 (UDP 4791, BTH) with no malformed packet or expert warning, each
# holding both directions of its port's link (frames from both hosts); the client's 20
# requests (below) must be in its NIC's file and, with the same PSNs, in the file of the
# switch port toward the server.
set -u
rdmasim=$1; run_pair=$2; default_cfg=$3
command -v tshark >/dev/null || { echo "tshark not installed: skipped"; exit 77; }
dir=$(mktemp -d /tmp/rdmasim-trace.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
ts() { tshark "$@" 2>/dev/null; }
expect() {  # expect WHAT GOT WANT
  if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got [$2], want [$3]"; fail=1; fi
}
fields() { local f=$1; shift; ts -r "$f" -T fields "$@" | tr '\n' ' ' | sed 's/ $//'; }

# configs/default.json (hosts server 127.0.1.1 and client 127.0.1.2 on sw0, link order
# server then client, so switch port 0 sends toward the server) plus a "trace" object.
write_config() {  # write_config FILE TRACE_JSON
  python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["trace"] = json.loads(sys.argv[3]); json.dump(c, open(sys.argv[2], "w"), indent=1)' \
    "$default_cfg" "$1" "$2"
}

run() {  # run NAME PORT TRACE_JSON EXPECTED_FILES
  local name=$1 port=$2 pd=$dir/$1/pcap cfg=$dir/$1.json out
  mkdir -p "$dir/$name"
  write_config "$cfg" "${3//@DIR@/$pd}"
  out=$(RDMASIM_TEST_TIMEOUT=60 "$run_pair" "$rdmasim" "$cfg" "$port" -- \
        ibv_rc_pingpong -d mlx5_0 -g 0 -p "$port" -n 5 -- ibv_rc_pingpong -d mlx5_0 -g 0 -p "$port" -n 5)
  [ $? = 0 ] || { echo "FAIL: $name: pingpong"; echo "$out"; fail=1; return; }
  # The directory did not exist: the daemon created it (configs/README.md: "created if missing").
  expect "$name: files in pcap_dir" "$(cd "$pd" 2>/dev/null && ls | tr '\n' ' ' | sed 's/ $//')" "$4"
  local f n
  for f in "$pd"/*.pcap; do
    [ -f "$f" ] || continue
    n=$(ts -r "$f" -Y '_ws.malformed || _ws.expert.severity >= "Warning"' | wc -l)
    expect "$name: $(basename "$f"): malformed/expert errors" "$n" 0
    n=$(ts -r "$f" -Y infiniband.bth | wc -l)
    [ "$n" -gt 0 ] || { echo "FAIL: $name: $(basename "$f"): no BTH decoded"; fail=1; }
    expect "$name: $(basename "$f"): every frame is RoCEv2 (UDP 4791, BTH)" \
      "$(ts -r "$f" -Y '!(udp.dstport == 4791 && infiniband.bth)' | wc -l)" 0
    expect "$name: $(basename "$f"): both directions (IP sources)" \
      "$(fields "$f" -e ip.src | tr ' ' '\n' | sort -u | tr '\n' ' ' | sed 's/ $//')" "127.0.1.1 127.0.1.2"
  done
  # Client requests (SEND first..only, opcodes 0..4, from the client's address; the file
  # also holds the server's): 5 iterations of 4096 bytes at pingpong's default 1024-byte
  # path MTU = 5 x 4 = 20 packets.
  local c=$pd/client_mlx5_0.pcap
  local psns
  psns=$(fields "$c" -Y 'infiniband.bth.opcode <= 4 && ip.src == 127.0.1.2' -e infiniband.bth.psn)
  expect "$name: client requests in client_mlx5_0.pcap" "$(echo "$psns" | wc -w)" 20
  if [ -f "$pd/sw0_port0.pcap" ]; then
    expect "$name: the same requests leave sw0 port 0 toward the server" \
      "$(fields "$pd/sw0_port0.pcap" -Y 'infiniband.bth.opcode <= 4 && ip.src == 127.0.1.2' -e infiniband.bth.psn)" "$psns"
  fi
}

run hosts 18796 '{"pcap_dir": "@DIR@", "ports": "hosts"}' "client_mlx5_0.pcap server_mlx5_0.pcap"
run all 18797 '{"pcap_dir": "@DIR@"}' "client_mlx5_0.pcap server_mlx5_0.pcap sw0_port0.pcap sw0_port1.pcap"
exit $fail
