// torch.save state-dict reader (see torch_state.h). Zip layout: PKWARE APPNOTE 4.3 (end of
// central directory, central and local headers; torch writes entries stored, never deflated).
// Pickle opcodes: CPython's Lib/pickletools.py, protocols 2 to 4 (what torch.save writes).
#include "tools/convert/torch_state.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>

#include "base/error.h"
#include "gguf/fp16.h"

namespace embed::convert {
namespace {

// ---- zip ----

struct ZipEntry {
  size_t offset = 0, size = 0;  // the stored bytes
};

class Zip {
 public:
  Zip(const std::vector<uint8_t>& b, const std::string& what) : b_(b), what_(what) {
    // The end-of-central-directory record: 22 bytes plus a comment of up to 65535.
    if (b.size() < 22) bad("too short for a zip archive (torch.save's format)");
    size_t eocd = std::string::npos;
    for (size_t i = b.size() - 22 + 1; i-- > 0 && b.size() - i <= 22 + 65535;)
      if (u32(i) == 0x06054b50u) {
        eocd = i;
        break;
      }
    if (eocd == std::string::npos) bad("no zip end-of-central-directory record (not a torch.save file)");
    const size_t count = u16(eocd + 10), dir_size = u32(eocd + 12), dir_off = u32(eocd + 16);
    if (count == 0xffff || dir_off == 0xffffffffu) fail(ErrorKind::Unsupported, what_ + ": zip64 archives are not read");
    if (dir_off > b.size() || dir_size > b.size() - dir_off) bad("central directory outside the file");
    size_t at = dir_off;
    for (size_t i = 0; i < count; i++) {
      need(at, 46);
      if (u32(at) != 0x02014b50u) bad("central directory entry " + std::to_string(i) + " has a bad signature");
      const unsigned method = u16(at + 10);
      const size_t csize = u32(at + 20), usize = u32(at + 24), nlen = u16(at + 28), xlen = u16(at + 30), clen = u16(at + 32);
      const size_t local = u32(at + 42);
      need(at + 46, nlen);
      const std::string name(reinterpret_cast<const char*>(b.data() + at + 46), nlen);
      at += 46 + nlen + xlen + clen;
      if (at > b.size()) bad("central directory entry '" + name + "' runs past the file");
      if (method != 0)
        fail(ErrorKind::Unsupported, what_ + ": zip entry '" + name + "' is compressed (method " + std::to_string(method) +
                                         "); torch.save stores entries uncompressed");
      if (csize != usize) bad("zip entry '" + name + "' has different stored and original sizes");
      need(local, 30);
      if (u32(local) != 0x04034b50u) bad("zip entry '" + name + "' has a bad local header");
      const size_t data = local + 30 + u16(local + 26) + u16(local + 28);
      need(data, csize);
      entries_[name] = {data, csize};
    }
  }

  const std::map<std::string, ZipEntry>& entries() const { return entries_; }
  std::string_view view(const ZipEntry& e) const { return {reinterpret_cast<const char*>(b_.data() + e.offset), e.size}; }
  [[noreturn]] void bad(const std::string& why) const { fail(ErrorKind::Format, what_ + ": " + why); }

 private:
  void need(size_t at, size_t n) const {
    if (at > b_.size() || n > b_.size() - at) bad("truncated zip archive");
  }
  unsigned u16(size_t at) const {
    need(at, 2);
    return b_[at] | (unsigned(b_[at + 1]) << 8);
  }
  size_t u32(size_t at) const {
    need(at, 4);
    return b_[at] | (size_t(b_[at + 1]) << 8) | (size_t(b_[at + 2]) << 16) | (size_t(b_[at + 3]) << 24);
  }

  const std::vector<uint8_t>& b_;
  std::string what_;
  std::map<std::string, ZipEntry> entries_;
};

// ---- pickle ----

struct Value;
using Ref = std::shared_ptr<Value>;

struct Value {
  enum Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Reduce, Persistent, Mark } kind = None;
  int64_t i = 0;
  double f = 0;
  std::string s;                             // Str; Global: "module.name"
  std::vector<Ref> items;                    // Tuple, List; Reduce: {callable, args}; Persistent: {pid}
  std::vector<std::pair<Ref, Ref>> entries;  // Dict (also an OrderedDict built by REDUCE)
};

Ref make(Value::Kind k) {
  auto v = std::make_shared<Value>();
  v->kind = k;
  return v;
}

constexpr size_t kMaxStack = 1 << 16, kMaxItems = 1 << 20;

class Unpickler {
 public:
  Unpickler(std::string_view p, const std::string& what) : p_(p), what_(what) {}

