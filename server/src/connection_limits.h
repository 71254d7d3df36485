#pragma once
// Which connections the HTTP server takes: at most max_total, at most max_per_client from one
// client address (so that one client cannot hold the whole pool), and a few reserved slots
// beyond those for cheap routes such as /health, so that a full pool, or a client address at its
// limit, still gets them answered. One address may hold only a quarter of the reserve.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace sandwich::server {

class ConnectionLimits {
 public:
  enum class Kind { Normal, Reserved, TooMany, TooManyFromClient, Dropped };

  // A connection's place; gives it back when destroyed. Refusals hold one too, so that the
  // connections being refused (each waits a moment for its 503 to be read) stay bounded.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& o) noexcept { *this = std::move(o); }
    Ticket& operator=(Ticket&& o) noexcept;
    ~Ticket() { release(); }
    Kind kind() const { return kind_; }
    // Its address had all the ordinary connections it may hold.
    bool client_at_limit() const { return client_at_limit_; }

   private:
    friend class ConnectionLimits;
    void release();
    ConnectionLimits* owner_ = nullptr;
    std::string address_;
    Kind kind_ = Kind::Dropped;
    bool client_at_limit_ = false;
  };

  ConnectionLimits(int max_total, int max_per_client, int reserved);
  // Admits a connection from `address`; a Dropped ticket means: close it without a word.
  Ticket admit(const std::string& address);
  int open() const;  // admitted (normal and reserved) connections

 private:
  void release(const std::string& address, Kind kind);

  const int max_total_, max_per_client_, reserved_;
  mutable std::mutex mu_;
  int normal_ = 0, reserved_used_ = 0, refusing_ = 0;
  struct Held {
    int normal = 0, reserved = 0;
  };
  std::map<std::string, Held> per_client_;
};

}  // namespace sandwich::server
