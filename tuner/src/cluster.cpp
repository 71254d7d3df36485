#include "tuner/cluster.h"

#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace sandwich::tuner {
namespace {

double positive(const nlohmann::json& link, const char* key, const std::string& where) {
  if (!link.contains(key))
    throw std::invalid_argument(
        where + ": the cluster's link needs \"" + key + "\" (" +
        (std::string(key) == "gbs" ? "GB/s per direction" : "one-way latency in microseconds") +
        ")");
  const auto& v = link[key];
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    throw std::invalid_argument(where + ": the cluster's link \"" + key +
                                "\" must be a positive number, not " + v.dump());
  return v.get<double>();
}

}  // namespace

std::string NodeLink::describe() const {
  std::ostringstream os;
  os << std::setprecision(3) << name << " (" << latency_us << " us, " << gbs << " GB/s)";
  return os.str();
}

Cluster cluster_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object())
    throw std::invalid_argument(where +
                                ": \"cluster\" must be an object with \"nodes\", "
                                "\"node\" and \"link\"");
  Cluster c;
  const auto n = j.find("nodes");
  if (n == j.end() || !n->is_number_integer())
    throw std::invalid_argument(where + ": the cluster needs \"nodes\", a whole number of nodes");
  const int64_t nodes = n->get<int64_t>();
  if (nodes < 1 || nodes > 4096)
    throw std::invalid_argument(where + ": the cluster's \"nodes\" must be 1 to 4096, not " +
                                std::to_string(nodes));
  c.nodes = static_cast<int>(nodes);
  const auto l = j.find("link");
  if (l == j.end() || !l->is_object())
    throw std::invalid_argument(
        where + ": the cluster needs a \"link\" {\"name\", \"latency_us\", \"gbs\"}");
  c.link.name = l->value("name", "link");
  c.link.latency_us = positive(*l, "latency_us", where);
  c.link.gbs = positive(*l, "gbs", where);
  return c;
}

}  // namespace sandwich::tuner
