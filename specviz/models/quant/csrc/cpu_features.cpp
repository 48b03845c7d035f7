// cpu_features() and isa(): the one place that asks the CPU what it runs and the one choice the process runs
// (cpu_features.h says why one place).
#include "cpu_features.h"

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace specviz {

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    __builtin_cpu_init();
    CpuFeatures f;
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.f16c = __builtin_cpu_supports("f16c");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512vnni = __builtin_cpu_supports("avx512vnni");
    return f;
  }();
  return features;
}

namespace {

constexpr const char* ENV_VAR = "SPECVIZ_Q4_ISA";
constexpr Isa BY_RANK[] = {SCALAR, AVX2, AVX512VNNI};

std::string supported_list() {
  std::string names;
  for (const auto& name : supported_isas()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// The Isa `name` names where this CPU runs it, else the sentence that refuses it (`what`: where the name came from).
Isa named(const std::string& name, const std::string& what) {
  for (Isa candidate : BY_RANK) {
    if (name != isa_name(candidate)) continue;
    if (!cpu_features().runs(candidate))
      throw std::invalid_argument(what + " asks for " + name + ", which this CPU does not run (it runs " +
                                  supported_list() + ").");
    return candidate;
  }
  throw std::invalid_argument(what + " must name one of scalar, avx2, avx512vnni; got '" + name + "'.");
}

// The first choice: the variable's value, read once per process, or the best this CPU runs; a refusal is kept as its
// sentence (thrown on every call until set_isa chooses), so the variable is never read twice.
struct First {
  Isa isa = SCALAR;
  std::string refused;
};

const First& first_choice() {
  static const First first = [] {
    First f;
    const char* forced = std::getenv(ENV_VAR);
    std::string name = forced ? forced : "";
    for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name.empty()) {
      for (Isa candidate : BY_RANK)
        if (cpu_features().runs(candidate)) f.isa = candidate;
      return f;
    }
    try {
      f.isa = named(name, ENV_VAR);
    } catch (const std::invalid_argument& refusal) {
      f.refused = refusal.what();
    }
    return f;
  }();
  return first;
}

std::atomic<int> choice{-1};   // the process's Isa; -1 until the first call or set_isa

}  // namespace

Isa isa() {
  int now = choice.load(std::memory_order_relaxed);
  if (now >= 0) return Isa(now);
  const First& first = first_choice();
  if (!first.refused.empty()) throw std::invalid_argument(first.refused);
  int unset = -1;
  choice.compare_exchange_strong(unset, int(first.isa));   // a set_isa in between wins
  return Isa(choice.load(std::memory_order_relaxed));
}

const char* isa_name(Isa chosen) {
  return chosen == AVX512VNNI ? "avx512vnni" : chosen == AVX2 ? "avx2" : "scalar";
}

std::string chosen_isa_name() { return isa_name(isa()); }

void set_isa(const std::string& name) { choice.store(int(named(name, "set_isa")), std::memory_order_relaxed); }

std::vector<std::string> supported_isas() {
  std::vector<std::string> names;
  for (Isa candidate : BY_RANK)
    if (cpu_features().runs(candidate)) names.push_back(isa_name(candidate));
  return names;
}

}  // namespace specviz
