// Every option a launch file gpuplan writes is one its framework has, with a value of the option's type and among
// its choices: checked against the frameworks' full option lists (tests/data/frameworks/*.json, extracted from
// each framework's source at the commit they name), never against gpuplan's own tables.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "framework/shell_script.hpp"
#include "framework/toml_document.hpp"
#include "gpuplan/api.hpp"

using nlohmann::json;

namespace {

json framework_json(const std::string& name) {
  std::ifstream in(std::string(GPUPLAN_TEST_DATA_DIR) + "/frameworks/" + name);
  return json::parse(in);
}

// Jobs that use every kind of option: dense with TP and selective recompute, MoE over two nodes with pipeline
// and interleaving, long context with CP, offloaded states with partial recompute.
std::vector<json> jobs(const std::string& framework) {
  const bool titan = framework == "torchtitan", deepspeed = framework == "deepspeed";
  const json model = titan ? json("llama-3.1-8b") : json("mixtral-8x7b");
  std::vector<json> out = {
      {{"model", "llama-3.1-8b"}, {"system", "dgx-h100"}, {"nodes", 1}, {"tp", 2}, {"global_batch", 64},
       {"sequence_parallel", !deepspeed}, {"zero", titan ? 3 : 1}, {"recompute", deepspeed ? "full" : "selective"},
       {"tp_overlap", !deepspeed}},
      {{"model", model}, {"system", "dgx-h100"}, {"nodes", 2}, {"pp", 2}, {"vpp", deepspeed ? 1 : 2},
       {"ep", titan ? 1 : 8}, {"etp", 1}, {"global_batch", 64}, {"zero", titan ? 3 : 1}, {"precision", "bf16"}},
      {{"model", "llama-3.1-8b"}, {"system", "dgx-h100"}, {"nodes", 1}, {"tp", 2}, {"cp", deepspeed ? 1 : 2},
       {"seq_len", 16384}, {"global_batch", 16}, {"zero", titan || deepspeed ? 3 : 1}, {"recompute", "full"}},
      {{"model", "llama-3.1-8b"}, {"system", "dgx-h100"}, {"nodes", 1}, {"global_batch", 32},
       {"zero", titan || deepspeed ? 3 : 1}, {"offload", titan || deepspeed ? "optimizer+params" : "optimizer"},
       {"recompute", "full"}, {"recompute_layers", 8}},
  };
  for (json& job : out) {
    job["framework"] = framework;
    job["emit"] = framework;
  }
  if (!titan && !deepspeed) out[1]["moe_dispatcher"] = "flex";   // Megatron-Core's DeepEP/HybridEP dispatcher
  return out;
}

json files_of(const json& job) {
  const json result = gpuplan::api::run_json(gpuplan::api::Question::estimate, job);
  return result.at("launch_files");
}

const json& file(const json& files, const std::string& name) {
  for (const json& f : files)
    if (f.at("name") == name) return f;
  ADD_FAILURE() << "no " << name;
  return files.at(0);
}

bool of_type(const std::string& value, const std::string& type) {
  if (type == "int") return !value.empty() && value.find_first_not_of("-0123456789") == std::string::npos;
  if (type == "float") return !value.empty() && value.find_first_not_of("-0123456789.e") == std::string::npos;
  return true;
}

// The arguments after pretrain_gpt.py in a launch script, expanded as bash expands them.
std::vector<std::string> pretrain_arguments(const std::string& script) {
  const auto parsed = gpuplan::framework::read_shell_script(script, "train_megatron.sh");
  for (const auto& command : parsed.commands) {
    std::vector<std::string> words;
    bool after = false;
    for (const auto& word : command.words) {
      if (after) words.push_back(word.text);
      after = after || word.text == "pretrain_gpt.py";
    }
    if (after) return words;
  }
  ADD_FAILURE() << "no pretrain_gpt.py command";
  return {};
}

void expect_megatron_flags_exist(const std::vector<std::string>& words, const json& all) {
  std::map<std::string, json> flags;
  for (const json& option : all.at("options"))
    for (const json& name : option.at("flags")) flags[name.get<std::string>()] = option;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i].rfind("--", 0) != 0) continue;
    const auto found = flags.find(words[i]);
    ASSERT_NE(found, flags.end()) << words[i] << " is not a pretrain_gpt.py argument";
    const json& option = found->second;
    const std::string action = option.at("action");
    if (action == "store_true" || action == "store_false" || option.at("type") == "list") continue;
    ASSERT_LT(i + 1, words.size()) << words[i];
    const std::string value = words[i + 1];
    EXPECT_TRUE(of_type(value, option.at("type"))) << words[i] << " " << value;
    if (option.at("choices").is_array()) {
      bool listed = false;
      for (const json& choice : option.at("choices")) listed = listed || (choice.is_string() ? choice.get<std::string>() : choice.dump()) == value;
      EXPECT_TRUE(listed) << words[i] << " " << value;
    }
  }
}

}  // namespace

TEST(EmittedOptions, MegatronFlagsAreArgumentsOfPretrainGpt) {
  const json all = framework_json("megatron_all_flags.json");
  for (const json& job : jobs("megatron")) {
    const json files = files_of(job);
    expect_megatron_flags_exist(pretrain_arguments(file(files, "train_megatron.sh").at("text")), all);
  }
}

