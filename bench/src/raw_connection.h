#pragma once
// Misbehaving clients for the soak test, on plain blocking sockets: one that hangs up in the
// middle of a streamed answer, and one that never reads its answer at all.
#include <cstddef>
#include <string>

#include "bench/http_client.h"

namespace sandwich::bench {

// The full HTTP/1.1 POST request text (JSON body, Connection: close).
std::string post_request_text(const Url& url, const std::string& path, const std::string& body,
                              const std::string& bearer);

// Sends the request, reads until `bytes` of the answer (head included) have arrived or
// timeout_s has passed, then closes. Returns the status of the answer, 0 if none arrived.
int hang_up_after(const Url& url, const std::string& request, size_t bytes, double timeout_s);

// Sends the request with the smallest receive buffer the kernel allows, never reads, and
// closes after hold_s seconds. Returns false if it could not connect or send.
bool never_read(const Url& url, const std::string& request, double hold_s);

}  // namespace sandwich::bench
