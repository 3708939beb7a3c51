// ns-3 side of longhaul's TCP comparison: one bulk TCP flow over a point-to-point link.
//
// n0 --[rate, one-way delay, drop-tail queue of N packets]--> n1, BulkSend on n0, PacketSink on
// n1, with the TCP settings longhaul uses (MSS, SACK, timestamps, initial window 10, delayed
// ACK every `delack_count` segments / 40 ms, min RTO 200 ms, fixed socket buffers). The
// traffic-control layer is removed so the device's drop-tail queue is the bottleneck, as in
// longhaul. ns-3's point-to-point device frames with a 2-byte PPP header; longhaul's Ethernet
// link costs `frame_overhead_bytes` (38: preamble, header, FCS, inter-frame gap) per frame, so
// the device rate is scaled to serialise a full-sized packet in the same time.
//
// Prints one JSON object: goodput, link packets (both directions), the cwnd (segments) sampled
// every interval, and the CPU time of the simulation (`cpu_s`: building the scenario and running
// it, from the start of main to the end of Simulator::Run; process start-up, which loads a dozen
// ns-3 libraries and registers their types, is not simulation and is left out).

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <ctime>
#include <iostream>
#include <sstream>
#include <vector>

using namespace ns3;

// Proportional Rate Reduction (RFC 6937 section 3) with ns-3 3.37's choices, its one defect
// removed. ns-3 3.37's TcpPrrRecovery computes the proportional step prr_delivered x ssthresh in
// 32-bit unsigned arithmetic (both in bytes): from the 6th-8th segment delivered in a recovery
// the product wraps and the step collapses (an imul in libns3.37-internet.so; upstream ns-3 later
// widened it). This class keeps 3.37's rules (RecoverFS = data unacknowledged when recovery
// starts, the slow-start reduction bound's extra segment only once a retransmission is
// cumulatively acknowledged, at least one segment on the first step) and counts in 64 bits.
// Selected with --wide_prr=1 through TcpL4Protocol::RecoveryType.
class WidePrrRecovery : public TcpClassicRecovery {
 public:
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("ns3::LonghaulWidePrrRecovery")
                            .SetParent<TcpClassicRecovery>()
                            .SetGroupName("Internet")
                            .AddConstructor<WidePrrRecovery>();
    return tid;
  }
  WidePrrRecovery() = default;
  WidePrrRecovery(const WidePrrRecovery &other) = default;
  std::string GetName() const override { return "LonghaulWidePrrRecovery"; }

  void EnterRecovery(Ptr<TcpSocketState> tcb, uint32_t, uint32_t unacked_bytes, uint32_t delivered_bytes) override {
    recover_fs_ = std::max<uint64_t>(unacked_bytes, 1);
    delivered_ = 0;
    sent_ = 0;
    DoRecovery(tcb, delivered_bytes);
  }

  void DoRecovery(Ptr<TcpSocketState> tcb, uint32_t delivered_bytes) override {
    delivered_ += delivered_bytes;
    const int64_t pipe = tcb->m_bytesInFlight.Get(), ssthresh = tcb->m_ssThresh.Get(), mss = tcb->m_segmentSize;
    int64_t quota;
    if (pipe > ssthresh) {
      // Send ssthresh / RecoverFS of what has been delivered (ceiling), less what was sent.
      const uint64_t due = (delivered_ * uint64_t(ssthresh) + recover_fs_ - 1) / recover_fs_;
      quota = int64_t(due) - int64_t(sent_);
    } else {
      int64_t bound = delivered_bytes;
      if (tcb->m_isRetransDataAcked) {
        bound = std::max<int64_t>(int64_t(delivered_) - int64_t(sent_), delivered_bytes) + mss;
      }
      quota = std::min(bound, ssthresh - pipe);
    }
    if (sent_ == 0) {
      quota = std::max(quota, mss);  // the fast retransmission itself
    }
    tcb->m_cWnd = uint32_t(std::max<int64_t>(pipe + quota, 0));
    tcb->m_cWndInfl = tcb->m_cWnd;
  }

  void ExitRecovery(Ptr<TcpSocketState> tcb) override { tcb->m_cWndInfl = tcb->m_cWnd; }
  void UpdateBytesSent(uint32_t bytes) override { sent_ += bytes; }
  Ptr<TcpRecoveryOps> Fork() override { return CopyObject<WidePrrRecovery>(this); }

 private:
  uint64_t delivered_ = 0, sent_ = 0, recover_fs_ = 1;
};
NS_OBJECT_ENSURE_REGISTERED(WidePrrRecovery);

static uint32_t g_cwnd_bytes = 0;
static uint64_t g_link_packets = 0;
static std::vector<double> g_cwnd_trace;

static void CwndChanged(uint32_t, uint32_t now_bytes) { g_cwnd_bytes = now_bytes; }
static void PhyTx(Ptr<const Packet>) { g_link_packets++; }

static void Sample(double interval_s, uint32_t mss) {
  g_cwnd_trace.push_back(double(g_cwnd_bytes) / mss);
  Simulator::Schedule(Seconds(interval_s), &Sample, interval_s, mss);
}

