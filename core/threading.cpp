#include "core/threading.h"

#include "kernels/base/cpu_isa.h"
#include "kernels/base/parallel.h"

namespace ember {

int get_num_threads() { return kernels::num_threads(); }
void set_num_threads(int n) { kernels::set_num_threads(n); }

std::string get_cpu_isa() { return kernels::isa_name(kernels::cpu_isa()); }
void set_cpu_isa(const std::string& name) { kernels::set_cpu_isa(kernels::parse_isa(name)); }

}  // namespace ember
