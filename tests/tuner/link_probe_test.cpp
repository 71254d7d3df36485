// The link probe under mpirun: two ranks of sandwich-tune on this machine over TCP, hostfiles,
// and the one-line errors of a missing mpirun or a failing probe.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "mpirun.h"
#include "test_data.h"
#include "tuner/calibration.h"
#include "tuner/link_probe.h"

namespace sandwich::tuner {
namespace {

std::string write_hostfile(const test::TempDir& dir, const std::string& text) {
  const auto file = dir / "hosts";
  std::ofstream(file) << text;
  return file.string();
}

TEST(LinkProbe, HostfilesCountTheirNodes) {
  test::TempDir dir;
  EXPECT_EQ(read_hostfile(write_hostfile(dir, "localhost slots=2\n")).nodes, 2);
  EXPECT_EQ(read_hostfile(write_hostfile(dir, "localhost slots=3\n")).nodes, 3);
  const HostfileNodes h =
      read_hostfile(write_hostfile(dir, "# rack 1\nnode1 slots=16\n\nnode2 slots=16 # b\nnode1\n"));
  EXPECT_EQ(h.nodes, 2);
  EXPECT_EQ(h.hosts, std::vector<std::string>({"node1", "node2"}));
  EXPECT_THROW(read_hostfile(write_hostfile(dir, "# nothing\n")), std::invalid_argument);
  EXPECT_THROW(read_hostfile((dir / "none").string()), std::invalid_argument);
}

TEST(LinkProbe, CommandCrossesTcpOnOneHost) {
  const auto one = link_probe_command("mpirun", "h", "/x/sandwich-tune", true);
  const std::string s = [&] {
    std::string t;
    for (const auto& a : one) t += a + " ";
    return t;
  }();
  EXPECT_NE(s.find("--hostfile h -np 2 --map-by node"), std::string::npos) << s;
  EXPECT_NE(s.find("--mca btl tcp,self"), std::string::npos) << s;
  EXPECT_EQ(s.find("--allow-run-as-root") != std::string::npos, geteuid() == 0) << s;
  EXPECT_EQ(one.back(), "link-probe");
  const auto many = link_probe_command("mpirun", "h", "/x/sandwich-tune", false);
  for (const auto& a : many) EXPECT_NE(a, "tcp,self");
}

TEST(LinkProbe, TwoRanksOverTcpMeasureTheLink) {
  SANDWICH_REQUIRE_MPIRUN();
  test::TempDir dir;
  const LinkMeasurement m = measure_link(write_hostfile(dir, "localhost slots=2\n"),
                                         (test::bin_dir() / "sandwich-tune").string(), 60);
  EXPECT_GT(m.latency_us, 0);
  EXPECT_LT(m.latency_us, 10000);
  EXPECT_GT(m.gbs, 0.01);
  EXPECT_EQ(m.hosts.size(), 2u);
  EXPECT_EQ(m.link().gbs, m.gbs);
  std::cout << "link probe: " << m.latency_us << " us, " << m.gbs << " GB/s\n";
}

TEST(LinkProbe, AFailingProbeIsOneLine) {
  SANDWICH_REQUIRE_MPIRUN();
  test::TempDir dir;
  const std::string hosts = write_hostfile(dir, "localhost slots=2\n");
  try {
    measure_link(hosts, "/bin/false", 60);
    FAIL() << "a probe that exits 1 was accepted";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("link probe failed (mpirun exit"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(LinkProbe, MissingMpirunIsOneLine) {
  test::TempDir dir;
  const std::string hosts = write_hostfile(dir, "localhost slots=2\n");
  test::ScopedEnv path("PATH", dir.path().c_str());
  try {
    measure_link(hosts, "/bin/false", 10);
    FAIL() << "ran without mpirun";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("mpirun not found"), std::string::npos) << e.what();
  }
}

TEST(LinkProbe, TheCalibrationRecordsTheLink) {
  Calibration c;
  c.cpu = "test";
  c.cpus = {0};
  c.read_gbs = {10};
  c.team_region_us = {1};
  c.fma_f32_gflops = 100;
  const Calibration before = Calibration::from_json(c.to_json());
  EXPECT_EQ(before.link_gbs, 0);
  EXPECT_FALSE(c.to_json().contains("link_gbs")) << "records without a link stay as they were";
  c.link_latency_us = 25;
  c.link_gbs = 2.9;
  c.link_hostfile = "/h";
  const Calibration after = Calibration::from_json(c.to_json());
  EXPECT_EQ(after.link_latency_us, 25);
  EXPECT_EQ(after.link_gbs, 2.9);
  EXPECT_EQ(after.link_hostfile, "/h");
}

}  // namespace
}  // namespace sandwich::tuner
