// libcurl, opened with dlopen (the soname libcurl.so.4 has kept its ABI since 2006; curl.h gives
// the types and constants), and the one request function the Hub client needs.
#include "source/http.h"

#include <curl/curl.h>
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>

namespace embed::source {
namespace {

// The libcurl functions used, resolved by name.
struct CurlLibrary {
  CURLcode (*global_init)(long) = nullptr;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
  std::string error;  // why it could not be opened
};

template <class F>
bool resolve(void* handle, const char* name, F*& out) {
  out = reinterpret_cast<F*>(dlsym(handle, name));
  return out != nullptr;
}

const CurlLibrary& curl() {
  static CurlLibrary lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = nullptr;
    // Debian's OpenSSL build, then its GnuTLS build (same API and ABI).
    for (const char* name : {"libcurl.so.4", "libcurl-gnutls.so.4"})
      if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!h) {
      lib.error = "downloading from the Hugging Face Hub needs libcurl (libcurl.so.4), which is not installed "
                  "(Debian/Ubuntu: apt-get install libcurl4); local model files need nothing more";
      return;
    }
    const bool ok = resolve(h, "curl_global_init", lib.global_init) && resolve(h, "curl_easy_init", lib.easy_init) &&
                    resolve(h, "curl_easy_setopt", lib.easy_setopt) && resolve(h, "curl_easy_perform", lib.easy_perform) &&
                    resolve(h, "curl_easy_getinfo", lib.easy_getinfo) && resolve(h, "curl_easy_cleanup", lib.easy_cleanup) &&
                    resolve(h, "curl_easy_strerror", lib.easy_strerror) && resolve(h, "curl_slist_append", lib.slist_append) &&
                    resolve(h, "curl_slist_free_all", lib.slist_free_all);
    if (!ok) {
      lib.error = std::string("libcurl.so.4 lacks a function embed needs: ") + dlerror();
      return;
    }
    if (lib.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) lib.error = "libcurl could not be initialised (curl_global_init)";
  });
  if (!lib.error.empty()) fail(ErrorKind::Io, lib.error);
  return lib;
}

bool iequals(const std::string& a, const std::string& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower((unsigned char)x) == std::tolower((unsigned char)y); });
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) i++;
  return s.substr(i);
}

// What one transfer accumulates from curl's callbacks.
struct Transfer {
  const HttpRequest* req = nullptr;
  HttpResponse* resp = nullptr;
  long status = 0;           // of the header block being read
  bool started = false;      // on_response has run
  bool stopped = false;      // a callback asked to stop
  bool collect = false;      // on_response declined the body: it is collected for the message
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new answer (after a redirect or a 100 Continue)
    t->resp->headers.items.clear();
    const size_t sp = line.find(' ');
    t->status = sp == std::string::npos ? 0 : std::strtol(line.c_str() + sp + 1, nullptr, 10);
  } else if (const size_t colon = line.find(':'); colon != std::string::npos) {
    t->resp->headers.items.emplace_back(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  if (!t->started && t->req->on_data) {
    t->started = true;
    t->collect = t->req->on_response && !t->req->on_response(t->status, t->resp->headers);
  }
  if (!t->req->on_data || t->collect) {
    if (t->resp->body.size() < (1 << 20)) t->resp->body.append(data, bytes);  // an error body, for the message
    return bytes;
  }
  if (!t->req->on_data(data, bytes)) {
    t->stopped = true;
    return 0;
  }
  return bytes;
}

// The CA bundle named by the environment (curl's own variable, then the ones Python's requests
// and OpenSSL read), for a Hub mirror behind a private CA.
const char* ca_bundle() {
  for (const char* var : {"CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"})
    if (const char* v = std::getenv(var); v && *v) return v;
  return nullptr;
}

bool retryable(CURLcode c) {
  switch (c) {
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::optional<std::string> HttpHeaders::get(const std::string& name) const {
  for (auto it = items.rbegin(); it != items.rend(); ++it)
    if (iequals(it->first, name)) return it->second;
  return std::nullopt;
}

HttpResponse http_request(const HttpRequest& r) {
  const CurlLibrary& c = curl();
  CURL* h = c.easy_init();
  if (!h) fail(ErrorKind::Io, "libcurl: curl_easy_init failed");
  curl_slist* headers = nullptr;
  for (const std::string& line : r.headers) headers = c.slist_append(headers, line.c_str());
  HttpResponse resp;
  Transfer t{&r, &resp};
  char error[CURL_ERROR_SIZE] = {};
  c.easy_setopt(h, CURLOPT_URL, r.url.c_str());
  c.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for timeouts
  c.easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  c.easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  if (r.method == "HEAD") c.easy_setopt(h, CURLOPT_NOBODY, 1L);
  c.easy_setopt(h, CURLOPT_FOLLOWLOCATION, r.follow_redirects ? 1L : 0L);
  c.easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  c.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout * 1000));
  // "No byte for read_timeout seconds" is curl's low-speed limit of 1 byte/s over that time.
  c.easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  c.easy_setopt(h, CURLOPT_LOW_SPEED_TIME, std::max(1L, static_cast<long>(r.read_timeout)));
  c.easy_setopt(h, CURLOPT_HEADERFUNCTION, &on_header);
  c.easy_setopt(h, CURLOPT_HEADERDATA, &t);
  c.easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_body);
  c.easy_setopt(h, CURLOPT_WRITEDATA, &t);
  if (const char* ca = ca_bundle()) c.easy_setopt(h, CURLOPT_CAINFO, ca);
  const CURLcode rc = c.easy_perform(h);
  long status = 0;
  c.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  char* effective = nullptr;
  c.easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &effective);
  resp.status = status;
  resp.url = effective ? effective : r.url;
  c.slist_free_all(headers);
  c.easy_cleanup(h);
  if (rc != CURLE_OK) {
    std::string what = error[0] ? error : c.easy_strerror(rc);
    throw TransportError(r.method + " " + r.url + ": " + trim(what), retryable(rc), t.stopped);
  }
  // A body of zero bytes never reached on_body: the caller still learns the answer.
  if (r.on_response && !t.started && r.method != "HEAD") r.on_response(status, resp.headers);
  return resp;
}

}  // namespace embed::source
