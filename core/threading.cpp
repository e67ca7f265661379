#include "core/threading.h"

#include "kernels/cpu/parallel.h"

namespace ember {

int get_num_threads() { return kernels::cpu::num_threads(); }
void set_num_threads(int n) { kernels::cpu::set_num_threads(n); }

}  // namespace ember
