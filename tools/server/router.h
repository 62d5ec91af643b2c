// Several models in one `embed serve`: the Router is the transport's Handler, in front of one Api
// and Scheduler per loaded model. It routes a request by its body's "model" (OpenAI, Jina,
// Ollama and llama.cpp routes; TEI's routes and requests without a model go to the first model),
// answers the server-wide listings itself (/v1/models, /api/tags, /api/ps, /metrics), loads a
// model on its first request, and unloads the least recently used idle models when the process's
// resident memory (measured in /proc/self/statm) would exceed --max-memory: before a load, enough
// to fit the model's expected resident memory (what its previous load added, measured; the first
// time an estimate from its file, expected_resident_bytes), so the bound holds during loads too.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "tools/server/api.h"
#include "tools/server/http.h"
#include "tools/server/metrics.h"

namespace embed::server {

// One loaded model: what the Router drops to unload it (the Api first, then the scheduler's
// thread, then the model's weights).
struct LoadedModel {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Api> api;
  ~LoadedModel();
};

struct ServedModel {
  std::string name;    // the id requests name and listings show
  std::string source;  // the path or Hub name it loads from (for messages and /api/tags)
  // Loads it: a model, its scheduler and its Api with this name; throws (embed::Error or any
  // std::exception) with the reason it cannot be served.
  std::function<std::unique_ptr<LoadedModel>()> load;
};

struct RouterConfig {
  std::string api_key;      // as ApiConfig's: the listings need it too (not /metrics)
  std::string cors_origin;
  uint64_t max_memory = 0;  // bytes of resident memory; 0: no bound (nothing is unloaded)
};

// Resident memory of this process now, in bytes (/proc/self/statm).
uint64_t resident_bytes();

// What loading `source` on the CPU is expected to add to the resident memory, before it was ever
// loaded (an upper estimate; 0: unknown). A GGUF file: every float matrix (f32, f16, bf16) as f32
// (the widest form a CPU GEMM packs it in: AVX-512 and AMX-f32 widen f16/bf16 to f32 panels, and
// the mapped pages of a packed tensor are released), every quantized one as the larger of its
// stored bytes and one byte per weight (int8 packing), plus four times the metadata (the
// tokenizer's tables are built from it). A folder (an HF model converted in memory): three times
// its files' bytes (the converted GGUF stays in memory beside packed f32 copies of f16 weights).
// A Hub name is first fetched into the Hugging Face cache (locate_model) and estimated from its
// files there; one that cannot be fetched, or a file the GGUF reader refuses: 0 (its load says why).
uint64_t expected_resident_bytes(const std::string& source);

class Router : public Handler {
 public:
  Router(std::vector<ServedModel> models, Metrics& metrics, const RouterConfig& config);
  ~Router() override;
  void handle(HttpRequest request, Reply reply) override;
  // Model `i` loaded by the caller (the first model, at startup), having added `resident` bytes.
  void adopt(size_t i, std::unique_ptr<LoadedModel> loaded, uint64_t resident);
  size_t size() const { return slots_.size(); }
  void drain();              // every request from now on answers 503
  size_t in_flight() const;  // requests of every model not yet answered
  // Given to every model's Api (Api::set_connections, Api::set_poster), loaded or to be loaded;
  // set before the transport runs.
  void set_connections(std::function<size_t()> f);
  void set_poster(std::function<void(std::function<void()>)> post);
  void stop();               // stops every model's scheduler (after the transport stopped)

 private:
  struct Slot {
    ServedModel served;
    std::shared_ptr<LoadedModel> loaded;  // null: not loaded
    std::string load_error;               // why the last load failed ("" when it did not)
    int load_status = 503;                // the status that answers it: 503 or 507 (it never fits)
    bool load_busy = false;               // 503 because models serving requests hold the room (Retry-After)
    uint64_t resident = 0;                // the RSS its last load added (measured), 0: unknown
    uint64_t expected = 0;                // expected_resident_bytes of its source (computed once)
    bool expected_known = false;
    std::chrono::steady_clock::time_point last_used{};
    size_t users = 0;                     // requests handed to its Api and not yet answered
  };
  // The slot `request` is for: by its body's model field on the routes that carry one, else the
  // first; null after answering 404 (a model not served) through `reply`.
  Slot* route(const HttpRequest& request, const Reply& reply);
  // The slot's model, loaded (after making room under --max-memory) if need be, with this request
  // counted in slot.users; null when it cannot be loaded (the reason in slot.load_error, its
  // status in slot.load_status: 507 when it would not fit under --max-memory even alone, 503
  // when the models serving requests leave no room for it now or its load failed).
  std::shared_ptr<LoadedModel> acquire(Slot& slot);
  // Unloads idle models other than `keep`, least recently used first, one at a time, while the
  // resident memory measured after each unload plus `need` exceeds max_memory. Models with a
  // request in flight are never unloaded. Returns the resident memory it stopped at.
  uint64_t make_room(const Slot* keep, uint64_t need);
  void listing(const HttpRequest& request, const Reply& reply);  // /v1/models, /api/tags, /api/ps, /metrics
  void answer(const HttpRequest& request, const Reply& reply, HttpResponse r, const std::string& route);

  std::vector<std::unique_ptr<Slot>> slots_;
  Metrics& metrics_;
  RouterConfig config_;
  mutable std::mutex mutex_;  // slots' loaded, users, last_used
  std::mutex loads_;          // one model load at a time in the whole server: room made for one is not taken by another
  bool draining_ = false;
  std::function<size_t()> connections_;
  std::function<void(std::function<void()>)> post_;
};

}  // namespace embed::server
