#pragma once
// A Prometheus text-format (0.0.4) parser for the tests, strict where prometheus_client's output
// is: every family has its # HELP and # TYPE before its samples and its samples together; names,
// label names and escaped label values follow the exposition grammar; no series twice; counters
// end in _total; a histogram's series of one label set have _bucket samples with ascending le and
// non-decreasing counts, a +Inf bucket equal to _count, and a _sum. Any breach throws
// std::runtime_error naming the line.
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace sandwich::test {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
  std::string label(const std::string& k) const {
    auto it = labels.find(k);
    return it == labels.end() ? std::string() : it->second;
  }
};

struct PromFamily {
  std::string name, type, help;
  std::vector<PromSample> samples;
};

struct PromPage {
  std::map<std::string, PromFamily> families;
  const PromFamily& family(const std::string& name) const {
    auto it = families.find(name);
    if (it == families.end()) throw std::runtime_error("no metric family " + name);
    return it->second;
  }
  bool has(const std::string& name) const { return families.count(name) > 0; }
  // The one sample of `name` (a gauge's or counter's) whose labels include `with`.
  double value(const std::string& name, const std::map<std::string, std::string>& with = {}) const {
    for (const auto& [_, f] : families)
      for (const auto& s : f.samples) {
        if (s.name != name) continue;
        bool match = true;
        for (const auto& [k, v] : with) match = match && s.label(k) == v;
        if (match) return s.value;
      }
    throw std::runtime_error("no sample " + name);
  }
};

namespace prom_detail {

inline bool name_start(char c, bool colon) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (colon && c == ':');
}
inline bool name_char(char c, bool colon) {
  return name_start(c, colon) || std::isdigit(static_cast<unsigned char>(c));
}

class Line {
 public:
  Line(const std::string& s, size_t no) : s_(s), no_(no) {}
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("line " + std::to_string(no_) + ": " + why + ": " + s_);
  }
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[i_]; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string name(bool colon) {
    const size_t b = i_;
    if (!name_start(peek(), colon)) fail("bad name");
    while (!at_end() && name_char(s_[i_], colon)) ++i_;
    return s_.substr(b, i_ - b);
  }
  std::string quoted() {
    expect('"');
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated label value");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (c == '\n') fail("raw newline in a label value");
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = at_end() ? '\0' : s_[i_++];
      if (e == '\\' || e == '"')
        out += e;
      else if (e == 'n')
        out += '\n';
      else
        fail("bad escape in a label value");
    }
  }
  std::string word() {
    const size_t b = i_;
    while (!at_end() && s_[i_] != ' ') ++i_;
    return s_.substr(b, i_ - b);
  }
  void spaces() {
    while (peek() == ' ' || peek() == '\t') ++i_;
  }
  std::string rest() { return at_end() ? std::string() : s_.substr(i_); }

 private:
  const std::string& s_;
  size_t no_;
  size_t i_ = 0;
};

inline double number(const std::string& w, const Line& l) {
  if (w == "+Inf" || w == "Inf") return INFINITY;
  if (w == "-Inf") return -INFINITY;
  if (w == "NaN") return NAN;
  char* end = nullptr;
  const double v = std::strtod(w.c_str(), &end);
  if (w.empty() || *end != '\0' || w == "inf" || w == "nan") l.fail("bad number '" + w + "'");
  return v;
}

// The family a sample belongs to, given the types seen: a histogram's _bucket/_sum/_count.
inline std::string family_of(const std::string& sample,
                             const std::map<std::string, PromFamily>& fams) {
  if (fams.count(sample)) return sample;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (sample.size() > s.size() && sample.compare(sample.size() - s.size(), s.size(), s) == 0) {
      const std::string base = sample.substr(0, sample.size() - s.size());
      auto it = fams.find(base);
      if (it != fams.end() && (it->second.type == "histogram" || it->second.type == "summary"))
        return base;
    }
  }
  return sample;
}

