// LR schedulers (optim/lr_scheduler.h) against PyTorch 1.13, and their state.
//
// The main check replays tests/fixtures/optim/schedulers.txt (written by
// tests/fixtures/optim/make_schedulers.py): every scheduler, alone, composed with another, inside
// SequentialLR and ChainedScheduler, with an lr changed by hand in the middle of a run, with
// parameter groups of different lrs, with a group added by add_param_group, with fractional
// epochs (CosineAnnealingWarmRestarts.step(epoch)) — each group's lr (and OneCycleLR's and
// CyclicLR's momentum) compared with
// PyTorch's after every action. Both sides compute in double with the same operations and agree
// bit for bit here (EMBER_SCHEDULER_REPORT=1 prints the count); the tolerance of a few ulps is
// for another libm. tests/optim/param_groups.cpp tests the errors and the state dicts.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/ember.h"
#include "optim/optim.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

const char* const kRegenerate =
    "regenerate it with: /usr/bin/python3 tests/fixtures/optim/make_schedulers.py";
// Relative: the same double operations in the same order give the same bits; 4 ulps leave room
// for a libm whose cos or pow differs from the generating machine's in the last bit.
constexpr double kRelTol = 4 * std::numeric_limits<double>::epsilon();

bool close(double got, double want) {
  if (got == want) return true;
  return std::abs(got - want) <= kRelTol * std::abs(want);
}

// How many values agreed bit for bit (reported once, for the record).
int g_exact = 0;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);) out.push_back(item);
  return out;
}

// The lambdas make_schedulers.py names, with the same double operations as its Python ones.
optim::LambdaLR::Lambda named_lambda(const std::string& name) {
  if (name == "warmup5") {
    return [](int64_t e) { return std::min(1.0, static_cast<double>(e + 1) / 5.0); };
  }
  if (name == "pow95") return [](int64_t e) { return std::pow(0.95, static_cast<double>(e)); };
  if (name == "inv_sqrt") {
    return [](int64_t e) { return 1.0 / std::sqrt(static_cast<double>(e + 1)); };
  }
  FAIL("unknown lambda '" << name << "': " << kRegenerate);
  return {};
}

struct Case {
  std::string label;
  std::unique_ptr<optim::Optimizer> opt;
  std::vector<Tensor> params;
  std::map<std::string, std::shared_ptr<optim::LRScheduler>> made;
  int checked = 0;
};