TEST(EmittedOptions, DeepSpeedKeysAreKeysOfItsConfig) {
  const json sections = framework_json("deepspeed_sections.json");
  const json curated = framework_json("deepspeed.json");
  std::set<std::string> top(sections.at("top_level_keys").begin(), sections.at("top_level_keys").end());
  std::set<std::string> dotted;   // the keys of the strict sections, and the documented keys of the plain ones
  for (const auto& [section, body] : sections.at("sections").items())
    for (const json& field : body.at("fields")) dotted.insert(section + "." + field.at("key").get<std::string>());
  for (const json& option : curated.at("options")) dotted.insert(option.at("name").get<std::string>());
  for (const json& job : jobs("deepspeed")) {
    const std::string text = file(files_of(job), "ds_config.json").at("text");
    const json config = json::parse(text, nullptr, true, /*ignore_comments=*/true);
    for (const auto& [key, value] : config.items()) {
      EXPECT_TRUE(top.count(key)) << key;
      if (!value.is_object() || key == "optimizer") continue;
      for (const auto& [sub, inner] : value.items()) {
        if (inner.is_object()) {
          for (const auto& [leaf, unused] : inner.items())
            EXPECT_TRUE(dotted.count(key + "." + sub + "." + leaf)) << key << "." << sub << "." << leaf;
        } else {
          EXPECT_TRUE(dotted.count(key + "." + sub)) << key << "." << sub;
        }
      }
    }
  }
}

TEST(EmittedOptions, TorchtitanKeysAreJobKeysAndHeadOverridesAreItsFlags) {
  const json keys = framework_json("torchtitan_all_keys.json");
  std::map<std::string, std::string> types;
  for (const json& key : keys.at("keys")) types[key.at("key").get<std::string>()] = key.at("type").get<std::string>();
  const json current = framework_json("torchtitan_head.json");
  std::set<std::string> head;
  for (const json& option : current.at("options")) head.insert(option.at("name").get<std::string>());
  for (const json& job : jobs("torchtitan")) {
    const json files = files_of(job);
    const auto document = gpuplan::framework::read_toml("torchtitan.toml", file(files, "torchtitan.toml").at("text").get<std::string>());
    for (const auto& [key, value] : document.values) {
      ASSERT_TRUE(types.count(key)) << key << " is not a v0.2.2 job key";
      const std::string& type = types[key];
      if (type == "int") {
        EXPECT_TRUE(value.integer.has_value()) << key;
      } else if (type == "bool") {
        EXPECT_TRUE(value.boolean.has_value()) << key;
      } else if (type == "str") {
        EXPECT_TRUE(value.text.has_value()) << key;
      }
    }
    const std::string script = file(files, "train_torchtitan.sh").at("text");
    for (std::size_t at = script.find(" --"); at != std::string::npos; at = script.find(" --", at + 1)) {
      const std::string flag = script.substr(at + 3, script.find_first_of(" \n", at + 3) - at - 3);
      EXPECT_TRUE(head.count(flag)) << flag << " is not a current torchtitan flag";
    }
  }
}

TEST(EmittedOptions, NemoOverridesAreRecipeAttributes) {
  const json nemo = framework_json("nemo.json");
  std::set<std::string> known;
  for (const json& option : nemo.at("options")) known.insert(option.at("name").get<std::string>());
  for (const json& job : jobs("nemo")) {
    const std::string script = file(files_of(job), "train_nemo.sh").at("text");
    const auto parsed = gpuplan::framework::read_shell_script(script, "train_nemo.sh");
    ASSERT_FALSE(parsed.commands.empty());
    for (const auto& word : parsed.commands.back().words) {
      const std::size_t equals = word.text.find('=');
      if (equals == std::string::npos) continue;
      EXPECT_TRUE(known.count(word.text.substr(0, equals))) << word.text;
    }
  }
}

// Flash attention is priced as Transformer Engine's fused (cuDNN) kernels (the H100 and B200 efficiencies of
// data/perf.json and data/gemm/), which NVIDIA's Llama-3 8B FP8 example asks for with --attention-backend fused
// (tests/data/frameworks/megatron/train_llama3_8b_h100_fp8.sh). Megatron's 'flash' would force the flash-attn
// package, whose kernels run at other rates; eager attention is Megatron's 'unfused'.
TEST(EmittedOptions, FlashAttentionIsWrittenAsTransformerEnginesFusedBackend) {
  for (const std::string framework : {"megatron", "nemo"}) {
    const std::string option = framework == "megatron" ? "--attention-backend " : "model.config.attention_backend=";
    json job = jobs(framework).at(0);
    EXPECT_NE(files_of(job).dump().find(option + "fused"), std::string::npos) << framework;
    job["attention"] = "eager";
    EXPECT_NE(files_of(job).dump().find(option + "unfused"), std::string::npos) << framework;
  }
}

TEST(EmittedOptions, DeepSpeedGradientDtypeIsTheOneItsEngineWouldPick) {
  // deepspeed/runtime/engine.py get_data_types: gradients in the model's 16-bit dtype under ZeRO and fp16, fp32
  // under bf16 without ZeRO (the BF16_Optimizer); a dtype the request gives is written as given.
  const auto written = [](int zero, const char* precision, const char* grad_dtype) {
    json job = jobs("deepspeed").front();
    job["zero"] = zero;
    job["precision"] = precision;
    if (grad_dtype != nullptr) job["grad_dtype"] = grad_dtype;
    const json config = json::parse(file(files_of(job), "ds_config.json").at("text").get<std::string>(), nullptr,
                                    true, /*ignore_comments=*/true);
    return config.at("data_types").at("grad_accum_dtype").get<std::string>();
  };
  EXPECT_EQ(written(1, "bf16", nullptr), "bf16");
  EXPECT_EQ(written(3, "bf16", nullptr), "bf16");
  EXPECT_EQ(written(0, "bf16", nullptr), "fp32");
  EXPECT_EQ(written(0, "fp16", nullptr), "fp16");
  EXPECT_EQ(written(1, "bf16", "fp32"), "fp32");
}