static double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void HookCwnd(Ptr<BulkSendApplication> app) {
  app->GetSocket()->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&CwndChanged));
}

int main(int argc, char *argv[]) {
  const double cpu_start_s = ProcessCpuSeconds();
  double rate_gbps = 1.0, delay_ms = 10.0, duration_s = 5.0, interval_s = 0.1;
  uint32_t queue_packets = 100, mss = 1448, delack_count = 2, frame_overhead_bytes = 2;
  uint64_t buffer_bytes = 64 << 20;
  bool wide_prr = false;
  std::string cc = "NewReno";
  CommandLine cmd;
  cmd.AddValue("rate_gbps", "link rate (Gb/s)", rate_gbps);
  cmd.AddValue("delay_ms", "one-way propagation delay (ms)", delay_ms);
  cmd.AddValue("duration_s", "simulated seconds", duration_s);
  cmd.AddValue("interval_s", "cwnd sampling interval (s)", interval_s);
  cmd.AddValue("queue_packets", "drop-tail queue of the bottleneck device (packets)", queue_packets);
  cmd.AddValue("mss", "segment size (bytes)", mss);
  cmd.AddValue("buffer_bytes", "send and receive socket buffers (bytes)", buffer_bytes);
  cmd.AddValue("cc", "NewReno or Cubic", cc);
  cmd.AddValue("delack_count", "segments per delayed ACK (1 = ACK every segment)", delack_count);
  cmd.AddValue("frame_overhead_bytes", "link framing per packet to match (PPP: 2)", frame_overhead_bytes);
  cmd.AddValue("wide_prr", "PRR with its proportional step in 64 bits (ns-3 3.37's overflows 32)", wide_prr);
  cmd.Parse(argc, argv);

  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::Tcp" + cc));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delack_count));
  Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(40)));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(buffer_bytes));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(buffer_bytes));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
  Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
  Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
  // HyStart off on both sides (the test runs longhaul with --no-hystart): compare like with like.
  Config::SetDefault("ns3::TcpCubic::HyStart", BooleanValue(false));
  if (wide_prr) {
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", TypeIdValue(WidePrrRecovery::GetTypeId()));
  }

  NodeContainer nodes;
  nodes.Create(2);
  PointToPointHelper p2p;
  const double ip_bytes = mss + 52.0;  // IP + TCP + timestamp option
  const double ppp_bytes = 2.0;
  std::ostringstream rate;
  rate << uint64_t(rate_gbps * 1e9 * (ip_bytes + ppp_bytes) / (ip_bytes + frame_overhead_bytes)) << "bps";
  p2p.SetDeviceAttribute("DataRate", StringValue(rate.str()));
  p2p.SetChannelAttribute("Delay", TimeValue(MicroSeconds(int64_t(delay_ms * 1000))));
  std::ostringstream q;
  q << queue_packets << "p";
  p2p.SetQueue("ns3::DropTailQueue", "MaxSize", QueueSizeValue(QueueSize(q.str())));
  NetDeviceContainer devices = p2p.Install(nodes);

  InternetStackHelper stack;
  stack.Install(nodes);
  Ipv4AddressHelper address;
  address.SetBase("10.1.1.0", "255.255.255.0");
  Ipv4InterfaceContainer ifaces = address.Assign(devices);
  TrafficControlHelper tch;
  tch.Uninstall(devices);

  uint16_t port = 5001;
  BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(ifaces.GetAddress(1), port));
  source.SetAttribute("MaxBytes", UintegerValue(0));
  source.SetAttribute("SendSize", UintegerValue(mss * 16));
  ApplicationContainer src = source.Install(nodes.Get(0));
  src.Start(Seconds(0.0));
  PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
  ApplicationContainer dst = sink.Install(nodes.Get(1));
  dst.Start(Seconds(0.0));

  for (uint32_t i = 0; i < 2; i++) {
    devices.Get(i)->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&PhyTx));
  }
  // The socket exists once the application has started.
  Simulator::Schedule(Seconds(1e-6), &HookCwnd, DynamicCast<BulkSendApplication>(src.Get(0)));
  Simulator::Schedule(Seconds(interval_s), &Sample, interval_s, mss);
  Simulator::Stop(Seconds(duration_s));
  Simulator::Run();
  const double cpu_s = ProcessCpuSeconds() - cpu_start_s;

  uint64_t rx = DynamicCast<PacketSink>(dst.Get(0))->GetTotalRx();
  std::cout << "{\"bw_MBps\": " << rx / duration_s / 1e6 << ", \"link_packets\": " << g_link_packets << ", \"cpu_s\": " << cpu_s
            << ", \"cwnd_trace_segs\": [";
  for (size_t i = 0; i < g_cwnd_trace.size(); i++) {
    std::cout << (i ? ", " : "") << g_cwnd_trace[i];
  }
  std::cout << "]}" << std::endl;
  Simulator::Destroy();
  return 0;
}
