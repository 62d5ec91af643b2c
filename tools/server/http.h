// The HTTP transport of `embed serve` (Boost.Beast over Asio): accepting connections, reading
// requests within a header limit, a payload limit and a deadline, writing responses, keep-alive,
// and noticing clients that go away while their request is computed. It knows nothing of routes:
// each complete request goes to a Handler, which answers once, from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace embed::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without the query string
  std::string body;
  std::string authorization, origin, content_type;
  // Set when the client closes its connection before the answer is written.
  std::shared_ptr<std::atomic<bool>> gone = std::make_shared<std::atomic<bool>>(false);
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

using Reply = std::function<void(HttpResponse)>;

class Handler {
 public:
  virtual ~Handler() = default;
  // Called on a transport thread; `reply` must be called exactly once (from any thread).
  virtual void handle(HttpRequest request, Reply reply) = 0;
};

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 3000;                      // 0: any free port (see HttpServer::port)
  size_t payload_limit = 2000000;       // request body bytes (larger: 413)
  size_t header_limit = 16384;          // request line and headers (larger: 431)
  double read_timeout = 30;             // seconds to receive one whole request, from its first byte
  double write_timeout = 30;            // seconds to send one response
  double keep_alive_timeout = 30;       // seconds an idle keep-alive connection waits for its next request
  size_t keep_alive_requests = 1000;    // requests per connection; the last answer says Connection: close
  size_t max_connections = 1024;        // open connections (more: 503 and close)
  int threads = 2;                      // transport threads (parsing, tokenization)
  // The answer to a request the transport refuses before any route sees it (400 bytes that are
  // not HTTP, 413 a body over payload_limit, 431 headers over header_limit, 503 too many
  // connections), given its path when the request line was read ("" otherwise), the status, the
  // error_type and the message; unset: TEI's {"error", "error_type"}. The server sets it so each
  // API's clients get their own error shape.
  std::function<HttpResponse(const std::string& path, int status, const std::string& type, const std::string& message)> refusal;
};

class HttpServer {
 public:
  HttpServer(const HttpOptions& o, Handler& handler);  // binds; throws embed::Error(Io) when it cannot
  ~HttpServer();
  int port() const;                 // the bound port
  void run();                       // serves until stop(); returns after the threads end
  void stop();                      // thread-safe
  size_t connections() const;
  size_t active() const;            // requests read and not yet fully answered
  void post(std::function<void()> fn);  // runs fn on a transport thread
  // Calls `tick` every `period` seconds on a transport thread while running (drain checks).
  void every(double period, std::function<void()> tick);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace embed::server
