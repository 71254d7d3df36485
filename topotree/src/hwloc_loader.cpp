// Reading a machine's topology with hwloc into a RawNode tree, then a TopoTree.
#include "topotree/hwloc_loader.h"

#include <hwloc.h>
#include <unistd.h>
#include <cstdlib>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "common/bounded_file.h"
#include "raw_tree.h"

namespace sandwich::topotree {
namespace {

using detail::RawNode;

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

// hwloc explains a rejected synthetic string on stderr; catch that line so the error the user
// sees is one line holding the reason.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    file_ = std::tmpfile();
    saved_ = dup(2);
    if (file_ && saved_ >= 0) dup2(fileno(file_), 2);
  }
  ~StderrCapture() {
    restore();
    if (file_) std::fclose(file_);
  }
  std::string text() {
    restore();
    if (!file_) return {};
    std::string out;
    std::rewind(file_);
    char buf[512];
    while (std::fgets(buf, sizeof buf, file_)) out += buf;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    for (char& c : out)
      if (c == '\n') c = ';';
    return out;
  }

 private:
  void restore() {
    if (saved_ >= 0) {
      std::fflush(stderr);
      dup2(saved_, 2);
      close(saved_);
      saved_ = -1;
    }
  }
  std::FILE* file_ = nullptr;
  int saved_ = -1;
};

std::string type_name(hwloc_obj_t obj) {
  if (obj->type == HWLOC_OBJ_GROUP) {
    if (obj->subtype && *obj->subtype) return obj->subtype;
    return "Group";
  }
  char buf[64];
  hwloc_obj_type_snprintf(buf, sizeof buf, obj, 0);
  return buf;
}

RawNode read_object(hwloc_obj_t obj, bool& missing_numa) {
  RawNode n;
  n.type = type_name(obj);
  if (hwloc_obj_type_is_cache(obj->type)) n.cache_bytes = obj->attr->cache.size;
  n.numa_memory = obj->memory_arity > 0;
  if (obj->type == HWLOC_OBJ_PU) {
    n.cpu = static_cast<int>(obj->os_index);
    const int first = obj->nodeset ? hwloc_bitmap_first(obj->nodeset) : -1;
    if (first < 0) missing_numa = true;
    n.numa = first < 0 ? 0 : first;
    return n;
  }
  for (unsigned i = 0; i < obj->arity; ++i)
    n.children.push_back(read_object(obj->children[i], missing_numa));
  return n;
}

void collect_pus(const RawNode& n, std::vector<std::pair<int, int>>& out) {
  if (n.cpu >= 0) out.emplace_back(n.cpu, n.numa);
  for (const auto& c : n.children) collect_pus(c, out);
}

bool looks_like_xml_file(const std::string& spec) {
  std::error_code ec;
  return std::filesystem::is_regular_file(spec, ec);
}

// The PUs a synthetic description asks for: the product of its levels' arities ("pack:2 [numa]
// l3:16(size=32MB) core:4 pu:2" -> 2 x 16 x 4 x 2). Attached memory in [...] and attributes in
// (...) are skipped. Saturates at limit + 1; nullopt when a level is not "type:N" or "N" (hwloc
// then says what is wrong).
std::optional<uint64_t> synthetic_pu_count(const std::string& spec, uint64_t limit) {
  uint64_t pus = 1;
  std::string token;
  int depth = 0;  // inside (...) or [...]
  auto level = [&]() -> bool {
    if (token.empty()) return true;
    const size_t colon = token.rfind(':');
    const std::string digits = colon == std::string::npos ? token : token.substr(colon + 1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return false;
    // Compared digit by digit: "99999999999999999999" must not wrap to something small.
    uint64_t arity = 0;
    for (char ch : digits)
      arity = std::min<uint64_t>(arity * 10 + static_cast<uint64_t>(ch - '0'), limit + 1);
    pus = arity == 0
              ? 0
              : std::min<uint64_t>(pus > (limit + 1) / arity ? limit + 1 : pus * arity, limit + 1);
    token.clear();
    return true;
  };
  for (char ch : spec) {
    if (ch == '(' || ch == '[') {
      ++depth;
    } else if (ch == ')' || ch == ']') {
      if (depth == 0) return std::nullopt;
      --depth;
    } else if (depth == 0) {
      if (std::isspace(static_cast<unsigned char>(ch))) {
        if (!level()) return std::nullopt;
      } else {
        token += ch;
      }
    }
  }
  if (depth != 0 || !level()) return std::nullopt;
  return pus;
}

}  // namespace

