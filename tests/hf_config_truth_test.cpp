// Every tests/data/hf-configs/<org--name>/ folder holds a real config.json and a truth.json with the model's
// published parameter count and where it was published. The count must match exactly (or to the stated
// significant digits where the publisher only gave a rounded figure).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gpuplan/model.hpp"
#include "gpuplan/host.hpp"
#include "gpuplan/model_io.hpp"

namespace fs = std::filesystem;
using namespace gpuplan;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Rounds to `digits` significant digits, as a publisher quoting "671B" did.
double round_sig(double x, int digits) {
  const double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(x))));
  return std::round(x * scale) / scale;
}

}  // namespace

TEST(HfConfigTruth, EveryStoredConfigMatchesItsPublishedCount) {
  const fs::path root = fs::path(GPUPLAN_TEST_DATA_DIR) / "hf-configs";
  int checked = 0;
  for (const auto& dir : fs::directory_iterator(root)) {
    SCOPED_TRACE(dir.path().filename().string());
    if (!fs::exists(dir.path() / "truth.json")) continue;  // checked by a hand derivation elsewhere
    const auto truth = nlohmann::json::parse(slurp(dir.path() / "truth.json"));
    const ModelConfig m = load_model((dir.path() / "config.json").string());
    EXPECT_EQ(m.model_type, truth.at("model_type").get<std::string>());
    const ParamCounts p = count_params(m);
    const auto published = truth.at("total_params").get<std::int64_t>();
    const std::string exactness = truth.value("total_params_exactness", "exact");
    if (exactness == "exact") {
      EXPECT_EQ(p.total, published);
    } else {
      // "3 significant digits (671B)..." and the like.
      const int digits = std::stoi(exactness.substr(0, exactness.find(' ')));
      EXPECT_EQ(round_sig(static_cast<double>(p.total), digits), static_cast<double>(published));
    }
    ++checked;
  }
  EXPECT_GE(checked, 11);
}
