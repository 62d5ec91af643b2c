// The Router of `embed serve`: routing by model, load on first use, least-recently-used unloading
// under --max-memory, and the server-wide listings (router.h).
#include "tools/server/router.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "gguf/file.h"
#include "source/model_source.h"

#include "tools/server/api_common.h"

namespace embed::server {
namespace {

using Clock = std::chrono::steady_clock;

bool is_listing(const std::string& path) {
  return path == "/v1/models" || path == "/api/tags" || path == "/api/ps" || path == "/metrics";
}

// TEI's routes carry no model: they go to the first model, whatever the body says.
bool is_tei_only(const std::string& path) {
  return path == "/embed" || path == "/embed_all" || path == "/decode" || path == "/info" || path == "/health" ||
         path == "/openapi.json";
}

ErrorShape shape_of(const std::string& path) { return error_shape_of(path); }

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1u << 19)) >> 20) + " MiB"; }

}  // namespace

uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

uint64_t expected_resident_bytes(const std::string& model) {
  std::string source = model;
  std::error_code ec;
  if (!std::filesystem::exists(source, ec)) {
    // A Hub name: fetched into the Hugging Face cache now (files, not resident memory), so its
    // files give the estimate; the load then finds them there without a request.
    try {
      SourceOptions quiet;
      quiet.progress = false;
      source = locate_model(source, quiet).path;
    } catch (const std::exception&) {
      return 0;  // not reachable now: its load says why
    }
  }
  if (std::filesystem::is_directory(source, ec)) {
    uint64_t bytes = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(source, ec))
      if (e.is_regular_file(ec)) bytes += e.file_size(ec);
    return 3 * bytes;
  }
  if (!std::filesystem::is_regular_file(source, ec)) return 0;
  try {
    const gguf::File f = gguf::File::open(source);
    uint64_t bytes = 4 * f.data_offset();
    for (const gguf::TensorInfo& t : f.tensors()) {
      const auto n = static_cast<uint64_t>(t.n_elements());
      const bool floating = t.type == gguf::TensorType::F32 || t.type == gguf::TensorType::F16 || t.type == gguf::TensorType::BF16;
      bytes += floating ? 4 * n : std::max<uint64_t>(t.nbytes, n);
    }
    return bytes;
  } catch (const std::exception&) {
    return 0;  // not a GGUF the reader takes: its load says why
  }
}

LoadedModel::~LoadedModel() {
  api.reset();  // it refers to the scheduler
  if (scheduler) scheduler->stop();
  scheduler.reset();
  model.reset();
}

Router::Router(std::vector<ServedModel> models, Metrics& metrics, const RouterConfig& config) : metrics_(metrics), config_(config) {
  for (ServedModel& m : models) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->served = std::move(m);
  }
}

Router::~Router() = default;

void Router::answer(const HttpRequest& request, const Reply& reply, HttpResponse r, const std::string& route) {
  metrics_.request("", route, r.status);
  if (!config_.cors_origin.empty() && (config_.cors_origin == "*" || config_.cors_origin == request.origin)) {
    r.headers.emplace_back("Access-Control-Allow-Origin", config_.cors_origin);
    if (config_.cors_origin != "*") r.headers.emplace_back("Vary", "Origin");
  }
  reply(std::move(r));
}

void Router::handle(HttpRequest request, Reply reply) {
  const ErrorShape shape = shape_of(request.path);
  bool draining;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draining = draining_;
  }
  if (draining)
    return answer(request, reply, error_response(ApiError{503, "Unhealthy", "the server is shutting down", "", -1}, shape), "other");
  // Preflight requests go to a model's Api, which answers them for every route alike.
  if (is_listing(request.path) && request.method != "OPTIONS") return listing(request, reply);
  Slot* slot = route(request, reply);
  if (!slot) return;
  const std::shared_ptr<LoadedModel> loaded = acquire(*slot);
  if (!loaded) {
    std::string why;
    int status;
    bool busy;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      why = slot->load_error;
      status = slot->load_status;
      busy = slot->load_busy;
    }
    HttpResponse r = error_response(
        ApiError{status, status == 507 ? "InsufficientMemory" : "Unhealthy",
                 "model '" + slot->served.name + "' (" + slot->served.source + ") cannot be served: " + why, "model", -1},
        shape);
    if (busy) r.headers.emplace_back("Retry-After", "1");
    return answer(request, reply, std::move(r), request.path);
  }
  // acquire counted this request in slot->users: the model stays loaded until it is answered.
  loaded->api->handle(std::move(request), [this, slot, reply = std::move(reply)](HttpResponse r) {
    reply(std::move(r));
    std::lock_guard<std::mutex> lock(mutex_);
    slot->users--;
  });
}

