// TEMPORARY development scaffold: deleted when core/ops/max_min.cpp lands.
#include "core/ops/common.h"
namespace ember {
static Error pending(const char* n) { return Error(std::string(n) + ": pending"); }
ValuesIndices max(const Tensor&, int64_t, bool) { throw pending("max"); }
ValuesIndices min(const Tensor&, int64_t, bool) { throw pending("min"); }
Tensor max(const Tensor&) { throw pending("max"); }
Tensor min(const Tensor&) { throw pending("min"); }
Tensor argmax(const Tensor&, int64_t, bool) { throw pending("argmax"); }
Tensor argmin(const Tensor&, int64_t, bool) { throw pending("argmin"); }
Tensor argmax(const Tensor&) { throw pending("argmax"); }
}  // namespace ember