std::shared_ptr<optim::LRScheduler> build(Case& c, const std::string& type,
                                          const std::map<std::string, std::string>& kv) {
  optim::Optimizer& opt = *c.opt;
  auto d = [&](const char* k) { return std::stod(kv.at(k)); };
  auto i = [&](const char* k) { return static_cast<int64_t>(std::stoll(kv.at(k))); };
  auto doubles = [&](const char* k) {
    std::vector<double> v;
    for (const auto& s : split(kv.at(k), ',')) v.push_back(std::stod(s));
    return v;
  };
  auto ints = [&](const char* k) {
    std::vector<int64_t> v;
    for (const auto& s : split(kv.at(k), ',')) v.push_back(std::stoll(s));
    return v;
  };
  auto members = [&] {
    std::vector<std::shared_ptr<optim::LRScheduler>> v;
    for (const auto& s : split(kv.at("schedulers"), ',')) v.push_back(c.made.at(s));
    return v;
  };
  if (type == "steplr") return std::make_shared<optim::StepLR>(opt, i("step_size"), d("gamma"));
  if (type == "multisteplr") {
    return std::make_shared<optim::MultiStepLR>(opt, ints("milestones"), d("gamma"));
  }
  if (type == "exponential") return std::make_shared<optim::ExponentialLR>(opt, d("gamma"));
  if (type == "linear") {
    return std::make_shared<optim::LinearLR>(opt, d("start_factor"), d("end_factor"),
                                             i("total_iters"));
  }
  if (type == "constant") {
    return std::make_shared<optim::ConstantLR>(opt, d("factor"), i("total_iters"));
  }
  if (type == "polynomial") {
    return std::make_shared<optim::PolynomialLR>(opt, i("total_iters"), d("power"));
  }
  if (type == "multiplicative") {
    std::vector<optim::MultiplicativeLR::Lambda> fns;
    for (const auto& n : split(kv.at("fns"), ',')) fns.push_back(named_lambda(n));
    if (fns.size() == 1) return std::make_shared<optim::MultiplicativeLR>(opt, fns[0]);
    return std::make_shared<optim::MultiplicativeLR>(opt, fns);
  }
  if (type == "cosine") {
    return std::make_shared<optim::CosineAnnealingLR>(opt, i("T_max"), d("eta_min"));
  }
  if (type == "lambda") {
    std::vector<optim::LambdaLR::Lambda> fns;
    for (const auto& n : split(kv.at("fns"), ',')) fns.push_back(named_lambda(n));
    if (fns.size() == 1) return std::make_shared<optim::LambdaLR>(opt, fns[0]);
    return std::make_shared<optim::LambdaLR>(opt, fns);
  }
  if (type == "onecycle") {
    optim::OneCycleLROptions o;
    o.total_steps = i("total_steps");
    o.pct_start = d("pct_start");
    o.anneal_strategy = kv.at("anneal_strategy");
    o.three_phase = kv.at("three_phase") == "1";
    o.cycle_momentum = kv.at("cycle_momentum") == "1";
    o.div_factor = d("div_factor");
    o.final_div_factor = d("final_div_factor");
    o.base_momentum = d("base_momentum");
    o.max_momentum = d("max_momentum");
    return std::make_shared<optim::OneCycleLR>(opt, doubles("max_lrs"), o);
  }
  if (type == "plateau") {
    optim::ReduceLROnPlateauOptions o;
    o.mode = kv.at("mode");
    o.factor = d("factor");
    o.patience = i("patience");
    o.threshold = d("threshold");
    o.threshold_mode = kv.at("threshold_mode");
    o.cooldown = i("cooldown");
    o.min_lrs = doubles("min_lrs");
    o.eps = d("eps");
    return std::make_shared<optim::ReduceLROnPlateau>(opt, o);
  }
  if (type == "cyclic") {
    optim::CyclicLROptions o;
    o.step_size_up = d("step_size_up");
    if (kv.at("step_size_down") != "none") o.step_size_down = d("step_size_down");
    o.mode = kv.at("mode");
    o.gamma = d("gamma");
    o.cycle_momentum = kv.at("cycle_momentum") == "1";
    o.base_momentum = d("base_momentum");
    o.max_momentum = d("max_momentum");
    return std::make_shared<optim::CyclicLR>(opt, doubles("base_lrs"), doubles("max_lrs"), o);
  }
  if (type == "warmrestarts") {
    return std::make_shared<optim::CosineAnnealingWarmRestarts>(opt, i("T_0"), i("T_mult"),
                                                                d("eta_min"));
  }
  if (type == "sequential") {
    return std::make_shared<optim::SequentialLR>(opt, members(), ints("milestones"));
  }
  if (type == "chained") return std::make_shared<optim::ChainedScheduler>(members());
  FAIL("unknown scheduler type '" << type << "': " << kRegenerate);
  return nullptr;
}

void check_values(const char* what, const std::vector<double>& got, const std::vector<double>& want,
                  int& checked) {
  REQUIRE(got.size() == want.size());
  for (size_t g = 0; g < got.size(); ++g) {
    INFO(what << " of group " << g << ": ember " << got[g] << ", PyTorch " << want[g]);
    CHECK(close(got[g], want[g]));
    if (got[g] == want[g]) {
      ++g_exact;
    } else if (std::getenv("EMBER_SCHEDULER_REPORT")) {
      std::printf("  not bit for bit: %s of group %zu: ember %.17g, PyTorch %.17g\n", what, g,
                  got[g], want[g]);
    }
    ++checked;
  }
}

}  // namespace

