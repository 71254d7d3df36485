#pragma once
// The heavy headers most tests include, parsed once (tests/CMakeLists.txt precompiles them).
#include <utility>  // Boost 1.74 asio needs it under C++20 before its own headers

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
