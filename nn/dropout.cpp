// ember/nn/dropout.cpp — Dropout: validates p once, then defers to F::dropout.
#include "nn/dropout.h"

#include <sstream>

#include "kernels/base/error.h"
#include "nn/functional.h"

namespace ember::nn {

Dropout::Dropout(double p) : p(p) {
  // Checked here too so that a bad p fails where the model is built, not at its first batch.
  EMBER_CHECK(p >= 0.0 && p < 1.0, "Dropout(p=", p, "): p is the probability of zeroing an "
              "element and must lie in [0, 1)");
}

Tensor Dropout::forward(const Tensor& x) { return F::dropout(x, p, is_training()); }

std::string Dropout::extra_repr() const {
  // The shortest decimal that reads back as p, as Python prints floats: "p=0.5", "p=0.2".
  std::string text;
  for (int digits = 1; digits <= 17; ++digits) {
    std::ostringstream os;
    os.precision(digits);
    os << p;
    text = os.str();
    if (std::stod(text) == p) break;
  }
  if (text.find_first_of(".e") == std::string::npos) text += ".0";  // 0 -> "0.0", like Python
  return "p=" + text;
}

}  // namespace ember::nn