inline void check_histogram(const PromFamily& f) {
  struct Series {
    std::vector<std::pair<double, double>> buckets;  // (le, count) in page order
    bool has_sum = false, has_count = false;
    double count = 0;
  };
  std::map<std::map<std::string, std::string>, Series> by_labels;
  for (const auto& s : f.samples) {
    auto labels = s.labels;
    labels.erase("le");
    Series& ser = by_labels[labels];
    if (s.name == f.name + "_bucket") {
      if (!s.labels.count("le")) throw std::runtime_error(f.name + ": a bucket without le");
      ser.buckets.push_back({number(s.labels.at("le"), Line(s.labels.at("le"), 0)), s.value});
    } else if (s.name == f.name + "_sum") {
      ser.has_sum = true;
    } else if (s.name == f.name + "_count") {
      ser.has_count = true;
      ser.count = s.value;
    } else {
      throw std::runtime_error(f.name + ": sample " + s.name + " in a histogram");
    }
  }
  for (const auto& [labels, ser] : by_labels) {
    if (ser.buckets.empty() || !std::isinf(ser.buckets.back().first))
      throw std::runtime_error(f.name + ": no +Inf bucket (last)");
    for (size_t i = 1; i < ser.buckets.size(); ++i) {
      if (!(ser.buckets[i].first > ser.buckets[i - 1].first))
        throw std::runtime_error(f.name + ": le not ascending");
      if (ser.buckets[i].second < ser.buckets[i - 1].second)
        throw std::runtime_error(f.name + ": bucket counts decrease");
    }
    if (!ser.has_sum) throw std::runtime_error(f.name + ": no _sum");
    if (!ser.has_count) throw std::runtime_error(f.name + ": no _count");
    if (ser.buckets.back().second != ser.count)
      throw std::runtime_error(f.name + ": +Inf bucket differs from _count");
  }
}

}  // namespace prom_detail

inline PromPage parse_prometheus(const std::string& text) {
  using namespace prom_detail;
  PromPage page;
  auto& fams = page.families;
  std::set<std::string> done;  // families whose samples have ended
  std::set<std::string> series;
  std::string current;  // the family whose samples come now
  size_t no = 0, at = 0;
  if (!text.empty() && text.back() != '\n') throw std::runtime_error("no final newline");
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    const std::string s = text.substr(at, nl - at);
    at = nl + 1;
    Line l(s, ++no);
    if (s.empty()) continue;
    if (s[0] == '#') {
      l.expect('#');
      l.spaces();
      const std::string kind = l.word();
      if (kind != "HELP" && kind != "TYPE") continue;  // a comment
      l.spaces();
      const std::string name = l.name(true);
      if (done.count(name) || current == name) l.fail("metadata after the family's samples");
      PromFamily& f = fams[name];
      f.name = name;
      if (kind == "HELP") {
        if (!f.help.empty()) l.fail("second HELP");
        l.expect(' ');
        f.help = l.rest();
        if (f.help.empty()) l.fail("empty HELP");
      } else {
        if (!f.type.empty()) l.fail("second TYPE");
        l.expect(' ');
        f.type = l.word();
        static const std::set<std::string> types{"counter", "gauge", "histogram", "summary",
                                                 "untyped"};
        if (!types.count(f.type)) l.fail("unknown type");
        if (!l.at_end()) l.fail("trailing text");
      }
      continue;
    }
    PromSample sm;
    sm.name = l.name(true);
    if (l.peek() == '{') {
      l.expect('{');
      while (l.peek() != '}') {
        const std::string k = l.name(false);
        l.expect('=');
        if (!sm.labels.emplace(k, l.quoted()).second) l.fail("label " + k + " twice");
        if (l.peek() == ',') l.expect(',');
      }
      l.expect('}');
    }
    l.expect(' ');
    sm.value = number(l.word(), l);
    if (!l.at_end()) {  // a timestamp
      l.expect(' ');
      const std::string ts = l.word();
      if (ts.empty() || ts.find_first_not_of("-0123456789") != std::string::npos || !l.at_end())
        l.fail("bad timestamp");
    }
    const std::string fam = family_of(sm.name, fams);
    auto it = fams.find(fam);
    if (it == fams.end() || it->second.type.empty()) l.fail("sample without a TYPE line");
    if (it->second.help.empty()) l.fail("sample without a HELP line");
    if (fam != current) {
      if (done.count(fam)) l.fail("the family's samples are not together");
      if (!current.empty()) done.insert(current);
      current = fam;
    }
    const std::string type = it->second.type;
    if (type == "counter" &&
        (sm.name.size() < 6 || sm.name.compare(sm.name.size() - 6, 6, "_total") != 0))
      l.fail("a counter not named *_total");
    if ((type == "counter" || type == "histogram") && sm.value < 0) l.fail("negative count");
    std::string key = sm.name;
    for (const auto& [k, v] : sm.labels) key += "\x1f" + k + "\x1e" + v;
    if (!series.insert(key).second) l.fail("duplicate series");
    it->second.samples.push_back(std::move(sm));
  }
  for (const auto& [name, f] : fams) {
    if (f.type.empty()) throw std::runtime_error(name + ": HELP without TYPE");
    if (f.help.empty()) throw std::runtime_error(name + ": TYPE without HELP");
    if (f.type == "histogram") check_histogram(f);
  }
  return page;
}

}  // namespace sandwich::test
