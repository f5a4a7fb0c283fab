#!/usr/bin/env bash
# The rdma_cm connection of an iWARP rping in captures, decoded by tshark (exit 77: no tshark).
# rping -C 2 on configs/iwarp.json through a daemon capturing every port. Each capture file
# holds both directions of its port's link, so each one alone (the two NICs' and the two
# switch ports') must show, with no malformed packet or expert warning:
#  - the TCP three-way handshake first: SYN from the client (127.0.1.2) to rping's port 7174,
#    SYN-ACK from the server acknowledging the SYN's sequence number + 1 (RFC 793 3.3);
#  - then the MPA Request (client) and Reply (server) of RFC 5044 7.1: markers off, CRC on,
#    revision 1, no R bit; the Request at the SYN's sequence number + 1 and the Reply at the
#    SYN-ACK's + 1 (a SYN takes one sequence number);
#  - then FPDUs whose DDP/RDMAP tshark decodes (rping: Sends, opcode 3, and RDMA Reads and
#    Writes), all with good CRC32c, on the same ports as the handshake;
#  - the streams continue the handshake's: the client's first FPDU at the Request's sequence
#    number + its length (20 bytes: key 16, flags, revision, private data length 2; rping
#    sends no private data), the server's first at the Reply's + 20;
#  - the close: a FIN each way.
# usage: rdmacm_capture_iwarp.sh RDMASIM PAIR_SCRIPT IWARP_CONFIG
set -u
rdmasim=$1; pair=$2; cfg=$3
command -v tshark >/dev/null || { echo "tshark not installed: skipped"; exit 77; }
dir=$(mktemp -d /tmp/rdmasim-pcap.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
ts() { tshark "$@" 2>/dev/null; }
expect() {
  if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got [$2], want [$3]"; fail=1; fi
}
fields() { local f=$1; shift; ts -r "$f" -T fields "$@" | tr '\n' ' ' | sed 's/ $//'; }
pd=$dir/iwarp
out=$(RDMASIM_PCAP_DIR=$pd "$pair" "$rdmasim" "$cfg" -- rping -s -v -C 2 -a 127.0.1.1 \
      -- rping -c -v -C 2 -a 127.0.1.1)
[ $? = 0 ] || { echo "FAIL: rping"; echo "$out"; exit 1; }
expect "files" "$(cd "$pd" && ls | tr '\n' ' ' | sed 's/ $//')" \
  "client_cxgb4_0.pcap server_cxgb4_0.pcap sw0_port0.pcap sw0_port1.pcap"
for m in "$pd"/*.pcap; do
  echo "== $(basename "$m")"
  n=$(ts -r "$m" -Y '_ws.malformed || _ws.expert.severity >= "Warning"' | wc -l)
  expect "$(basename "$m"): malformed/expert errors" "$n" 0
  syn=$(fields "$m" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' -e frame.number -e ip.src -e tcp.dstport -e tcp.seq_raw | tr '\t' ,)
  synack=$(fields "$m" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 1' -e frame.number -e ip.src -e tcp.ack_raw -e tcp.seq_raw | tr '\t' ,)
  IFS=, read -r syn_f syn_src syn_port syn_seq <<<"$syn"
  IFS=, read -r sa_f sa_src sa_ack sa_seq <<<"$synack"
  expect "$(basename "$m"): one SYN, client -> server port 7174, frame 1" "$syn_f,$syn_src,$syn_port" "1,127.0.1.2,7174"
  expect "$(basename "$m"): one SYN-ACK from the server, acknowledging SYN + 1" "$sa_f,$sa_src,$sa_ack" "2,127.0.1.1,$(( (syn_seq + 1) & 0xffffffff ))"
  req=$(fields "$m" -Y iwarp_mpa.req -e frame.number -e ip.src -e tcp.seq_raw -e iwarp_mpa.marker_flag -e iwarp_mpa.crc_flag -e iwarp_mpa.rej_flag -e iwarp_mpa.rev -e iwarp_mpa.pdlength | tr '\t' ,)
  rep=$(fields "$m" -Y iwarp_mpa.rep -e frame.number -e ip.src -e tcp.seq_raw -e iwarp_mpa.marker_flag -e iwarp_mpa.crc_flag -e iwarp_mpa.rej_flag -e iwarp_mpa.rev -e iwarp_mpa.pdlength | tr '\t' ,)
  IFS=, read -r req_f req_src req_seq req_flags <<<"$req"
  IFS=, read -r rep_f rep_src rep_seq rep_flags <<<"$rep"
  expect "$(basename "$m"): MPA Request from the client at SYN + 1, after the SYN-ACK" "$req_src,$req_seq,$(( req_f > sa_f ))" "127.0.1.2,$(( (syn_seq + 1) & 0xffffffff )),1"
  expect "$(basename "$m"): MPA Reply from the server at SYN-ACK + 1, after the Request" "$rep_src,$rep_seq,$(( rep_f > req_f ))" "127.0.1.1,$(( (sa_seq + 1) & 0xffffffff )),1"
  req_flags=$(echo "$req_flags" | sed 's/False/0/g; s/True/1/g'); rep_flags=$(echo "$rep_flags" | sed 's/False/0/g; s/True/1/g')
  expect "$(basename "$m"): MPA Request: M 0, C 1, R 0, rev 1, no private data" "$req_flags" "0,1,0,1,0"
  expect "$(basename "$m"): MPA Reply flags likewise" "$rep_flags" "$req_flags"
  first_fpdu=$(fields "$m" -Y iwarp_mpa.fpdu -e frame.number | cut -d' ' -f1)
  expect "$(basename "$m"): FPDUs only after the Reply" "$(( first_fpdu > rep_f ))" 1
  nf=$(ts -r "$m" -Y iwarp_mpa.fpdu | wc -l)
  echo "FPDUs: $nf"
  [ "$nf" -gt 0 ] || { echo "FAIL: $(basename "$m"): no FPDU"; fail=1; }
  expect "$(basename "$m"): bad CRCs" "$(ts -r "$m" -V -Y iwarp_mpa.fpdu | grep -c 'Bad CRC32')" 0
  expect "$(basename "$m"): every FPDU's CRC checked good" "$(ts -r "$m" -V -Y iwarp_mpa.fpdu | grep -c 'Good CRC32')" "$nf"
  ops=$(fields "$m" -Y iwarp_mpa.fpdu -e iwarp_rdma.opcode | tr ' ' '\n' | sort -u | tr '\n' ' ')
  echo "RDMAP opcodes: $ops"
  echo "$ops" | grep -q 0x03 || { echo "FAIL: $(basename "$m"): no RDMAP Send decoded"; fail=1; }
  cport=$(fields "$m" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 0' -e tcp.srcport)
  expect "$(basename "$m"): client FPDUs on the handshake's ports" \
    "$(fields "$m" -Y 'ip.src == 127.0.1.2 && iwarp_mpa.fpdu' -e tcp.srcport -e tcp.dstport | tr '\t' , | tr ' ' '\n' | sort -u)" "$cport,7174"
  c1=$(fields "$m" -Y 'ip.src == 127.0.1.2 && iwarp_mpa.fpdu' -e tcp.seq_raw | cut -d' ' -f1)
  s1=$(fields "$m" -Y 'ip.src == 127.0.1.1 && iwarp_mpa.fpdu' -e tcp.seq_raw | cut -d' ' -f1)
  expect "$(basename "$m"): the client's first FPDU continues its stream (Request + 20)" "$c1" "$(( (req_seq + 20) & 0xffffffff ))"
  expect "$(basename "$m"): the server's first FPDU continues its stream (Reply + 20)" "$s1" "$(( (rep_seq + 20) & 0xffffffff ))"
  expect "$(basename "$m"): a FIN each way" "$(fields "$m" -Y 'tcp.flags.fin == 1' -e ip.src | tr ' ' '\n' | sort -u | tr '\n' ' ')" "127.0.1.1 127.0.1.2 "
done
exit $fail
