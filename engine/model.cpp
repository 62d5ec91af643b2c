// Pooling names.
#include "engine/model.h"

namespace embed {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::None: return "none";
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Last: return "last";
    case Pooling::Rank: return "rank";
    case Pooling::Hybrid: return "hybrid";
  }
  return "?";
}

bool parse_pooling(const std::string& s, Pooling* out) {
  for (Pooling p : {Pooling::None, Pooling::Mean, Pooling::Cls, Pooling::Last, Pooling::Rank, Pooling::Hybrid})
    if (s == pooling_name(p)) {
      *out = p;
      return true;
    }
  return false;
}

}  // namespace embed
