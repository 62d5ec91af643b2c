// embed::Error, the one exception type the library throws, and the EMBED_CHECK invariant macros.
// The base layer: header-only, included by every layer (gguf/, tokenizer/, engine/, cpu/, cuda/,
// tools/), and including nothing of the project itself.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace embed {

// Error kinds map one-to-one onto transport codes in a server (see docs/architecture.md).
enum class ErrorKind {
  InvalidArgument,  // the caller passed something wrong (flag, text, size)
  Unsupported,      // valid but not implemented here (architecture, dtype on a device)
  Format,           // a file (GGUF, safetensors, JSON) is malformed or inconsistent
  Io,               // the OS refused (open, mmap, read, write)
  Device,           // a CUDA / cuBLAS call failed
  OutOfMemory,
  Overloaded,
};

inline const char* error_kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::InvalidArgument: return "invalid argument";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::Format: return "format error";
    case ErrorKind::Io: return "I/O error";
    case ErrorKind::Device: return "device error";
    case ErrorKind::OutOfMemory: return "out of memory";
    case ErrorKind::Overloaded: return "overloaded";
  }
  return "error";
}

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void fail(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

[[noreturn]] inline void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "embed: internal invariant violated at %s:%d: %s %s\n", file, line, cond, msg.c_str());
  std::abort();
}

}  // namespace embed

// Programmer invariants only (never file contents or user input): always on, aborts with file:line.
#define EMBED_CHECK(cond, ...)                                                            \
  do {                                                                                    \
    if (!(cond)) ::embed::check_failed(__FILE__, __LINE__, #cond, std::string{__VA_ARGS__}); \
  } while (0)

#ifndef NDEBUG
#define EMBED_DCHECK(cond, ...) EMBED_CHECK(cond, __VA_ARGS__)
#else
#define EMBED_DCHECK(cond, ...) \
  do {                          \
  } while (0)
#endif