  Ref run() {
    while (true) {
      const uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;                               // PROTO
        case 0x95: take(8); break;                              // FRAME (length only)
        case '.': return pop();                                 // STOP
        case '(': push(make(Value::Mark)); break;               // MARK
        case 'N': push(make(Value::None)); break;
        case 0x88: case 0x89: { auto v = make(Value::Bool); v->i = op == 0x88; push(v); break; }
        case 'K': push_int(byte()); break;                      // BININT1
        case 'M': push_int(le(2)); break;                       // BININT2
        case 'J': push_int(static_cast<int32_t>(le(4))); break; // BININT
        case 0x8a: {                                            // LONG1
          const size_t n = byte();
          if (n > 8) bad("integer of " + std::to_string(n) + " bytes");
          const std::string_view d = take(n);
          uint64_t x = 0;
          for (size_t k = 0; k < n; k++) x |= uint64_t(uint8_t(d[k])) << (8 * k);
          if (n > 0 && n < 8 && (uint8_t(d[n - 1]) & 0x80)) x |= ~uint64_t(0) << (8 * n);
          push_int(static_cast<int64_t>(x));
          break;
        }
        case 'G': {                                             // BINFLOAT (big-endian double)
          const std::string_view d = take(8);
          uint64_t x = 0;
          for (char c : d) x = (x << 8) | uint8_t(c);
          auto v = make(Value::Float);
          std::memcpy(&v->f, &x, 8);
          push(v);
          break;
        }
        case 'X': push_str(take(le(4))); break;                 // BINUNICODE
        case 0x8c: push_str(take(byte())); break;               // SHORT_BINUNICODE
        case 'c': {                                             // GLOBAL "module\nname\n"
          const std::string module = line(), name = line();
          push_global(module + "." + name);
          break;
        }
        case 0x93: {                                            // STACK_GLOBAL
          const Ref name = pop(), module = pop();
          if (module->kind != Value::Str || name->kind != Value::Str) bad("STACK_GLOBAL without two strings");
          push_global(module->s + "." + name->s);
          break;
        }
        case ')': push(make(Value::Tuple)); break;              // EMPTY_TUPLE
        case ']': push(make(Value::List)); break;               // EMPTY_LIST
        case '}': push(make(Value::Dict)); break;               // EMPTY_DICT
        case 't': { auto v = make(Value::Tuple); v->items = pop_mark(); push(v); break; }
        case 0x85: case 0x86: case 0x87: {                      // TUPLE1..3
          auto v = make(Value::Tuple);
          v->items.resize(op - 0x84);
          for (size_t k = v->items.size(); k-- > 0;) v->items[k] = pop();
          push(v);
          break;
        }
        case 'a': { const Ref x = pop(); list_of(top())->items.push_back(x); limit(top()); break; }  // APPEND
        case 'e': { auto xs = pop_mark(); auto& l = list_of(top())->items; l.insert(l.end(), xs.begin(), xs.end()); limit(top()); break; }
        case 's': { const Ref v = pop(), k = pop(); dict_of(top())->entries.emplace_back(k, v); limit(top()); break; }  // SETITEM
        case 'u': {                                             // SETITEMS
          auto xs = pop_mark();
          if (xs.size() % 2) bad("SETITEMS with an odd number of items");
          for (size_t k = 0; k < xs.size(); k += 2) dict_of(top())->entries.emplace_back(xs[k], xs[k + 1]);
          limit(top());
          break;
        }
        case 'Q': { auto v = make(Value::Persistent); v->items = {pop()}; push(v); break; }  // BINPERSID
        case 'R': {                                             // REDUCE
          const Ref args = pop(), callable = pop();
          if (callable->kind != Value::Global || args->kind != Value::Tuple) bad("REDUCE of something other than a global");
          if (callable->s == "collections.OrderedDict") {
            if (!args->items.empty()) bad("OrderedDict called with arguments");
            push(make(Value::Dict));
          } else {
            auto v = make(Value::Reduce);
            v->items = {callable, args};
            push(v);
          }
          break;
        }
        case 'b': pop(); break;  // BUILD: state set on an object (an OrderedDict's _metadata); not needed
        case 'q': memo(byte()); break;                          // BINPUT
        case 'r': memo(le(4)); break;                           // LONG_BINPUT
        case 0x94: memo(memo_.size()); break;                   // MEMOIZE
        case 'h': push(recall(byte())); break;                  // BINGET
        case 'j': push(recall(le(4))); break;                   // LONG_BINGET
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          bad(std::string("pickle opcode ") + hex + " is not one torch.save writes for a state dict");
        }
      }
    }
  }

 private:
  [[noreturn]] void bad(const std::string& why) const { fail(ErrorKind::Format, what_ + ": data.pkl: " + why); }
  std::string_view take(size_t n) {
    if (n > p_.size() - at_) bad("truncated pickle");
    const std::string_view s = p_.substr(at_, n);
    at_ += n;
    return s;
  }
  uint8_t byte() { return static_cast<uint8_t>(take(1)[0]); }
  uint64_t le(size_t n) {
    const std::string_view d = take(n);
    uint64_t x = 0;
    for (size_t k = 0; k < n; k++) x |= uint64_t(uint8_t(d[k])) << (8 * k);
    return x;
  }
  std::string line() {
    const size_t nl = p_.find('\n', at_);
    if (nl == std::string_view::npos || nl - at_ > 256) bad("GLOBAL name without a newline");
    std::string s(p_.substr(at_, nl - at_));
    at_ = nl + 1;
    return s;
  }
  void push(Ref v) {
    if (stack_.size() >= kMaxStack) bad("pickle stack deeper than " + std::to_string(kMaxStack));
    stack_.push_back(std::move(v));
  }
  void push_int(int64_t x) { auto v = make(Value::Int); v->i = x; push(v); }
  void push_str(std::string_view s) { auto v = make(Value::Str); v->s = s; push(v); }
  void push_global(const std::string& name) {
    static const char* const known[] = {"collections.OrderedDict", "torch._utils._rebuild_tensor_v2", "torch.FloatStorage",
                                        "torch.HalfStorage", "torch.BFloat16Storage"};
    bool ok = false;
    for (const char* k : known) ok = ok || name == k;
    if (!ok) bad("refers to '" + name + "', which a state dict of float tensors does not use");
    auto v = make(Value::Global);
    v->s = name;
    push(v);
  }
  Ref pop() {
    if (stack_.empty() || stack_.back()->kind == Value::Mark) bad("pickle stack underflow");
    Ref v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Ref& top() {
    if (stack_.empty()) bad("pickle stack underflow");
    return stack_.back();
  }
  std::vector<Ref> pop_mark() {
    size_t m = stack_.size();
    while (m > 0 && stack_[m - 1]->kind != Value::Mark) m--;
    if (m == 0) bad("no MARK on the pickle stack");
    std::vector<Ref> xs(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m - 1);
    return xs;
  }
  Ref& list_of(Ref& v) {
    if (v->kind != Value::List) bad("APPEND to something other than a list");
    return v;
  }
  Ref& dict_of(Ref& v) {
    if (v->kind != Value::Dict) bad("SETITEM on something other than a dict");
    return v;
  }
  void limit(const Ref& v) {
    if (v->items.size() + v->entries.size() > kMaxItems) bad("a container of more than " + std::to_string(kMaxItems) + " items");
  }
  void memo(size_t k) {
    if (k > kMaxItems) bad("memo index " + std::to_string(k));
    if (memo_.size() <= k) memo_.resize(k + 1);
    memo_[k] = top();
  }
  Ref recall(size_t k) {
    if (k >= memo_.size() || !memo_[k]) bad("memo index " + std::to_string(k) + " was never stored");
    return memo_[k];
  }

  std::string_view p_;
  size_t at_ = 0;
  std::string what_;
  std::vector<Ref> stack_, memo_;
};

