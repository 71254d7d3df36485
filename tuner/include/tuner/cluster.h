#pragma once
// A cluster: N identical nodes (each a machine with its own TopoTree and speeds) joined by one
// kind of link. The node level above the machine: pipeline stages run one per node, and a
// stage's hidden states cross the link to the next (pipeline_estimate.h).
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace sandwich::tuner {

struct NodeLink {
  std::string name;       // "25GbE", "measured by MPI ping-pong"
  double latency_us = 0;  // one small message, one way
  double gbs = 0;         // GB/s per direction, large messages

  // Seconds to move one message of `bytes` from a node to the next.
  double transfer_s(double bytes) const { return latency_us * 1e-6 + bytes / (gbs * 1e9); }
  std::string describe() const;  // "25GbE (25 us, 2.9 GB/s)"
};

struct Cluster {
  int nodes = 1;
  NodeLink link;
};

// The "cluster" object of a topology descriptor without its "node":
// {"nodes": 2, "link": {"name": "25GbE", "latency_us": 25, "gbs": 2.9}}. Throws
// std::invalid_argument naming `where` and the missing or bad figure.
Cluster cluster_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace sandwich::tuner
