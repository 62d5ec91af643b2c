// Beast/Asio transport: one acceptor, a strand per connection, a deadline on every read and
// write, parser limits on headers and body, and a readability watch while a request computes.
#include "tools/server/http.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.h"

namespace embed::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

std::chrono::milliseconds millis(double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); }

struct Shared {
  HttpOptions options;
  Handler& handler;
  std::atomic<size_t> connections{0};
  std::atomic<size_t> active{0};  // requests between read and the end of their answer's write
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Shared& shared) : stream_(std::move(socket)), shared_(shared) { shared_.connections++; }
  ~Session() {
    if (counted_) shared_.active--;
    shared_.connections--;
  }

  void start(bool over_limit) {
    if (over_limit) {
      HttpResponse r = refusal("", 503, "Overloaded", "too many open connections");
      r.headers.emplace_back("Retry-After", "1");
      keep_alive_ = false;
      return write(std::move(r));
    }
    read();
  }

 private:
  // Between requests of a keep-alive connection: wait at most keep_alive_timeout for the next
  // request's first bytes (pipelined bytes already read go straight on), then read it whole
  // within read_timeout. An idle client is closed without an answer.
  void wait_next() {
    if (buffer_.size() > 0) return read();
    stream_.expires_after(millis(shared_.options.keep_alive_timeout));
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec) return self->close();
      self->buffer_.commit(n);
      self->read();
    });
  }

  void read() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(shared_.options.header_limit));
    parser_->body_limit(shared_.options.payload_limit);
    stream_.expires_after(millis(shared_.options.read_timeout));
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::body_limit) return refuse(413, "the request body is larger than the payload limit of " +
                                                              std::to_string(shared_.options.payload_limit) + " bytes");
    if (ec == http::error::header_limit) return refuse(431, "the request headers are too large");
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted)
      return close();  // gone, idle or too slow: nothing to answer
    if (ec == http::error::partial_message) return close();  // truncated body: the client hung up
    if (ec) return refuse(400, "malformed HTTP request: " + ec.message());
    http::request<http::string_body> req = parser_->release();
    // The last request a connection may carry is answered with Connection: close.
    keep_alive_ = req.keep_alive() && ++requests_ < shared_.options.keep_alive_requests;
    shared_.active++;
    counted_ = true;
    HttpRequest r;
    r.method = std::string(req.method_string());
    const std::string target(req.target());
    r.path = target.substr(0, target.find('?'));
    r.authorization = std::string(req[http::field::authorization]);
    r.origin = std::string(req[http::field::origin]);
    r.content_type = std::string(req[http::field::content_type]);
    r.body = std::move(req.body());
    gone_ = r.gone;
    answered_ = false;
    watch_disconnect();
    auto self = shared_from_this();
    shared_.handler.handle(std::move(r), [self](HttpResponse res) {
      net::post(self->stream_.get_executor(), [self, res = std::move(res)]() mutable { self->write(std::move(res)); });
    });
  }

  // While the request computes: a readable socket that reads as end-of-file means the client
  // went away (data would be a pipelined request, left for the next read). The reactor may
  // report readiness it saw earlier, so a peek that would block just waits again; the peek never
  // blocks (a blocking one would stall this connection's strand, and its answer with it).
  void watch_disconnect() {
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), gone = gone_](beast::error_code ec) {
      if (ec || self->answered_ || gone != self->gone_) return;
      char c;
      beast::error_code peek_ec;
      tcp::socket& s = self->stream_.socket();
      s.non_blocking(true, peek_ec);
      const size_t n = s.receive(net::buffer(&c, 1), tcp::socket::message_peek, peek_ec);
      if (peek_ec == net::error::would_block || peek_ec == net::error::try_again) return self->watch_disconnect();
      if (n == 0) gone->store(true);
    });
  }

  void refuse(int status, const std::string& message) {
    // The path, when the request line was read (the message's target is set as soon as it is,
    // before the headers; a body over the limit is seen at the end of the headers): the answer
    // takes that route's API's error shape.
    std::string path;
    if (parser_) {
      const std::string target(parser_->get().target());
      path = target.substr(0, target.find('?'));
    }
    HttpResponse r = refusal(path, status, status == 400 ? "InvalidRequest" : "Validation", message);
    keep_alive_ = false;
    write(std::move(r));
  }

  HttpResponse refusal(const std::string& path, int status, const std::string& type, const std::string& message) const {
    if (shared_.options.refusal) return shared_.options.refusal(path, status, type, message);
    HttpResponse r;
    r.status = status;
    r.body = nlohmann::json{{"error", message}, {"error_type", type}}.dump();
    return r;
  }

  void write(HttpResponse r) {
    answered_ = true;
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), 11);
    res->set(http::field::server, "embed");
    res->set(http::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res->set(k, v);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    stream_.expires_after(millis(shared_.options.write_timeout));
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (self->counted_) self->shared_.active--;
      self->counted_ = false;
      if (ec) return self->close();
      if (!self->keep_alive_) return self->linger();
      self->wait_next();
    });
  }

  // Closing with unread input makes the kernel reset the connection, which can destroy the
  // answer before the client reads it (a 413 sent while the client still sends its body). So:
  // stop sending, read and drop what the client still sends for at most a second, then close.
  void linger() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(std::chrono::seconds(1));
    drain_.resize(16384);
    stream_.async_read_some(net::buffer(drain_), [self = shared_from_this()](beast::error_code e, size_t) {
      if (e) return self->close();
      self->drain_more();
    });
  }
  void drain_more() {
    stream_.async_read_some(net::buffer(drain_), [self = shared_from_this()](beast::error_code e, size_t) {
      if (e) return self->close();
      self->drain_more();
    });
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  beast::tcp_stream stream_;
  Shared& shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<std::atomic<bool>> gone_;
  bool keep_alive_ = true;
  bool answered_ = true;
  bool counted_ = false;  // this request is counted in Shared::active
  size_t requests_ = 0;   // requests read on this connection
  std::vector<char> drain_;
};

