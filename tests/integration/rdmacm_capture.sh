#!/usr/bin/env bash
# The rdma_cm connection's packets in a capture, decoded by tshark (exit 77: no tshark).
# rping -C 2 on RoCEv2 and InfiniBand through a daemon capturing every port. Each capture
# file holds both directions of its port's link, so each one alone (the client's NIC, the
# server's NIC, and both switch ports) must show, with no malformed packet or expert warning:
#  - CM MADs (management class 7, IBTA 13.4.4) as UD SENDs from QP1 to QP1 with the GSI Q_Key
#    0x80010000 (IBTA 13.5.1): REQ (attribute 0x0010), REP (0x0013), RTU (0x0014) first, in
#    that order, then DREQ (0x0015) and DREP (0x0016);
#  - the REQ's service ID is rdma_cm's TCP port space with rping's port 7174
#    (RDMA_IB_IP_PS_TCP 0x0000000001060000 | port), its private data an IP CM header of
#    IP version 4; the REP answers the REQ's communication ID, the RTU the REP's;
#  - the REP's QPN is the server QP the client's RC packets (IP source 127.0.1.2 on RoCE,
#    LRH SLID 2 on IB: the subnet manager gives NIC i LID i + 1) go to.
# usage: rdmacm_capture.sh RDMASIM PAIR_SCRIPT IB_CONFIG
set -u
rdmasim=$1; pair=$2; ib_cfg=$3
command -v tshark >/dev/null || { echo "tshark not installed: skipped"; exit 77; }
dir=$(mktemp -d /tmp/rdmasim-pcap.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
ts() { tshark "$@" 2>/dev/null; }
expect() {
  if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got [$2], want [$3]"; fail=1; fi
}
fields() { local f=$1; shift; ts -r "$f" -T fields "$@" | tr '\n' ' ' | sed 's/ $//'; }

for fab in "roce default ip.src==127.0.1.2" "ib $ib_cfg infiniband.lrh.slid==2"; do
  set -- $fab
  fabric=$1 cfg=$2 from_client=$3 pd=$dir/$1
  out=$(RDMASIM_PCAP_DIR=$pd "$pair" "$rdmasim" "$cfg" -- rping -s -v -C 2 -a 127.0.1.1 \
        -- rping -c -v -C 2 -a 127.0.1.1)
  [ $? = 0 ] || { echo "FAIL: $fabric rping"; echo "$out"; fail=1; continue; }
  expect "$fabric: files" "$(cd "$pd" && ls | tr '\n' ' ' | sed 's/ $//')" \
    "client_mlx5_0.pcap server_mlx5_0.pcap sw0_port0.pcap sw0_port1.pcap"
  for m in "$pd"/*.pcap; do
    name="$fabric $(basename "$m")"
    n=$(ts -r "$m" -Y '_ws.malformed || _ws.expert.severity >= "Warning"' | wc -l)
    expect "$name: malformed/expert errors" "$n" 0
    cm='infiniband.mad.mgmtclass == 7'
    attrs=$(fields "$m" -Y "$cm" -e infiniband.mad.attributeid)
    echo "$name: CM MADs (attribute IDs in time order): $attrs"
    expect "$name: REQ, REP, RTU first" "$(echo "$attrs" | cut -d' ' -f1-3)" "0x0010 0x0013 0x0014"
    echo "$attrs" | grep -q 0x0015 || { echo "FAIL: $name: no DREQ"; fail=1; }
    echo "$attrs" | grep -q 0x0016 || { echo "FAIL: $name: no DREP"; fail=1; }
    expect "$name: every CM MAD to QP 1 with the GSI Q_Key" \
      "$(fields "$m" -Y "$cm" -e infiniband.bth.destqp -e infiniband.deth.q_key -e infiniband.deth.srcqp | tr '\t' , | tr ' ' '\n' | sort -u)" \
      "0x000001,0x0000000080010000,0x00000001"  # tshark prints the Q_Key 64 bits wide
    req='infiniband.mad.attributeid == 0x0010'
    expect "$name: REQ service ID: TCP port space, port 7174" \
      "$(fields "$m" -Y "$req" -e infiniband.cm.req.serviceid)" "0x0000000001061c06"
    expect "$name: REQ's IP CM header, IP version 4" "$(fields "$m" -Y "$req" -e infiniband.cm.req.ip_cm.ipv)" "0x04"
    req_id=$(fields "$m" -Y "$req" -e infiniband.cm.req)
    rep='infiniband.mad.attributeid == 0x0013'
    expect "$name: the REP answers the REQ's comm ID" "$(fields "$m" -Y "$rep" -e infiniband.cm.rep.remotecommid)" "$req_id"
    rep_id=$(fields "$m" -Y "$rep" -e infiniband.cm.rep)
    expect "$name: the RTU names both" \
      "$(fields "$m" -Y 'infiniband.mad.attributeid == 0x0014' -e infiniband.cm.rtu.localcommid -e infiniband.cm.rtu.remotecommid | tr '\t' ,)" \
      "$req_id,$rep_id"
    srv_qpn=$(fields "$m" -Y "$rep" -e infiniband.cm.rep.localqpn)
    data=$(fields "$m" -Y "$from_client && infiniband.bth && !($cm) && infiniband.bth.opcode < 0x60" -e infiniband.bth.destqp | tr ' ' '\n' | sort -u | tr '\n' ' ')
    expect "$name: the client's RC packets go to the REP's QPN" "${data% }" "$(printf '0x%06x' "$srv_qpn")"
  done
done
exit $fail