namespace {

// A process bound to some CPUs (taskset, numactl, mpirun's binding of each node of a pipeline
// sharing a machine) has those for its machine: its ranks and threads go there, not onto CPUs
// another process was given.
void restrict_to_binding(hwloc_topology_t topo, std::vector<std::string>& notes) {
  hwloc_bitmap_t bound = hwloc_bitmap_alloc();
  const hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topo);
  if (hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(bound) &&
      hwloc_bitmap_isincluded(all, bound) == 0 && hwloc_topology_restrict(topo, bound, 0) == 0) {
    char* text = nullptr;
    hwloc_bitmap_list_asprintf(&text, bound);
    notes.push_back("this process may run on CPUs " + std::string(text ? text : "?") +
                    " only (taskset, numactl or mpirun's binding): they are its machine");
    std::free(text);
  }
  hwloc_bitmap_free(bound);
}

}  // namespace

LoadedTopology load_topology(const std::string& spec) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw std::runtime_error("hwloc_topology_init failed");
  TopologyPtr topo(raw);
  std::string source;
  if (spec.empty()) {
    source = "this machine";
  } else if (looks_like_xml_file(spec)) {
    source = "XML: " + spec;
    try {
      check_bounded_file(spec, file_kinds::kTopologyXml);  // hwloc reads it whole
    } catch (const std::runtime_error& e) {
      throw std::invalid_argument(e.what());
    }
    StderrCapture capture;
    const int rc = hwloc_topology_set_xml(raw, spec.c_str());
    const std::string why = capture.text();
    if (rc != 0)
      throw std::invalid_argument("cannot use '" + spec + "' as an hwloc XML topology" +
                                  (why.empty() ? std::string() : " (" + why + ")") +
                                  "; write one with: lstopo file.xml");
  } else {
    source = "synthetic: " + spec;
    // hwloc would build every object of a huge description before returning (for hours).
    if (const auto pus = synthetic_pu_count(spec, kMaxPus); pus && *pus > kMaxPus)
      throw std::invalid_argument("topology '" + spec + "' describes more than " +
                                  std::to_string(kMaxPus) +
                                  " PUs (the product of its levels' sizes); at most " +
                                  std::to_string(kMaxPus) + " are supported");
    StderrCapture capture;
    const int rc = hwloc_topology_set_synthetic(raw, spec.c_str());
    const std::string why = capture.text();
    if (rc != 0)
      throw std::invalid_argument("invalid topology '" + spec +
                                  "': not an XML file and not a valid hwloc synthetic description" +
                                  (why.empty() ? std::string() : " (hwloc: " + why + ")") +
                                  "; example: \"pack:2 [numa] l3:16 core:4 pu:2\"");
  }
  {
    StderrCapture capture;
    const int rc = hwloc_topology_load(raw);
    const std::string why = capture.text();
    if (rc != 0)
      throw std::invalid_argument("hwloc could not load the topology from " + source +
                                  (why.empty() ? std::string() : " (" + why + ")"));
  }
  std::vector<std::string> restrict_notes;
  if (spec.empty()) restrict_to_binding(raw, restrict_notes);
  bool missing_numa = false;
  RawNode root = read_object(hwloc_get_root_obj(raw), missing_numa);
  std::vector<std::string> notes = std::move(restrict_notes);
  if (missing_numa)
    notes.push_back("hwloc gave no NUMA node for some PUs; they are taken as NUMA node 0");
  std::vector<std::pair<int, int>> pus;
  collect_pus(root, pus);
  std::sort(pus.begin(), pus.end());
  TopoTree tree = detail::raw_to_topo_tree(std::move(root), notes);
  LoadedTopology out{std::move(tree), source, std::move(notes), {}, {}, 0};
  out.memory_bytes = hwloc_get_root_obj(raw)->total_memory;
  for (const auto& [cpu, numa] : pus) {
    out.all_cpus.push_back(cpu);
    out.all_cpus_numa.push_back(numa);
  }
  return out;
}

std::vector<int> LoadedTopology::numa_nodes() const {
  std::vector<int> nodes = all_cpus_numa;
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

const LoadedTopology& this_machine() {
  static const LoadedTopology machine = load_topology("");
  return machine;
}

}  // namespace sandwich::topotree