// A periodic callback on the io_context (owned by its pending wait and by the server).
struct Ticker : std::enable_shared_from_this<Ticker> {
  Ticker(net::io_context& ioc, double p, std::function<void()> f) : timer(ioc), period(p), tick(std::move(f)) {}
  void arm() {
    timer.expires_after(millis(period));
    timer.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;
      self->tick();
      self->arm();
    });
  }
  net::steady_timer timer;
  double period;
  std::function<void()> tick;
};

}  // namespace

struct HttpServer::Impl {
  Impl(const HttpOptions& o, Handler& h) : shared{o, h}, ioc(std::max(1, o.threads)), acceptor(ioc) {}
  Shared shared;
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::vector<std::shared_ptr<Ticker>> tickers;

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (!acceptor.is_open()) return;
      if (!ec) {
        const bool over = shared.connections.load() >= shared.options.max_connections;
        std::make_shared<Session>(std::move(socket), shared)->start(over);
      }
      accept();
    });
  }
};

HttpServer::HttpServer(const HttpOptions& o, Handler& handler) : impl_(std::make_unique<Impl>(o, handler)) {
  beast::error_code ec;
  const auto address = net::ip::make_address(o.host, ec);
  if (ec) fail(ErrorKind::InvalidArgument, "--host '" + o.host + "' is not an IP address");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(o.port));
  tcp::acceptor& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) fail(ErrorKind::Io, "cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + ec.message());
  impl_->accept();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

size_t HttpServer::connections() const { return impl_->shared.connections.load(); }

size_t HttpServer::active() const { return impl_->shared.active.load(); }

void HttpServer::post(std::function<void()> fn) { net::post(impl_->ioc, std::move(fn)); }

void HttpServer::every(double period, std::function<void()> tick) {
  auto t = std::make_shared<Ticker>(impl_->ioc, period, std::move(tick));
  impl_->tickers.push_back(t);
  t->arm();
}

void HttpServer::run() {
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, impl_->shared.options.threads); i++) threads.emplace_back([this] { impl_->ioc.run(); });
  impl_->ioc.run();
  for (std::thread& t : threads) t.join();
}

void HttpServer::stop() {
  net::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
    for (auto& t : impl_->tickers) t->timer.cancel();
  });
  impl_->ioc.stop();
}

}  // namespace embed::server