Router::Slot* Router::route(const HttpRequest& request, const Reply& reply) {
  // One model: every request is its own (its Api checks the names Ollama's routes give).
  if (slots_.size() == 1 || request.method != "POST" || is_tei_only(request.path)) return slots_.front().get();
  json body;
  try {
    body = json::parse(request.body);
  } catch (const json::parse_error&) {
    return slots_.front().get();  // the first model's Api answers the malformed body
  }
  const json* m = body.is_object() && body.contains("model") ? &body["model"] : nullptr;
  if ((!m || m->is_null()) && request.path == "/api/show" && body.is_object() && body.contains("name")) m = &body["name"];
  // No model (or not a string, which the Api then refuses naming the field): the first model.
  if (!m || !m->is_string() || m->get_ref<const std::string&>().empty()) return slots_.front().get();
  const std::string& name = m->get_ref<const std::string&>();
  const bool ollama = shape_of(request.path) == ErrorShape::Ollama;
  for (const auto& s : slots_)
    if (s->served.name == name || (ollama && ollama_name_key(s->served.name) == ollama_name_key(name))) return s.get();
  std::string served;
  for (const auto& s : slots_) served += (served.empty() ? "'" : ", '") + (ollama ? ollama_tagged(s->served.name) : s->served.name) + "'";
  answer(request, reply, error_response(ApiError{404, "NotFound", "model '" + name + "' is not served here (served: " + served + ")", "model", -1},
                                        shape_of(request.path)),
         request.path);
  return nullptr;
}

void Router::adopt(size_t i, std::unique_ptr<LoadedModel> loaded, uint64_t resident) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& slot = *slots_.at(i);
  slot.loaded = std::move(loaded);
  slot.resident = resident;
  slot.last_used = Clock::now();
}

void Router::set_connections(std::function<size_t()> f) {
  std::lock_guard<std::mutex> lock(mutex_);
  connections_ = std::move(f);
  for (const auto& s : slots_)
    if (s->loaded) s->loaded->api->set_connections(connections_);
}

void Router::set_poster(std::function<void(std::function<void()>)> post) {
  std::lock_guard<std::mutex> lock(mutex_);
  post_ = std::move(post);
  for (const auto& s : slots_)
    if (s->loaded) s->loaded->api->set_poster(post_);
}

std::shared_ptr<LoadedModel> Router::acquire(Slot& slot) {
  // Models grow after their load (pages of their mapping first touched, scratch of their passes):
  // the bound is kept at every request, not only at loads.
  make_room(&slot, 0);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (slot.loaded) {
      slot.users++;
      slot.last_used = Clock::now();
      return slot.loaded;
    }
  }
  std::lock_guard<std::mutex> one_load(loads_);
  uint64_t need = 0;
  bool measured = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (slot.loaded) {  // another request loaded it meanwhile
      slot.users++;
      slot.last_used = Clock::now();
      return slot.loaded;
    }
    measured = slot.resident > 0;
    need = slot.resident;
  }
  if (!measured && config_.max_memory) {
    if (!slot.expected_known) {  // read under loads_: one reader
      slot.expected = expected_resident_bytes(slot.served.source);
      slot.expected_known = true;
    }
    need = slot.expected;
  }
  const std::string need_text = need ? "about " + mib(need) + (measured ? " (what its last load added)" : " (estimated from its file)") : "";
  if (config_.max_memory && need) {
    // Room first, so the bound holds while it loads: idle models go, least recently used first.
    const uint64_t resident = make_room(&slot, need);
    if (resident + need > config_.max_memory) {
      // What the models still loaded (each serving a request) hold, by their measured loads: the
      // rest is the server's own, which no unloading frees.
      uint64_t models = 0;
      std::string busy;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& s : slots_)
          if (s.get() != &slot && s->loaded) {
            models += s->resident;
            busy += (busy.empty() ? "'" : ", '") + s->served.name + "'";
          }
      }
      const uint64_t own = resident > models ? resident - models : 0;
      std::lock_guard<std::mutex> lock(mutex_);
      slot.load_busy = false;
      if (busy.empty() || own + need > config_.max_memory) {
        slot.load_status = 507;
        slot.load_error = "it needs " + need_text + " and the server holds " + mib(own) + " without " + (busy.empty() ? "any model" : "its models") +
                          ": it does not fit under --max-memory " + mib(config_.max_memory) + " even alone";
      } else {
        slot.load_status = 503;
        slot.load_busy = true;
        slot.load_error = "it needs " + need_text + " and the models serving requests now (" + busy + ") leave " +
                          mib(config_.max_memory > resident ? config_.max_memory - resident : 0) + " under --max-memory " +
                          mib(config_.max_memory) + "; retry when they are done";
      }
      return nullptr;
    }
  }
  ::malloc_trim(0);
  const uint64_t before = resident_bytes();
  std::shared_ptr<LoadedModel> loaded;
  std::string error;
  try {
    loaded = slot.served.load();
    if (connections_) loaded->api->set_connections(connections_);
    if (post_) loaded->api->set_poster(post_);
  } catch (const std::exception& e) {
    error = e.what();
  }
  int status = 503;
  bool busy = false;
  if (loaded) {
    // Loading frees its working buffers (reads, conversion) to the heap: given back first, the
    // measure is what the loaded model holds.
    ::malloc_trim(0);
    const uint64_t after = resident_bytes();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slot.resident = after > before ? after - before : 0;
    }
    // Without an expectation (nothing to go by) the room is made after the load.
    const uint64_t now = make_room(&slot, 0);
    if (config_.max_memory && now > config_.max_memory) {
      loaded.reset();
      ::malloc_trim(0);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& s : slots_) busy = busy || (s.get() != &slot && s->loaded);
      }
      // Models still loaded are serving requests (make_room unloaded the idle ones): it may fit
      // when they are done (503, Retry-After); alone, it never will (507).
      status = busy ? 503 : 507;
      error = "loaded, it took " + mib(after > before ? after - before : 0) + " resident and the process would hold " + mib(now) +
              ", over --max-memory " + mib(config_.max_memory) + (busy ? " with the models serving requests now; retry when they are done" : "");
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  slot.load_error = error;
  slot.load_status = status;
  slot.load_busy = busy;
  if (!loaded) return nullptr;
  std::fprintf(stderr, "embed serve: loaded model '%s' (%s): %s resident%s%s\n", slot.served.name.c_str(), slot.served.source.c_str(),
               mib(slot.resident).c_str(), need_text.empty() ? "" : ", expected ", need_text.c_str());
  slot.loaded = loaded;
  slot.users++;
  slot.last_used = Clock::now();
  return loaded;
}