int64_t as_int(const Ref& v, const std::string& what, const std::string& field) {
  if (v->kind != Value::Int) fail(ErrorKind::Format, what + ": " + field + " is not an integer");
  return v->i;
}

std::vector<int64_t> int_tuple(const Ref& v, const std::string& what, const std::string& field) {
  if (v->kind != Value::Tuple) fail(ErrorKind::Format, what + ": " + field + " is not a tuple");
  std::vector<int64_t> out;
  for (const Ref& x : v->items) out.push_back(as_int(x, what, field));
  return out;
}

}  // namespace

std::vector<TorchTensor> read_torch_state_dict(const std::vector<uint8_t>& bytes, const std::string& what) {
  const Zip zip(bytes, what);
  // One record folder: "<prefix>/data.pkl" beside "<prefix>/data/<key>".
  std::string prefix;
  for (const auto& [name, e] : zip.entries()) {
    const size_t slash = name.find('/');
    if (slash != std::string::npos && name.substr(slash) == "/data.pkl") {
      if (!prefix.empty()) zip.bad("two data.pkl records");
      prefix = name.substr(0, slash + 1);
    }
  }
  if (prefix.empty()) zip.bad("no <name>/data.pkl record (not a torch.save file of the zip format)");
  if (const auto bo = zip.entries().find(prefix + "byteorder"); bo != zip.entries().end() && zip.view(bo->second) != "little")
    fail(ErrorKind::Unsupported, what + ": byteorder '" + std::string(zip.view(bo->second)) + "'; only little-endian files are read");
  const Ref root = Unpickler(zip.view(zip.entries().at(prefix + "data.pkl")), what).run();
  if (root->kind != Value::Dict) fail(ErrorKind::Format, what + ": data.pkl is not a state dict (a dict of tensors)");
  std::vector<TorchTensor> out;
  for (const auto& [k, v] : root->entries) {
    if (k->kind != Value::Str) fail(ErrorKind::Format, what + ": a state-dict key is not a string");
    const std::string where = what + ": '" + k->s + "'";
    if (v->kind != Value::Reduce || v->items[0]->s != "torch._utils._rebuild_tensor_v2")
      fail(ErrorKind::Format, where + " is not a tensor");
    const std::vector<Ref>& args = v->items[1]->items;
    if (args.size() < 4 || args[0]->kind != Value::Persistent) fail(ErrorKind::Format, where + ": malformed _rebuild_tensor_v2 arguments");
    const Ref pid = args[0]->items[0];
    if (pid->kind != Value::Tuple || pid->items.size() != 5 || pid->items[0]->kind != Value::Str || pid->items[0]->s != "storage" ||
        pid->items[1]->kind != Value::Global || pid->items[2]->kind != Value::Str)
      fail(ErrorKind::Format, where + ": malformed storage reference");
    const std::string storage = pid->items[1]->s;
    const size_t elem = storage == "torch.FloatStorage" ? 4 : 2;
    if (storage != "torch.FloatStorage" && storage != "torch.HalfStorage" && storage != "torch.BFloat16Storage")
      fail(ErrorKind::Unsupported, where + ": storage " + storage + "; float32, float16 and bfloat16 are read");
    const int64_t numel = as_int(pid->items[4], where, "storage size");
    const int64_t offset = as_int(args[1], where, "storage offset");
    TorchTensor t;
    t.name = k->s;
    t.shape = int_tuple(args[2], where, "size");
    const std::vector<int64_t> stride = int_tuple(args[3], where, "stride");
    if (t.shape.size() > 4 || stride.size() != t.shape.size()) fail(ErrorKind::Format, where + ": size and stride disagree");
    int64_t n = 1, want = 1;
    for (size_t d = t.shape.size(); d-- > 0;) {
      if (t.shape[d] < 0 || t.shape[d] > (int64_t(1) << 31)) fail(ErrorKind::Format, where + ": size " + std::to_string(t.shape[d]));
      if (t.shape[d] > 1 && stride[d] != want) fail(ErrorKind::Unsupported, where + ": a non-contiguous view; save a .contiguous() copy");
      want *= t.shape[d];
      n *= t.shape[d];
      if (n > (int64_t(1) << 31)) fail(ErrorKind::Format, where + ": more than 2^31 values");
    }
    const auto e = zip.entries().find(prefix + "data/" + pid->items[2]->s);
    if (e == zip.entries().end()) fail(ErrorKind::Format, where + ": storage '" + pid->items[2]->s + "' is not in the archive");
    if (numel < 0 || offset < 0 || offset > numel || n > numel - offset || e->second.size != static_cast<size_t>(numel) * elem)
      fail(ErrorKind::Format, where + ": storage of " + std::to_string(e->second.size) + " bytes does not hold " + std::to_string(n) +
                                  " values at offset " + std::to_string(offset));
    const std::string_view d = zip.view(e->second).substr(static_cast<size_t>(offset) * elem);
    t.values.resize(static_cast<size_t>(n));
    for (size_t i = 0; i < t.values.size(); i++) {
      if (elem == 4) {
        std::memcpy(&t.values[i], d.data() + 4 * i, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, d.data() + 2 * i, 2);
        t.values[i] = storage == "torch.HalfStorage" ? f16_to_f32(h) : bf16_to_f32(h);
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<TorchTensor> read_torch_state_dict_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::Io, path + ": cannot open");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return read_torch_state_dict(bytes, path);
}

}  // namespace embed::convert
