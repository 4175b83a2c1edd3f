// `gpuplan catalog` as a user runs it: exit codes, JSON, and --catalog overrides.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include "cli_runner.hpp"

namespace {

using gpuplan::test::CliRun;

CliRun run_both_streams(const std::string& args) {
  CliRun r = gpuplan::test::run_cli(args);
  r.out += r.err;  // these tests read both streams together
  return r;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("gpuplan_catalog_cli_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(CatalogCli, JsonListsEveryKindWithSources) {
  const CliRun r = run_both_streams("catalog --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* kind : {"gpus", "links", "systems"}) {
    ASSERT_TRUE(j.contains(kind)) << kind;
    for (const auto& e : j[kind]) EXPECT_FALSE(e["source"].get<std::string>().empty()) << e["name"];
  }
  ASSERT_TRUE(j.contains("models"));
  for (const auto& m : j["models"]) EXPECT_GT(m["total_params"].get<long long>(), 0) << m["name"];
}

TEST(CatalogCli, OneEntryInDetail) {
  const CliRun r = run_both_streams("catalog gpus h100-sxm-80gb");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["usable_memory_bytes"].get<long long>(), 81559LL * 1024 * 1024);   // nvidia-smi: 81559 MiB
  EXPECT_DOUBLE_EQ(j["scaleup_bidirectional_GBps"].get<double>(), 18 * 25.0 * 2);
}

TEST(CatalogCli, UnknownKindAndNameExitTwoWithSuggestion) {
  CliRun r = run_both_streams("catalog gpu");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("did you mean gpus"), std::string::npos) << r.out;
  r = run_both_streams("catalog systems dgx-h1000");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("dgx-h100"), std::string::npos) << r.out;
}

TEST(CatalogCli, CatalogFileOverrides) {
  const std::string f = temp_file("override.json", R"({"gpus": {"b200": {"usable_memory_bytes": "179 GiB"}}})");
  const CliRun r = run_both_streams("catalog gpus b200 --catalog " + f);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["usable_memory_bytes"].get<long long>(), 179LL * 1024 * 1024 * 1024);
  EXPECT_EQ(j["origin"].get<std::string>(), f);
}

TEST(CatalogCli, MalformedCatalogFileExitsTwoNamingFileAndField) {
  std::string f = temp_file("bad.json", R"({"gpus": {"b200": {"memory_GBps": -1}}})");
  CliRun r = run_both_streams("catalog gpus --catalog " + f);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(f + ": gpus.b200.memory_GBps"), std::string::npos) << r.out;
  f = temp_file("broken.json", "{ not json");
  r = run_both_streams("catalog --catalog " + f);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(f), std::string::npos) << r.out;
  r = run_both_streams("catalog --catalog /nonexistent/catalog.json");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--catalog"), std::string::npos) << r.out;
}

}  // namespace
