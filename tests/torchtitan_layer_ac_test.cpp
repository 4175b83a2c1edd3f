// torchtitan's layer-frequency selective checkpointing (selective_ac_option "N", torchtitan/distributed/
// activation_checkpoint.py _apply_layer_sac: a counter over a rank's blocks wraps every Nth one in a full
// checkpoint). gpuplan reads and writes it as a full recompute of floor(layers per stage / N) layers; Llama-3.1-8B
// has 32 layers.
#include <gtest/gtest.h>

#include <string>

#include "framework/launch.hpp"
#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"

using gpuplan::framework::LaunchConfig;
using gpuplan::framework::read_launch_config;
using nlohmann::json;

namespace {

LaunchConfig read_titan(const std::string& option, int pp) {
  const std::string toml = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\npipeline_parallel_degree = " +
                           std::to_string(pp) + "\n[activation_checkpoint]\nmode = \"selective\"\n" +
                           "selective_ac_option = \"" + option + "\"\n";
  return read_launch_config("job.toml", toml);
}

json estimate(std::int64_t recompute_layers) {
  return {{"model", "llama-3.1-8b"}, {"system", "dgx-h100"}, {"nodes", 1},      {"framework", "torchtitan"},
          {"zero", 3},                {"recompute", "full"},    {"recompute_layers", recompute_layers},
          {"emit", "torchtitan"}};
}

std::string toml_of(const json& result) {
  for (const json& f : result.at("launch_files"))
    if (f.at("name") == "torchtitan.toml") return f.at("text");
  ADD_FAILURE() << "no torchtitan.toml";
  return "";
}

}  // namespace

TEST(TorchtitanLayerCheckpointing, ReadsEveryNthBlockAsLayersPerStage) {
  const LaunchConfig every2 = read_titan("2", 1);   // blocks 2, 4, ..., 32: 16 of 32
  EXPECT_EQ(every2.layout.at("recompute"), "full");
  EXPECT_EQ(every2.layout.at("recompute_layers"), 16);
  const LaunchConfig every3 = read_titan("3", 2);   // 16 blocks per rank: 3, 6, ..., 15
  EXPECT_EQ(every3.layout.at("recompute_layers"), 5);
  const LaunchConfig every1 = read_titan("1", 1);   // every block: the whole stage
  EXPECT_EQ(every1.layout.at("recompute"), "full");
  EXPECT_FALSE(every1.layout.contains("recompute_layers"));
  EXPECT_EQ(read_titan("40", 1).layout.at("recompute"), "none");   // the counter never reaches 40
  const LaunchConfig op = read_titan("op", 1);
  EXPECT_EQ(op.layout.at("recompute"), "selective");
  // torchtitan raises on anything but "op" or digits (str.isdigit): not taken, and said so.
  const LaunchConfig bad = read_titan("2.5", 1);
  EXPECT_FALSE(bad.layout.contains("recompute"));
  bool said = false;
  for (const std::string& note : bad.not_understood)
    said = said || note.find("selective_ac_option 2.5") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(TorchtitanLayerCheckpointing, WritesTheFrequencyAndReadsItBack) {
  const json written = gpuplan::api::run_json(gpuplan::api::Question::estimate, estimate(8));
  const std::string toml = toml_of(written);
  EXPECT_NE(toml.find("mode = \"selective\"\nselective_ac_option = \"4\""), std::string::npos) << toml;
  const json back = gpuplan::api::run_json(gpuplan::api::Question::estimate,
                                           {{"system", "dgx-h100"}, {"nodes", 1},
                                            {"from", {{"path", "torchtitan.toml"}, {"text", toml}}}});
  // The same 8 layers recomputed: the same recompute time and step, and not the 32 of a full recompute.
  EXPECT_EQ(back.at("time").at("breakdown").at("recompute"), written.at("time").at("breakdown").at("recompute"));
  EXPECT_EQ(back.at("time").at("step_s"), written.at("time").at("step_s"));
  const json all = gpuplan::api::run_json(gpuplan::api::Question::estimate, estimate(32));
  EXPECT_GT(all.at("time").at("breakdown").at("recompute").get<double>(),
            3.5 * written.at("time").at("breakdown").at("recompute").get<double>());
}

TEST(TorchtitanLayerCheckpointing, RejectsCountsNoFrequencyGives) {
  // floor(32 / N) is 32, 16, 10, 8, 6, 5, 4, ...: never 20.
  try {
    gpuplan::api::run_json(gpuplan::api::Question::estimate, estimate(20));
    FAIL() << "20 of 32 layers accepted";
  } catch (const gpuplan::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("recompute_layers"), std::string::npos) << e.what();
  }
}
