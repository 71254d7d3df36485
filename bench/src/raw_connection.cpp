#include "raw_connection.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace sandwich::bench {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

bool open(asio::io_context& ioc, tcp::socket& s, const Url& url, int rcvbuf) {
  boost::system::error_code ec;
  tcp::resolver resolver(ioc);
  auto endpoints = resolver.resolve(url.host, std::to_string(url.port), ec);
  if (ec) return false;
  s.open(endpoints.begin()->endpoint().protocol(), ec);
  if (ec) return false;
  // The buffer must be set before connecting for the advertised window to shrink.
  if (rcvbuf > 0) s.set_option(asio::socket_base::receive_buffer_size(rcvbuf), ec);
  asio::connect(s, endpoints, ec);
  return !ec;
}

}  // namespace

std::string post_request_text(const Url& url, const std::string& path, const std::string& body,
                              const std::string& bearer) {
  std::string r = "POST " + url.prefix + path + " HTTP/1.1\r\nHost: " + url.host + ":" +
                  std::to_string(url.port) +
                  "\r\nContent-Type: application/json\r\nConnection: close\r\n";
  if (!bearer.empty()) r += "Authorization: Bearer " + bearer + "\r\n";
  return r + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

int hang_up_after(const Url& url, const std::string& request, size_t bytes, double timeout_s) {
  asio::io_context ioc;
  tcp::socket s(ioc);
  if (!open(ioc, s, url, 0)) return 0;
  const timeval tv{static_cast<time_t>(timeout_s),
                   static_cast<suseconds_t>((timeout_s - static_cast<time_t>(timeout_s)) * 1e6)};
  setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  boost::system::error_code ec;
  asio::write(s, asio::buffer(request), ec);
  if (ec) return 0;
  std::string got;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (got.size() < bytes && std::chrono::steady_clock::now() < deadline) {
    const size_t n = s.read_some(asio::buffer(buf), ec);
    if (ec) break;
    got.append(buf, n);
  }
  s.close(ec);  // mid-answer: the server sees a reset or a failed write
  if (got.rfind("HTTP/1.", 0) != 0 || got.size() < 12) return 0;
  return std::atoi(got.c_str() + 9);
}

bool never_read(const Url& url, const std::string& request, double hold_s) {
  asio::io_context ioc;
  tcp::socket s(ioc);
  if (!open(ioc, s, url, 1)) return false;
  boost::system::error_code ec;
  asio::write(s, asio::buffer(request), ec);
  if (ec) return false;
  std::this_thread::sleep_for(std::chrono::duration<double>(hold_s));
  s.close(ec);
  return true;
}

}  // namespace sandwich::bench
