#!/usr/bin/env bash
# tshark on a real congested run (exit 77 = skipped when tshark is missing).
#
# usage: pcap_congestion.sh PCAP_CONGESTION
# pcap_congestion (pcap_congestion.cpp) runs two DCQCN WRITE flows into one port with ECN
# and PFC, capturing every egress port, and writes the fabric's counts to expect.sh. Then:
# Every capture file holds both directions of its port's link (configs/README.md, "Packet
# capture"), so the frames a side sent are picked by their source:
# - r's NIC capture: CNPs from r (IP source) as RoCEv2 packets with BTH opcode 0x81 (129),
#   as many as r's cnps_sent, each sender (IP destination) getting its own QP as BTH dest
#   QP, UDP port 4791;
# - the switch's captures of its links to s1, s2 and r: PFC frames as MAC control frames
#   (ethertype 0x8808, opcode 0x0101), as many as the two ends of the link sent (the switch
#   port's pauses_sent plus the NIC's: the model's PFC frames carry no source address, so
#   the file cannot tell the two ends' frames apart), class-enable vector 0x0001 (class 0,
#   where the data runs), quanta 65535 (XOFF) or 0 (XON) for class 0 and 0 for the others,
#   at least one XOFF; the NIC's file at the other end holds the same PFC frames;
# - no malformed packet and no expert warning in any capture, and frames from both ends of
#   the link in each (every link carries data one way and ACKs or CNPs the other).
set -u
prog=$1
command -v tshark >/dev/null || { echo "tshark not installed: skipped"; exit 77; }
dir=$(mktemp -d /tmp/rdmasim-pcapcong.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
ts() { tshark "$@" 2>/dev/null; }
expect() {  # expect WHAT GOT WANT
  if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got [$2], want [$3]"; fail=1; fi
}
count() { ts -r "$1" -Y "$2" | wc -l; }
fields() { local f=$1; shift; ts -r "$f" -T fields "$@" | sort -u | tr '\n' ' ' | sed 's/ $//'; }

PCAP_CONGESTION_DIR=$dir "$prog" >"$dir/run.log" 2>&1 || { cat "$dir/run.log"; echo "pcap_congestion failed"; exit 1; }
# shellcheck disable=SC1091
. "$dir/expect.sh"
echo "fabric counts: CNPS=$CNPS CNP_DESTS=[$CNP_DESTS] PAUSES=$PAUSES_0/$PAUSES_1/$PAUSES_2" \
  "NIC_PAUSES=$NIC_PAUSES_0/$NIC_PAUSES_1/$NIC_PAUSES_2"

# IP sources on each link: s1 (127.0.1.1) and s2 (127.0.1.2) send data to r (127.0.1.3),
# r sends ACKs and CNPs back to each; r's link carries both flows.
declare -A sources=([s1_mlx5_0]="127.0.1.1 127.0.1.3" [sw0_port0]="127.0.1.1 127.0.1.3"
                    [s2_mlx5_0]="127.0.1.2 127.0.1.3" [sw0_port1]="127.0.1.2 127.0.1.3"
                    [r_mlx5_0]="127.0.1.1 127.0.1.2 127.0.1.3" [sw0_port2]="127.0.1.1 127.0.1.2 127.0.1.3")
expect "capture files" "$(cd "$dir" && ls -- *.pcap | tr '\n' ' ' | sed 's/ $//')" \
  "r_mlx5_0.pcap s1_mlx5_0.pcap s2_mlx5_0.pcap sw0_port0.pcap sw0_port1.pcap sw0_port2.pcap"
for f in "$dir"/*.pcap; do
  b=$(basename "$f" .pcap)
  expect "$b: malformed/expert" "$(count "$f" '_ws.malformed || _ws.expert.severity >= "Warning"')" 0
  expect "$b: both directions (IP sources)" "$(fields "$f" -Y ip -e ip.src)" "${sources[$b]}"
done

r=$dir/r_mlx5_0.pcap
[ -s "$r" ] || { echo "FAIL: no capture of r's port"; exit 1; }
cnp="infiniband.bth.opcode == 129 && ip.src == $R_IP"
expect "cnps from r in r's capture = r's cnps_sent" "$(count "$r" "$cnp")" "$CNPS"
expect "cnp (ip dst, dest qp)" "$(fields "$r" -Y "$cnp" -e ip.dst -e infiniband.bth.destqp | tr '\t' ,)" "$CNP_DESTS"
expect "cnp udp port" "$(fields "$r" -Y "$cnp" -e udp.dstport)" "4791"
[ "$CNPS" -gt 0 ] || { echo "FAIL: the run sent no CNP"; fail=1; }

xoff_total=0
nic_of=(s1 s2 r)
pfc='eth.type == 0x8808 && macc.opcode == 0x0101'
for p in 0 1 2; do
  f=$dir/sw0_port$p.pcap
  want=$(( $(eval echo "\$PAUSES_$p") + $(eval echo "\$NIC_PAUSES_$p") ))
  expect "sw0 port $p: pfc frames = pauses_sent of both ends" "$(count "$f" "$pfc")" "$want"
  expect "${nic_of[$p]}'s file: the same link's pfc frames" "$(count "$dir/${nic_of[$p]}_mlx5_0.pcap" "$pfc")" "$want"
  [ "$want" -gt 0 ] || continue
  expect "sw0 port $p: class-enable vector" "$(fields "$f" -Y macc -e macc.cbfc.enbv)" "0x0001"
  expect "sw0 port $p: class 0 quanta" "$(fields "$f" -Y macc -e macc.cbfc.pause_time.c0 | tr ' ' '\n' | grep -v -x -e 65535 -e 0 | wc -l)" 0
  expect "sw0 port $p: other classes' quanta" "$(fields "$f" -Y macc -e macc.cbfc.pause_time.c1 -e macc.cbfc.pause_time.c2 \
    -e macc.cbfc.pause_time.c3 -e macc.cbfc.pause_time.c4 -e macc.cbfc.pause_time.c5 \
    -e macc.cbfc.pause_time.c6 -e macc.cbfc.pause_time.c7)" "0	0	0	0	0	0	0"
  xoff_total=$((xoff_total + $(count "$f" 'macc.cbfc.pause_time.c0 == 65535')))
done
[ "$xoff_total" -gt 0 ] || { echo "FAIL: no XOFF frame (quanta > 0) captured"; fail=1; }
echo "xoff frames: $xoff_total"
exit $fail
