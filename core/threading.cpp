#include "core/threading.h"

#include "kernels/base/parallel.h"

namespace ember {

int get_num_threads() { return kernels::num_threads(); }
void set_num_threads(int n) { kernels::set_num_threads(n); }

}  // namespace ember
