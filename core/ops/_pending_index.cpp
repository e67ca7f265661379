// TEMPORARY development scaffold: deleted when gather/index_select/cat land.
#include "core/ops/common.h"
namespace ember {
static Error pending(const char* n) { return Error(std::string(n) + ": pending"); }
Tensor gather(const Tensor&, int64_t, const Tensor&) { throw pending("gather"); }
Tensor scatter_add(const Tensor&, int64_t, const Tensor&, const Tensor&) { throw pending("scatter_add"); }
Tensor index_select(const Tensor&, int64_t, const Tensor&) { throw pending("index_select"); }
Tensor index_add(const Tensor&, int64_t, const Tensor&, const Tensor&) { throw pending("index_add"); }
Tensor cat(const std::vector<Tensor>&, int64_t) { throw pending("cat"); }
Tensor stack(const std::vector<Tensor>&, int64_t) { throw pending("stack"); }
}  // namespace ember
