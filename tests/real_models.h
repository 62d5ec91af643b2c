// Where the tests find the real model files that tools/models.sh fetches into the cache (never
// committed). One policy for every test that needs one: the path comes from its EMBED_* variable
// (tools/test.sh sets them all), else the default cache path; a missing file fails the test with
// the command that fetches it. No real-model test passes or skips without its model.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace embed::test {

struct RealModel {
  const char* var;        // environment variable tools/test.sh sets
  const char* cache_rel;  // under $EMBED_CACHE/models (default ~/.cache/embed/models)
  const char* fetch;      // tools/models.sh arguments
  const char* probe;      // file that must exist inside a folder ("" for a single file)
};

inline constexpr RealModel kMiniLmDir{"EMBED_MINILM_DIR", "all-MiniLM-L6-v2", "minilm", "model.safetensors"};
inline constexpr RealModel kQwenVocabDir{"EMBED_QWEN_VOCAB_DIR", "qwen3-embedding-vocab", "qwen-vocab", "tokenizer.json"};
inline constexpr RealModel kGemmaGguf{"EMBED_GEMMA_GGUF", "gemma-3-270m-q4_k_m.gguf", "gemma3-270m", ""};
inline constexpr RealModel kMiniLmGgufF32{"EMBED_MINILM_GGUF_F32", "all-MiniLM-L6-v2-f32.gguf", "minilm-gguf f32", ""};
inline constexpr RealModel kMiniLmGgufF16{"EMBED_MINILM_GGUF_F16", "all-MiniLM-L6-v2-f16.gguf", "minilm-gguf f16", ""};
inline constexpr RealModel kMiniLmGgufQ8{"EMBED_MINILM_GGUF_Q8_0", "all-MiniLM-L6-v2-q8_0.gguf", "minilm-gguf q8_0", ""};

// The model's path; throws (failing the test) with the fetch command when it is not there.
inline std::string real_model_path(const RealModel& m) {
  namespace fs = std::filesystem;
  std::string path;
  if (const char* v = std::getenv(m.var); v && *v) {
    path = v;
  } else {
    const char* cache = std::getenv("EMBED_CACHE");
    const char* home = std::getenv("HOME");
    path = (cache && *cache ? std::string(cache) : std::string(home ? home : "") + "/.cache/embed") + "/models/" + m.cache_rel;
  }
  const fs::path probe = *m.probe ? fs::path(path) / m.probe : fs::path(path);
  if (!fs::is_regular_file(probe))
    throw std::runtime_error(std::string(m.var) + ": " + probe.string() + " is missing; fetch it with: export " + m.var +
                             "=\"$(tools/models.sh " + m.fetch + ")\"");
  return path;
}

}  // namespace embed::test
