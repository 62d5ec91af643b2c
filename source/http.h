// A small HTTP client over libcurl for the Hub client (source/hub_client.h): one request at a
// time, headers of the final answer, bodies collected or streamed to a callback. libcurl is opened
// with dlopen on the first request, so nothing links against it and a machine without it still
// runs local files (the Python extension needs no shared library beyond glibc and libstdc++).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"

namespace embed::source {

// Response headers in arrival order; names compared case-insensitively.
struct HttpHeaders {
  std::vector<std::pair<std::string, std::string>> items;
  std::optional<std::string> get(const std::string& name) const;  // the last value of `name`
};

struct HttpResponse {
  long status = 0;
  HttpHeaders headers;
  std::string body;  // collected when the request has no on_data
  std::string url;   // the URL that answered (after redirects curl followed)
};

struct HttpRequest {
  std::string method = "GET";         // GET or HEAD
  std::string url;
  std::vector<std::string> headers;   // "Name: value"
  bool follow_redirects = false;      // curl follows them (it drops Authorization on another host)
  double connect_timeout = 10;        // seconds to connect
  double read_timeout = 10;           // seconds without a byte before the transfer is abandoned
  // Streaming: on_response sees the status and headers of the answer that carries the body
  // before its first byte; when it returns false the body goes to HttpResponse::body instead
  // (an error page). on_data gets each chunk; returning false stops the transfer.
  std::function<bool(long status, const HttpHeaders&)> on_response;
  std::function<bool(const char* data, size_t n)> on_data;
};

// No answer from the server: name resolution, connection, TLS, a connection cut in the middle of
// a body, a timeout. `retryable` marks what a retry may cure (a cut or a timeout).
class TransportError : public Error {
 public:
  TransportError(const std::string& message, bool retryable, bool stopped_by_caller)
      : Error(ErrorKind::Io, message), retryable_(retryable), stopped_(stopped_by_caller) {}
  bool retryable() const { return retryable_; }
  bool stopped_by_caller() const { return stopped_; }

 private:
  bool retryable_, stopped_;
};

// Performs the request; throws TransportError when no complete answer came back, and
// embed::Error(Io) when libcurl itself cannot be opened. HTTP error statuses are answers.
HttpResponse http_request(const HttpRequest& r);

}  // namespace embed::source
