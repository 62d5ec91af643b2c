// Special-token matcher (see special.h): tokens bucketed by first byte, longest first, so a scan
// costs one table read per input byte plus a compare where a token could start.
#include "tokenizer/special.h"

#include <algorithm>
#include <cstring>

namespace embed::tok {

void SpecialMatcher::add(std::string text, int32_t id) {
  if (!text.empty()) tokens_.push_back({std::move(text), id});
}

void SpecialMatcher::finish() {
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const Token& a, const Token& b) {
    const auto fa = static_cast<unsigned char>(a.text[0]), fb = static_cast<unsigned char>(b.text[0]);
    return fa != fb ? fa < fb : a.text.size() > b.text.size();
  });
  size_t k = 0;
  for (int b = 0; b <= 256; ++b) {
    while (b < 256 && k < tokens_.size() && static_cast<unsigned char>(tokens_[k].text[0]) < b) ++k;
    bucket_begin_[b] = static_cast<uint32_t>(b == 256 ? tokens_.size() : k);
  }
}

SpecialMatcher::Match SpecialMatcher::find(std::string_view text, size_t from) const {
  if (tokens_.empty()) return {};
  for (size_t pos = from; pos < text.size(); ++pos) {
    const auto c = static_cast<unsigned char>(text[pos]);
    const uint32_t lo = bucket_begin_[c], hi = bucket_begin_[c + 1];
    for (uint32_t k = lo; k < hi; ++k) {
      const std::string& t = tokens_[k].text;
      if (t.size() <= text.size() - pos && std::memcmp(t.data(), text.data() + pos, t.size()) == 0)
        return {pos, t.size(), tokens_[k].id};
    }
  }
  return {};
}

}  // namespace embed::tok
