// One syntax for every count, from the command line and from JSON requests alike: plain digits, exponent form when
// the value is whole, and the suffixes K, M, B, T (powers of 1000) and Ki, Mi, Gi, Ti (powers of 1024).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.hpp"
#include "gpuplan/api.hpp"
#include "gpuplan/error.hpp"
#include "gpuplan/units.hpp"

using gpuplan::parse_count;
using gpuplan::test::run_cli;

TEST(CountSyntax, TheParser) {
  EXPECT_EQ(parse_count("4096", "f"), 4096.0);
  EXPECT_EQ(parse_count("1e6", "f"), 1000000.0);
  EXPECT_EQ(parse_count("8K", "f"), 8000.0);
  EXPECT_EQ(parse_count("8Ki", "f"), 8192.0);             // 8 x 1024
  EXPECT_EQ(parse_count("2Mi", "f"), 2097152.0);          // 2 x 1024^2
  EXPECT_EQ(parse_count("1Gi", "f"), 1073741824.0);       // 1024^3
  EXPECT_EQ(parse_count("7B", "f"), 7e9);
  EXPECT_EQ(parse_count("1.5T", "f"), 1.5e12);
  EXPECT_THROW(parse_count("1.5", "f"), gpuplan::InputError);
  EXPECT_THROW(parse_count("1.0001K", "f"), gpuplan::InputError);   // 1000.1
  EXPECT_THROW(parse_count("abc", "f"), gpuplan::InputError);
  EXPECT_THROW(parse_count("4Q", "f"), gpuplan::InputError);
}

TEST(CountSyntax, EveryCountOptionOnTheCommandLine) {
  const auto seq = [](const std::string& given) {
    const auto r = run_cli("memory --model llama-3.1-8b --json --seq-len " + given);
    EXPECT_EQ(r.status, 0) << given << ": " << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out).at("training").at("seq_len").get<std::int64_t>() : -1;
  };
  EXPECT_EQ(seq("1e4"), 10000);
  EXPECT_EQ(seq("4K"), 4000);
  EXPECT_EQ(seq("8Ki"), 8192);
  EXPECT_EQ(run_cli("memory --model llama-3.1-8b --global-batch 1K --gpus 8").status, 0);
  EXPECT_EQ(run_cli("size --model llama-3.1-8b --tokens 1T --systems dgx-h100 --nodes 1 --seq-len 4Ki --threads 1")
                .status,
            0);
  for (const std::string args : {"memory --model llama-3.1-8b --seq-len 1.5", "memory --params 1.5",
                                  "size --model llama-3.1-8b --tokens 2.5 --nodes 1"}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_NE(r.err.find("is not a whole number; accepted: a whole number such as 4096, 1e6, 8K, 8Ki"),
              std::string::npos)
        << args << ": " << r.err;
  }
}

TEST(CountSyntax, JsonRequestsReadCountsTheSameWay) {
  namespace api = gpuplan::api;
  const auto request = api::from_json<api::MemoryRequest>(nlohmann::json::parse(R"({"training": {"seq_len": "8Ki",
      "global_batch": 1e3}, "layout": {"tp": "2"}})"));
  EXPECT_EQ(request.training.seq_len, 8192);
  EXPECT_EQ(request.training.global_batch, 1000);
  EXPECT_EQ(request.layout.tp, 2);
  EXPECT_THROW(api::from_json<api::MemoryRequest>(nlohmann::json::parse(R"({"training": {"seq_len": 4096.5}})")),
               gpuplan::InputError);
}

// A config given as text reads back from the written request as the same text, whatever its spacing; one given
// as an object reads back as that object.
TEST(RequestJson, ModelConfigTextSurvivesARoundTrip) {
  namespace api = gpuplan::api;
  const auto round_trip = [](const std::string& document) {
    const auto request = api::from_json<api::MemoryRequest>(nlohmann::json::parse(document));
    const auto again = api::from_json<api::MemoryRequest>(nlohmann::json::parse(api::to_json(request).dump()));
    EXPECT_EQ(again.model, request.model) << document;
    return again.model.config.value_or("(none)");
  };
  EXPECT_EQ(round_trip(R"({"model": {"config": "1 "}})"), "1 ");
  EXPECT_EQ(round_trip(R"({"model": {"config": "{\"hidden_size\": 64}"}})"), R"({"hidden_size": 64})");
  EXPECT_EQ(round_trip(R"({"model": {"config": {"hidden_size": 64}}})"), R"({"hidden_size":64})");
  EXPECT_EQ(round_trip(R"({"model": {"hidden_size": 64, "vocab_size": 8}})"), R"({"hidden_size":64,"vocab_size":8})");
}
