#include "engine/grammar/grammar.h"

#include <vector>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_rules.h"
#include "grammar/pushdown_stacks.h"

namespace sandwich::engine::grammar {

Grammar::Grammar(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Grammar::~Grammar() = default;

std::shared_ptr<const Grammar> Grammar::parse(std::string_view gbnf, std::string_view root) {
  auto impl = std::make_unique<Impl>(parse_gbnf(gbnf, root));
  return std::shared_ptr<const Grammar>(new Grammar(std::move(impl)));
}

bool Grammar::accepts(std::string_view text) const {
  PushdownStacks stacks(*impl_);
  std::vector<int32_t> now, next;
  stacks.initial(now);
  for (char c : text) {
    if (now.empty()) return false;
    stacks.step(now, static_cast<uint8_t>(c), next);
    now.swap(next);
  }
  return !now.empty() && now.front() == PushdownStacks::kEmpty;
}

}  // namespace sandwich::engine::grammar
