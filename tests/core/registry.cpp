// The registry is the contract that every op is tested: an op without a gradcheck case (which
// is also its CUDA-vs-CPU parity case, tests/kernels/cuda_parity.cpp) fails here.
#include <fstream>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include "op_cases.h"

using namespace ember;

TEST_CASE("registry: every op has test cases (gradcheck + CUDA parity)", "[registry]") {
  for (const OpInfo& op : op_registry()) {
    int cases = 0, differentiable = 0;
    for (const test::OpCase& c : test::op_cases()) {
      if (c.op != op.name) continue;
      ++cases;
      if (c.differentiable) ++differentiable;
    }
    INFO("op '" << op.name << "' (" << op.card << ")");
    CHECK(cases > 0);
    if (op.differentiable) CHECK(differentiable > 0);
    else CHECK(differentiable == 0);
  }
}

TEST_CASE("registry: every test case names a registered op", "[registry]") {
  for (const test::OpCase& c : test::op_cases()) {
    INFO("case '" << c.label << "' names op '" << c.op << "'");
    CHECK(find_op(c.op) != nullptr);
  }
}

TEST_CASE("registry: names are unique and each op card exists, names its backward and its dtype rule",
          "[registry]") {
  std::set<std::string> names;
  for (const OpInfo& op : op_registry()) {
    INFO("op '" << op.name << "'");
    CHECK(names.insert(op.name).second);
    std::ifstream card(std::string(EMBER_SOURCE_DIR) + "/" + op.card);
    REQUIRE(card.good());
    std::stringstream text;
    text << card.rdbuf();
    CHECK(text.str().find("// Op card:") != std::string::npos);
    // The card states the op's dtype rule (promotion, integer inputs): core/promotion.h.
    CHECK(text.str().find("\n// Dtypes ") != std::string::npos);
    const std::string backward = op.backward;
    if (op.differentiable && backward.rfind("(composite", 0) != 0) {
      CHECK(text.str().find(backward) != std::string::npos);
    }
  }
}
