#pragma once
// Short names the HTTP test helpers use for Boost.Asio and Beast.
#include <utility>  // Boost 1.74 asio needs it under C++20 before its own headers

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace sandwich::test {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using json = nlohmann::json;

}  // namespace sandwich::test