TEST_CASE("schedulers: every lr PyTorch 1.13 computes, action by action", "[optim][scheduler]") {
  const std::string path = EMBER_FIXTURE_DIR "/optim/schedulers.txt";
  std::ifstream in(path);
  if (!in) FAIL("cannot open " << path << ": " << kRegenerate);
  std::unique_ptr<Case> c;
  std::shared_ptr<optim::LRScheduler> last_acted;
  int cases = 0, values = 0, lines = 0;
  int total_cases = -1, total_values = -1;
  std::string line, action;
  while (std::getline(in, line)) {
    ++lines;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::vector<std::string> t;
    for (std::string w; ss >> w;) t.push_back(w);
    INFO(path << ":" << lines << ": " << line);
    const std::string where = c ? "case " + c->label + ", after '" + action + "'" : "";
    INFO(where);
    if (std::getenv("EMBER_SCHEDULER_REPORT") && t[0] == "case") std::printf("%s\n", line.c_str());
    const std::string& kind = t[0];
    if (kind == "schedulers") {
      REQUIRE(t.size() == 4);
      REQUIRE(t[1] == "1");
    } else if (kind == "case") {
      c = std::make_unique<Case>();
      c->label = t[1];
    } else if (kind == "optimizer") {
      // optimizer sgd|adam lrs <v>... momentum <v>
      const size_t m = static_cast<size_t>(std::find(t.begin(), t.end(), "momentum") - t.begin());
      REQUIRE(m + 1 < t.size());
      const double momentum = std::stod(t[m + 1]);
      for (size_t k = 3; k < m; ++k) c->params.push_back(zeros({2}, kFloat64).requires_grad_());
      if (t[1] == "sgd") {
        std::vector<optim::SGDParamGroup> groups;
        for (size_t k = 3; k < m; ++k) {
          optim::SGDOptions o;
          o.lr = std::stod(t[k]);
          o.momentum = momentum;
          groups.push_back({{c->params[k - 3]}, o});
        }
        c->opt = std::make_unique<optim::SGD>(groups);
      } else {
        REQUIRE(t[1] == "adam");
        std::vector<optim::AdamParamGroup> groups;
        for (size_t k = 3; k < m; ++k) {
          optim::AdamOptions o;
          o.lr = std::stod(t[k]);
          o.beta1 = momentum;
          groups.push_back({{c->params[k - 3]}, o});
        }
        c->opt = std::make_unique<optim::Adam>(groups);
      }
    } else if (kind == "sched") {
      std::map<std::string, std::string> kv;
      for (size_t k = 3; k + 1 < t.size(); k += 2) kv[t[k]] = t[k + 1];
      last_acted = build(*c, t[2], kv);
      c->made[t[1]] = last_acted;
      action = line;
    } else if (kind == "step") {
      last_acted = c->made.at(t[1]);
      if (t.size() == 4) {
        REQUIRE(t[2] == "metric");
        auto* plateau = dynamic_cast<optim::ReduceLROnPlateau*>(last_acted.get());
        REQUIRE(plateau != nullptr);
        plateau->step(std::stod(t[3]));
      } else {
        last_acted->step();
      }
      action = line;
    } else if (kind == "stepepoch") {
      last_acted = c->made.at(t[1]);
      auto* restarts = dynamic_cast<optim::CosineAnnealingWarmRestarts*>(last_acted.get());
      REQUIRE(restarts != nullptr);
      restarts->step(std::stod(t[2]));
      action = line;
    } else if (kind == "addgroup") {
      // add_param_group({"params": [new], "lr": v}): the other options from the defaults.
      c->params.push_back(zeros({2}, kFloat64).requires_grad_());
      if (auto* sgd = dynamic_cast<optim::SGD*>(c->opt.get())) {
        optim::SGDOptions o = sgd->defaults();
        o.lr = std::stod(t[1]);
        sgd->add_param_group({{c->params.back()}, o});
      } else {
        auto* adam = dynamic_cast<optim::Adam*>(c->opt.get());
        REQUIRE(adam != nullptr);
        optim::AdamOptions o = adam->defaults();
        o.lr = std::stod(t[1]);
        adam->add_param_group({{c->params.back()}, o});
      }
      last_acted = nullptr;
      action = line;
    } else if (kind == "setlr") {
      c->opt->set_lr(std::stoul(t[1]), std::stod(t[2]));
      last_acted = nullptr;
      action = line;
    } else if (kind == "lr") {
      // lr <per group>... [momentum <per group>...] [last <per group>...]
      std::map<std::string, std::vector<double>> want;
      std::string key = "lr";
      for (size_t k = 1; k < t.size(); ++k) {
        if (t[k] == "momentum" || t[k] == "last") key = t[k];
        else want[key].push_back(std::stod(t[k]));
      }
      std::vector<double> lrs, momenta;
      for (size_t g = 0; g < c->opt->num_param_groups(); ++g) {
        lrs.push_back(c->opt->lr(g));
        if (want.count("momentum")) momenta.push_back(c->opt->momentum(g));
      }
      check_values("lr", lrs, want["lr"], c->checked);
      if (want.count("momentum")) check_values("momentum", momenta, want["momentum"], c->checked);
      if (want.count("last")) {
        REQUIRE(last_acted != nullptr);
        check_values("get_last_lr()", last_acted->get_last_lr(), want["last"], c->checked);
      }
    } else if (kind == "end") {
      REQUIRE(c->checked > 0);
      values += c->checked;
      ++cases;
      c.reset();
    } else if (kind == "total") {
      REQUIRE(t.size() == 4);
      total_cases = std::stoi(t[1]);
      total_values = std::stoi(t[3]);
    } else {
      FAIL("unknown line '" << kind << "': " << kRegenerate);
    }
  }
  INFO(path << " is truncated or was not read whole: " << kRegenerate);
  CHECK(total_cases == cases);
  CHECK(total_values == values);
  CHECK(cases >= 25);
  if (std::getenv("EMBER_SCHEDULER_REPORT")) {
    std::printf("schedulers.txt: %d cases, %d values, %d bit for bit\n", cases, values, g_exact);
  }
}