uint64_t Router::make_room(const Slot* keep, uint64_t need) {
  if (!config_.max_memory) return 0;
  for (;;) {
    std::shared_ptr<LoadedModel> victim;
    Slot* from = nullptr;
    const uint64_t resident = resident_bytes();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (resident + need <= config_.max_memory) return resident;
      // The least recently used model with nothing in flight (users counts requests handed to its
      // Api; in_flight covers the Api's own bookkeeping after it answered).
      for (const auto& s : slots_)
        if (s.get() != keep && s->loaded && s->users == 0 && s->loaded->api->in_flight() == 0 &&
            (!from || s->last_used < from->last_used))
          from = s.get();
      if (!from) return resident;
      victim = std::move(from->loaded);
    }
    victim.reset();
    ::malloc_trim(0);  // give the freed heap back, so resident memory shows the unload
    std::fprintf(stderr, "embed serve: unloaded model '%s' (least recently used; %s resident, %s wanted, --max-memory %s): %s resident now\n",
                 from->served.name.c_str(), mib(resident).c_str(), mib(need).c_str(), mib(config_.max_memory).c_str(), mib(resident_bytes()).c_str());
  }
}

void Router::listing(const HttpRequest& request, const Reply& reply) {
  const std::string& path = request.path;
  const ErrorShape shape = shape_of(path);
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse r = error_response(ApiError{405, "MethodNotAllowed", request.method + " is not allowed on " + path + " (allowed: GET)", "", -1}, shape);
    r.headers.emplace_back("Allow", "GET");
    return answer(request, reply, std::move(r), path);
  }
  if (path != "/metrics" && !config_.api_key.empty() && !authorized(request.authorization, config_.api_key))
    return answer(request, reply, error_response(ApiError{401, "Unauthorized", "missing or wrong API key (Authorization: Bearer KEY)", "", -1}, shape),
                  path);
  // The loaded models, kept loaded while they are described.
  std::vector<std::pair<const Slot*, std::shared_ptr<LoadedModel>>> models;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& s : slots_) models.emplace_back(s.get(), s->loaded);
  }
  HttpResponse r;
  if (path == "/v1/models") {
    json data = json::array();
    for (const auto& [s, loaded] : models) data.push_back({{"id", s->served.name}, {"object", "model"}, {"created", 0}, {"owned_by", "embed"}});
    r.body = json{{"object", "list"}, {"data", data}}.dump(-1, ' ', false, json::error_handler_t::replace);
  } else if (path == "/api/tags" || path == "/api/ps") {
    // /api/tags: every served model (one not loaded yet by name only: its size and digest are
    // read from the loaded model); /api/ps: the loaded ones, as Ollama lists the running models.
    const bool running = path == "/api/ps";
    json list = json::array();
    for (const auto& [s, loaded] : models) {
      if (loaded) list.push_back(loaded->api->ollama_entry(running));
      else if (!running) list.push_back({{"name", ollama_tagged(s->served.name)}, {"model", ollama_tagged(s->served.name)}});
    }
    r.body = json{{"models", list}}.dump(-1, ' ', false, json::error_handler_t::replace);
  } else {
    std::vector<Metrics::ModelGauges> gauges;
    for (const auto& [s, loaded] : models) {
      Metrics::ModelGauges g;
      g.model = s->served.name;
      if (loaded) g.queue_depth = loaded->scheduler->queued_sequences(), g.inside = loaded->scheduler->requests_inside();
      gauges.push_back(g);
    }
    r.content_type = "text/plain; version=0.0.4";
    r.body = metrics_.render(gauges, connections_ ? connections_() : 0);
  }
  answer(request, reply, std::move(r), path);
}

void Router::drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  draining_ = true;
  for (const auto& s : slots_)
    if (s->loaded) s->loaded->api->drain();
}

size_t Router::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const auto& s : slots_) n += s->loaded ? s->loaded->api->in_flight() : 0;
  return n;
}

void Router::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : slots_)
    if (s->loaded) s->loaded->scheduler->stop();
}

}  // namespace embed::server
