#include "connection_limits.h"

#include <algorithm>
#include <utility>

namespace sandwich::server {

ConnectionLimits::Ticket& ConnectionLimits::Ticket::operator=(Ticket&& o) noexcept {
  if (this != &o) {
    release();
    owner_ = std::exchange(o.owner_, nullptr);
    address_ = std::move(o.address_);
    kind_ = o.kind_;
  }
  return *this;
}

void ConnectionLimits::Ticket::release() {
  if (auto* owner = std::exchange(owner_, nullptr)) owner->release(address_, kind_);
}

ConnectionLimits::ConnectionLimits(int max_total, int max_per_client, int reserved)
    : max_total_(max_total), max_per_client_(max_per_client), reserved_(reserved) {}

ConnectionLimits::Ticket ConnectionLimits::admit(const std::string& address) {
  Ticket t;
  std::lock_guard<std::mutex> lock(mu_);
  Held& mine = per_client_[address];
  t.client_at_limit_ = mine.normal >= max_per_client_;
  if (!t.client_at_limit_ && normal_ < max_total_)
    t.kind_ = Kind::Normal;
  else if (reserved_used_ < reserved_ && mine.reserved < std::max(1, reserved_ / 4))
    t.kind_ = Kind::Reserved;
  else
    t.kind_ = t.client_at_limit_ ? Kind::TooManyFromClient : Kind::TooMany;
  const bool refusal = t.kind_ == Kind::TooMany || t.kind_ == Kind::TooManyFromClient;
  // Refusals beyond this many at once are not worth an answer.
  if (refusal && refusing_ >= max_total_) t.kind_ = Kind::Dropped;
  switch (t.kind_) {
    case Kind::Normal:
      ++normal_, ++mine.normal;
      break;
    case Kind::Reserved:
      ++reserved_used_, ++mine.reserved;
      break;
    case Kind::TooMany:
    case Kind::TooManyFromClient:
      ++refusing_;
      break;
    case Kind::Dropped:
      break;
  }
  if (mine.normal + mine.reserved == 0) per_client_.erase(address);
  if (t.kind_ != Kind::Dropped) {
    t.owner_ = this;
    t.address_ = address;
  }
  return t;
}

void ConnectionLimits::release(const std::string& address, Kind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  if (kind == Kind::TooMany || kind == Kind::TooManyFromClient) {
    --refusing_;
    return;
  }
  auto it = per_client_.find(address);
  if (kind == Kind::Normal) {
    --normal_;
    if (it != per_client_.end()) --it->second.normal;
  } else {
    --reserved_used_;
    if (it != per_client_.end()) --it->second.reserved;
  }
  if (it != per_client_.end() && it->second.normal + it->second.reserved == 0)
    per_client_.erase(it);
}

int ConnectionLimits::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return normal_ + reserved_used_;
}

}  // namespace sandwich::server
