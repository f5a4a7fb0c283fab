#!/usr/bin/env bash
# Packet capture decoded by tshark (exit 77 = skipped when tshark is missing).
#
# usage: pcap_check.sh RDMASIM PCAP_SAMPLE IB_CONFIG RUN_PAIR IWARP_CONFIG
# 1. pcap_sample writes one packet of each encoded kind (RoCEv2 and InfiniBand); tshark must
#    decode them without malformed/expert errors, with the opcodes, PSNs, QPs, ECN, PFC
#    quanta and IB credit values pcap_sample.cpp puts in (listed below from its table).
# 2. ibv_rc_pingpong runs through a daemon started with --pcap on the RoCE and IB fabrics.
#    Every file holds both directions of its port's link (configs/README.md, "Packet
#    capture"): each must decode with no malformed packet or expert warning and hold frames
#    from both hosts. In the client's port capture, the packets the client sent (IP source
#    127.0.1.2 on RoCE, LRH SLID 2 on IB) must show BTH dest QP = the server's QPN (printed
#    by pingpong) on every packet, and the client's request PSNs consecutive from its start PSN.
# 3. ibv_rc_pingpong on the iWARP fabric: every capture file alone (NIC and switch ports)
#    decodes as MPA Request, MPA Reply, then FPDUs (iwarp_mpa needs both start frames of a
#    stream, which only a file of both directions has) with good CRC32c, no malformed packets
#    or expert warnings, and the client's SENDs as RDMAP Send on DDP queue 0 with the MSNs,
#    MOs, L flags and TCP sequence numbers they must have.
set -u
rdmasim=$1; sample=$2; ib_cfg=$3; run_pair=$4; iwarp_cfg=$5
command -v tshark >/dev/null || { echo "tshark not installed: skipped"; exit 77; }
dir=$(mktemp -d /tmp/rdmasim-pcap.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
ts() { tshark -o ip.check_checksum:TRUE "$@" 2>/dev/null; }
expect() {  # expect WHAT GOT WANT
  if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got [$2], want [$3]"; fail=1; fi
}
no_errors() {  # no_errors FILE: no malformed packet, no expert info of warning or error level
  local n
  n=$(ts -r "$1" -Y '_ws.malformed || _ws.expert.severity >= "Warning"' | wc -l)
  expect "$(basename "$1"): malformed/expert errors" "$n" 0
  n=$(ts -r "$1" | wc -l)
  [ "$n" -gt 0 ] || { echo "FAIL: $1 is empty"; fail=1; }
}
fields() { local f=$1; shift; ts -r "$f" -T fields "$@" | tr '\n' ' ' | sed 's/ $//'; }
both_ways() {  # both_ways FILE FIELD WANT: FIELD (the sender) takes both hosts' values
  expect "$(basename "$1"): senders ($2)" "$(fields "$1" -Y "$2" -e "$2" | tr ' ' '\n' | sort -u | tr '\n' ' ' | sed 's/ $//')" "$3"
}

"$sample" "$dir" || { echo "pcap_sample failed"; exit 1; }
# pcap_sample.cpp kOpcodes, in decimal as tshark prints them, then the CNP (0x81 = 129).
ops="4 10 11 12 16 19 20 18 17 23 5 0 2 100 101 36"
psns="100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115"
r=$dir/roce.pcap
no_errors "$r"
expect "roce opcodes" "$(fields "$r" -Y infiniband.bth -e infiniband.bth.opcode)" "$ops 129"
expect "roce psns" "$(fields "$r" -Y 'infiniband.bth && !(infiniband.bth.opcode == 129)' -e infiniband.bth.psn)" "$psns"
expect "roce dest qps" "$(fields "$r" -Y infiniband.bth -e infiniband.bth.destqp | tr ' ' '\n' | sort -u)" "0x123456"
expect "udp dst port" "$(fields "$r" -Y udp -e udp.dstport | tr ' ' '\n' | sort -u)" "4791"
# checksum status: Wireshark's enum is 0 bad, 1 good, 2 unverified
expect "ip checksums" "$(fields "$r" -Y ip -e ip.checksum.status | tr ' ' '\n' | sort -u)" "1"
# ECN: CE (3) on packets i % 3 == 0, ECT(0) (2) otherwise, i = 0..16.
expect "ecn" "$(fields "$r" -Y ip -e ip.dsfield.ecn)" "3 2 2 3 2 2 3 2 2 3 2 2 3 2 2 3 2"
expect "dscp" "$(fields "$r" -Y ip -e ip.dsfield.dscp | tr ' ' '\n' | sort -u)" "26"
# priority i % 4: tagged with PCP when nonzero
expect "vlan pcp" "$(fields "$r" -Y vlan -e vlan.priority)" "1 2 3 1 2 3 1 2 3 1 2 3"
expect "reth" "$(fields "$r" -Y infiniband.reth -e infiniband.reth.r_key -e infiniband.reth.dmalen | tr '\t' ,)" "0x00000055,8 0x00000055,8 0x00000055,8"
expect "atomiceth" "$(fields "$r" -Y infiniband.atomiceth -e infiniband.atomiceth.swapdt -e infiniband.atomiceth.cmpdt | tr '\t' ,)" "5,9 5,9"
expect "atomicacketh" "$(fields "$r" -Y infiniband.atomicacketh -e infiniband.atomicacketh.origremdt)" "119"
expect "aeth msn" "$(fields "$r" -Y infiniband.aeth -e infiniband.aeth.msn)" "7 7 7"
expect "deth" "$(fields "$r" -Y infiniband.deth -e infiniband.deth.q_key -e infiniband.deth.srcqp | tr '\t' ,)" "0x0000000011111111,0x00000042 0x0000000011111111,0x00000042"
# ImmDt: WRITE only with imm (0x0b), SEND only with imm (0x05), UD SEND only with imm (0x65)
expect "immdt frames" "$(ts -r "$r" -Y infiniband.immdt | wc -l)" 3
expect "ieth frames" "$(ts -r "$r" -Y infiniband.ieth | wc -l)" 1
# CNP (IBTA annex A17: opcode 0x81, 16 reserved bytes): 14 Ethernet + 20 IPv4 + 8 UDP +
# 12 BTH + 16 + 4 ICRC = 74 bytes. Wireshark 4.0 names only opcode 0x80 "CNP" (IB's), so
# the check is on the opcode value, dest QP and length, not on the name.
expect "cnp opcode,qp,len" "$(fields "$r" -Y 'infiniband.bth.opcode == 129' -e infiniband.bth.destqp -e frame.len | tr '\t' ,)" "0x123456,74"
expect "pfc opcode, enable vector" "$(fields "$r" -Y macc -e macc.opcode -e macc.cbfc.enbv | tr '\t' ,)" "0x0101,0x0009"
expect "pfc quanta c0..c7" "$(fields "$r" -Y macc -e macc.cbfc.pause_time.c0 -e macc.cbfc.pause_time.c1 \
  -e macc.cbfc.pause_time.c2 -e macc.cbfc.pause_time.c3 -e macc.cbfc.pause_time.c4 -e macc.cbfc.pause_time.c5 \
  -e macc.cbfc.pause_time.c6 -e macc.cbfc.pause_time.c7 | tr '\t' ,)" "65535,0,0,4660,0,0,0,0"

b=$dir/ib.pcap
no_errors "$b"
expect "ib opcodes" "$(fields "$b" -Y infiniband.bth -e infiniband.bth.opcode)" "$ops"
expect "ib psns" "$(fields "$b" -Y infiniband.bth -e infiniband.bth.psn)" "$psns"
expect "ib dest qps" "$(fields "$b" -Y infiniband.bth -e infiniband.bth.destqp | tr ' ' '\n' | sort -u)" "0x123456"
expect "ib sl" "$(fields "$b" -Y infiniband.bth -e infiniband.lrh.sl)" "0 1 2 3 0 1 2 3 0 1 2 3 0 1 2 3"
expect "ib dlid/slid" "$(fields "$b" -Y infiniband.bth -e infiniband.lrh.dlid -e infiniband.lrh.slid | tr '\t' , | tr ' ' '\n' | sort -u)" "1,2"
expect "ib grh frames" "$(ts -r "$b" -Y infiniband.grh | wc -l)" 1
# SEND_ONLY, 13 payload bytes: (8 LRH + 12 BTH + 13 + 3 pad + 4 ICRC) / 4 = 10 words
expect "ib pktlen of a 13-byte send" "$(fields "$b" -Y 'infiniband.bth.opcode == 4' -e infiniband.lrh.pktlen)" "10"
expect "ib credit packet vl,fccl" "$(fields "$b" -Y infiniband_link -e infiniband_link.vl -e infiniband_link.fccl | tr '\t' ,)" "2,100"

# 2. Captures of a real run.
# The hosts' addresses: server 127.0.1.1 and client 127.0.1.2 (configs/default.json, ib.json,
# iwarp.json); on IB the subnet manager gives NIC i LID i + 1: server 1, client 2.
pingpong() {  # pingpong NAME CONFIG PORT SENDER_FIELD CLIENT_VALUE HOST_VALUES EXTRA...
  local name=$1 cfg=$2 port=$3 sender=$4 client_value=$5 hosts=$6; shift 6
  local pd=$dir/$name out
  out=$(RDMASIM_PCAP_DIR=$pd RDMASIM_TEST_TIMEOUT=60 "$run_pair" "$rdmasim" "$cfg" "$port" -- \
        ibv_rc_pingpong -d mlx5_0 -p "$port" -n 5 "$@" -- ibv_rc_pingpong -d mlx5_0 -p "$port" -n 5 "$@")
  [ $? = 0 ] || { echo "FAIL: $name pingpong"; echo "$out"; fail=1; return; }
  # The client's lines follow "== client"; "local address: ... QPN 0x.., PSN 0x.." then "remote".
  local client qpn_remote psn_local
  client=$(echo "$out" | sed -n '/^== client/,$p')
  qpn_remote=$(echo "$client" | grep 'remote address' | sed -E 's/.*QPN (0x[0-9a-f]+).*/\1/')
  psn_local=$(echo "$client" | grep 'local address' | sed -E 's/.*PSN (0x[0-9a-f]+).*/\1/')
  local f=$pd/client_mlx5_0.pcap from_client="$sender == $client_value"
  expect "$name: files (both ends of both links)" "$(cd "$pd" && ls | tr '\n' ' ' | sed 's/ $//')" \
    "client_mlx5_0.pcap server_mlx5_0.pcap sw0_port0.pcap sw0_port1.pcap"
  for p in "$pd"/*.pcap; do no_errors "$p"; both_ways "$p" "$sender" "$hosts"; done
  expect "$name: dest QP of every client packet = server QPN" \
    "$(fields "$f" -Y "infiniband.bth && $from_client" -e infiniband.bth.destqp | tr ' ' '\n' | sort -u)" "$qpn_remote"
  # Requests (SEND first/middle/last/only: opcodes 0..4): PSNs start at the client's PSN and
  # go up by one; 5 iterations of 4096 bytes at pingpong's default 1024-byte MTU = 20 packets.
  local got want="" i
  got=$(fields "$f" -Y "infiniband.bth.opcode <= 4 && $from_client" -e infiniband.bth.psn)
  for i in $(seq 0 19); do want+="$(( (psn_local + i) & 0xffffff )) "; done
  expect "$name: client request PSNs" "$got" "${want% }"
}
pingpong roce default 18793 ip.src 127.0.1.2 "127.0.1.1 127.0.1.2" -g 0
pingpong ib "$ib_cfg" 18794 infiniband.lrh.slid 2 "1 2"

# 3. iWARP. The server (127.0.1.1, the lower address) is the MPA initiator.
pd=$dir/iwarp
out=$(RDMASIM_PCAP_DIR=$pd RDMASIM_TEST_TIMEOUT=60 "$run_pair" "$rdmasim" "$iwarp_cfg" 18795 -- \
      ibv_rc_pingpong -d cxgb4_0 -p 18795 -n 5 -- ibv_rc_pingpong -d cxgb4_0 -p 18795 -n 5)
if [ $? != 0 ]; then echo "FAIL: iwarp pingpong"; echo "$out"; fail=1; exit $fail; fi
qpn_c=$(echo "$out" | sed -n '/^== client/,$p' | grep 'local address' | sed -E 's/.*QPN (0x[0-9a-f]+).*/\1/')
cport=$(( 49152 + qpn_c % 16384 ))  # sim/nic/iwarp.cpp port_of(): 49152 + QPN mod 16384
expect "iwarp: files (both ends of both links)" "$(cd "$pd" && ls | tr '\n' ' ' | sed 's/ $//')" \
  "client_cxgb4_0.pcap server_cxgb4_0.pcap sw0_port0.pcap sw0_port1.pcap"
# Every file alone, no merging: each holds both directions of its link.
for m in "$pd"/*.pcap; do
  no_errors "$m"
  both_ways "$m" ip.src "127.0.1.1 127.0.1.2"
  expect "$(basename "$m"): MPA Request is frame 1, the Reply frame 2" \
    "$(fields "$m" -Y iwarp_mpa.req -e frame.number),$(fields "$m" -Y iwarp_mpa.rep -e frame.number)" "1,2"
  expect "$(basename "$m"): MPA flags (markers off, CRC on), revision 1" \
    "$(fields "$m" -Y 'iwarp_mpa.req || iwarp_mpa.rep' -e iwarp_mpa.marker_flag -e iwarp_mpa.crc_flag -e iwarp_mpa.rev | tr '\t' ,)" "0,1,1 0,1,1"
  # pingpong: 5 SENDs of 4096 bytes each way; MSS 1448 (MTU 1500) gives FPDUs of at most
  # 1448 - 2 (length) - 18 (untagged DDP/RDMAP) - 4 (CRC) = 1424 payload bytes: 1424 + 1424 + 1248.
  expect "$(basename "$m"): FPDUs" "$(ts -r "$m" -Y iwarp_mpa.fpdu | wc -l)" 30
  expect "$(basename "$m"): bad CRCs" "$(ts -r "$m" -V -Y iwarp_mpa.fpdu | grep -c 'Bad CRC32')" 0
  expect "$(basename "$m"): good CRCs" "$(ts -r "$m" -V -Y iwarp_mpa.fpdu | grep -c 'Good CRC32')" 30
  c="ip.src == 127.0.1.2 && iwarp_mpa.fpdu"
  expect "$(basename "$m"): client FPDUs from its QP's port" "$(fields "$m" -Y "$c" -e tcp.srcport | tr ' ' '\n' | sort -u)" "$cport"
  expect "$(basename "$m"): client RDMAP opcodes (Send = 3)" "$(fields "$m" -Y "$c" -e iwarp_rdma.opcode | tr ' ' '\n' | sort -u)" "0x03"
  expect "$(basename "$m"): client DDP queue (0 = Send)" "$(fields "$m" -Y "$c" -e iwarp_ddp.qn | tr ' ' '\n' | sort -u)" "0"
  want_msn=""; want_mo=""; want_l=""
  for i in 1 2 3 4 5; do want_msn+="$i $i $i "; want_mo+="0 1424 2848 "; want_l+="0 0 1 "; done
  expect "$(basename "$m"): client MSNs (from 1, one per message)" "$(fields "$m" -Y "$c" -e iwarp_ddp.msn)" "${want_msn% }"
  expect "$(basename "$m"): client MOs" "$(fields "$m" -Y "$c" -e iwarp_ddp.mo)" "${want_mo% }"
  expect "$(basename "$m"): client DDP L flags" "$(fields "$m" -Y "$c" -e iwarp_ddp.last_flag | sed 's/True/1/g; s/False/0/g')" "${want_l% }"
  # The stream: the client's first FPDU follows its 20-byte MPA Reply; each next one follows the
  # one before (a byte stream, no retransmission on this lossless run).
  rep=$(fields "$m" -Y 'iwarp_mpa.rep' -e tcp.seq_raw)
  seqs=$(fields "$m" -Y "$c" -e tcp.seq_raw -e tcp.len | tr '\t' ,)
  prev_end=$(( (rep + 20) & 0xffffffff )); ok=1
  for sl in $seqs; do
    s=${sl%,*}; l=${sl#*,}
    [ "$s" = "$prev_end" ] || ok=0
    prev_end=$(( (s + l) & 0xffffffff ))
  done
  expect "$(basename "$m"): client TCP sequence numbers contiguous from the Reply" "$ok" 1
done
exit $fail
