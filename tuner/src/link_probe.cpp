// Starting the link probe under mpirun and reading its line back (the MPI side is
// link_probe_mpi.cpp).
#include "tuner/link_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace sandwich::tuner {
namespace fs = std::filesystem;
namespace {

std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path p = fs::path(dir.empty() ? "." : dir) / program;
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

// What went wrong, in one line: the probe's own complaint, else the first line with words
// (ssh's, or the summary that opens OpenMPI's boxed messages).
std::string reason_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, first;
  while (std::getline(in, line)) {
    if (line.rfind("sandwich-tune link-probe:", 0) == 0) return line;
    if (first.empty() && std::any_of(line.begin(), line.end(),
                                     [](unsigned char ch) { return std::isalpha(ch) != 0; }))
      first = line;
  }
  return first;
}

struct ChildResult {
  int status = -1;
  bool timed_out = false;
  std::string output;  // stdout and stderr together
};

// Runs argv in its own process group; kills the group past the deadline.
ChildResult run_child(const std::vector<std::string>& argv, double timeout_s) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("link probe: cannot make a pipe");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("link probe: cannot fork");
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(fds[1]);
  ChildResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000))) < 0) continue;
    if (!(p.revents & (POLLIN | POLLHUP))) continue;
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    if (r.output.size() < (1u << 20)) r.output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace

NodeLink LinkMeasurement::link() const {
  NodeLink l;
  l.name = "MPI ping-pong";
  if (hosts.size() == 2) l.name += " " + hosts[0] + " <-> " + hosts[1];
  l.latency_us = latency_us;
  l.gbs = gbs;
  return l;
}

nlohmann::json LinkMeasurement::to_json() const {
  return {{"link_latency_us", latency_us}, {"link_gbs", gbs}, {"hosts", hosts}};
}

LinkMeasurement LinkMeasurement::from_json(const nlohmann::json& j) {
  LinkMeasurement m;
  m.latency_us = j.at("link_latency_us").get<double>();
  m.gbs = j.at("link_gbs").get<double>();
  if (j.contains("hosts")) m.hosts = j["hosts"].get<std::vector<std::string>>();
  if (!(m.latency_us > 0) || !(m.gbs > 0))
    throw std::invalid_argument("the link probe measured no positive latency and bandwidth");
  return m;
}

HostfileNodes read_hostfile(const std::string& hostfile) {
  std::ifstream in(hostfile);
  if (!in) throw std::invalid_argument("--hostfile " + hostfile + ": cannot read the file");
  HostfileNodes h;
  std::set<std::string> seen;
  int slots_of_first = 0;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string host, word;
    if (!(words >> host)) continue;
    int slots = 1;
    while (words >> word)
      if (word.rfind("slots=", 0) == 0) slots = std::max(1, std::atoi(word.c_str() + 6));
    if (seen.insert(host).second) {
      h.hosts.push_back(host);
      if (h.hosts.size() == 1) slots_of_first = slots;
    }
  }
  if (h.hosts.empty())
    throw std::invalid_argument("--hostfile " + hostfile +
                                ": names no host (one per line, "
                                "e.g. \"node1 slots=1\")");
  h.nodes = h.hosts.size() == 1 ? std::max(2, slots_of_first) : static_cast<int>(h.hosts.size());
  return h;
}

std::vector<std::string> link_probe_command(const std::string& mpirun, const std::string& hostfile,
                                            const std::string& self_exe, bool single_host) {
  std::vector<std::string> c{mpirun, "--hostfile", hostfile, "-np", "2", "--map-by", "node"};
  if (geteuid() == 0) c.push_back("--allow-run-as-root");
  if (single_host)
    for (const char* a : {"--oversubscribe", "--mca", "btl", "tcp,self"}) c.push_back(a);
  c.push_back(self_exe);
  c.push_back("link-probe");
  return c;
}

LinkMeasurement measure_link(const std::string& hostfile, std::string self_exe, double timeout_s) {
  const HostfileNodes h = read_hostfile(hostfile);
  const std::string mpirun = find_on_path("mpirun");
  if (mpirun.empty())
    throw std::runtime_error(
        "link probe: mpirun not found on PATH (install OpenMPI: apt-get install openmpi-bin)");
  if (self_exe.empty()) self_exe = fs::read_symlink("/proc/self/exe").string();
  const ChildResult r =
      run_child(link_probe_command(mpirun, hostfile, self_exe, h.hosts.size() == 1), timeout_s);
  if (r.timed_out)
    throw std::runtime_error("link probe: mpirun took longer than " +
                             std::to_string(static_cast<int>(timeout_s)) + " s (are the hosts of " +
                             hostfile + " reachable?)");
  std::istringstream in(r.output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("{\"", 0) != 0 || line.find("link_latency_us") == std::string::npos) continue;
    try {
      return LinkMeasurement::from_json(nlohmann::json::parse(line));
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("link probe: unreadable result (") + e.what() + ")");
    }
  }
  const std::string why = reason_line(r.output);
  throw std::runtime_error("link probe failed (mpirun exit " + std::to_string(r.status) + ")" +
                           (why.empty() ? std::string() : ": " + why));
}

}  // namespace sandwich::tuner
