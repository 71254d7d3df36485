// A plan's model identity names the weights' storage precisely: a plan made for BF16 weights or
// for another quantization preset is refused for a quantized file, saying what differs; another
// file of the same preset mix is the same model; a plan from before the field compares dtype
// alone, as it did.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/formats/model.h"
#include "engine/plans/plan.h"
#include "engine/plans/plan_check.h"
#include "quant_files.h"

namespace sandwich::engine {
namespace {

std::unique_ptr<Model> load(const std::filesystem::path& file,
                            WeightDType dtype = WeightDType::Auto) {
  LoadOptions lo;
  lo.model = file.string();
  lo.dtype = dtype;
  lo.require_tokenizer = false;
  lo.threads = 1;
  return load_model(lo);
}

// What apply_plan compares: the identity of the loaded model.
ModelIdentity identity_of(const Model& m, const std::filesystem::path& file) {
  return model_identity(m.config, std::string(weight_dtype_name(m.weight_dtype())), file.string(),
                        m.weight_storage, m.weight_storage_name);
}

TEST(PlanIdentity, AQuantizedModelNamesItsPresetAndItsTensorsByType) {
  test::TempDir dir;
  const auto m = load(test::write_tiny_quantized(dir, "q4_k_m"));
  EXPECT_EQ(m->weight_storage_name, "q4_k_m");
  EXPECT_EQ(m->weight_storage.rfind("q4_k x ", 0), 0u) << m->weight_storage;
  EXPECT_NE(m->weight_storage.find("q6_k x "), std::string::npos) << m->weight_storage;
  EXPECT_NE(m->weight_storage.find("f32 x "), std::string::npos) << m->weight_storage;
  EXPECT_EQ(m->weight_storage.find("GiB"), std::string::npos) << m->weight_storage;
  const ModelIdentity id = identity_of(*m, dir / "tiny-q4_k_m.gguf");
  EXPECT_EQ(id.weights, m->weight_storage);
  EXPECT_EQ(id.weights_name, "q4_k_m");
  EXPECT_EQ(id.dtype, "bf16");
  // Widened to BF16, it is a BF16 model.
  const auto widened = load(dir / "tiny-q4_k_m.gguf", WeightDType::BF16);
  EXPECT_EQ(widened->weight_storage, "bf16");
  EXPECT_EQ(widened->weight_storage_name, "bf16");
}

TEST(PlanIdentity, APlanForOtherWeightsOfTheSameShapesIsAnotherModel) {
  test::TempDir dir;
  const auto km = load(test::write_tiny_quantized(dir, "q4_k_m"));
  const auto ks = load(test::write_tiny_quantized(dir, "q4_k_s"));
  const ModelIdentity q4km = identity_of(*km, dir / "tiny-q4_k_m.gguf");
  const ModelIdentity q4ks = identity_of(*ks, dir / "tiny-q4_k_s.gguf");
  const ModelIdentity bf16 = model_identity(km->config, "bf16", "");  // dummy BF16 weights
  EXPECT_EQ(bf16.weights, "bf16");

  std::string d = q4km.mismatch(bf16);
  EXPECT_EQ(d.rfind("the plan was made for bf16 weights, this model is q4_k_m (q4_k x ", 0), 0u)
      << d;
  EXPECT_EQ(d.find("dtype"), std::string::npos) << d;  // both store their other matrices as BF16
  d = q4km.mismatch(q4ks);
  EXPECT_NE(d.find("the plan was made for q4_k_s (" + q4ks.weights +
                   ") weights, this model is "
                   "q4_k_m (" +
                   q4km.weights + ")"),
            std::string::npos)
      << d;
  EXPECT_NE(bf16.mismatch(q4km), "");
  EXPECT_NE(q4ks.mismatch(q4km), "");
}

TEST(PlanIdentity, AnotherFileOfTheSamePresetIsTheSameModel) {
  test::TempDir dir;
  const auto a = load(test::write_tiny_quantized(dir, "q4_k_m", "a.gguf"));
  const auto b = load(test::write_tiny_quantized(dir, "q4_k_m", "b.gguf"));
  EXPECT_EQ(identity_of(*a, dir / "a.gguf").mismatch(identity_of(*b, dir / "b.gguf")), "");
}

TEST(PlanIdentity, PlansFromBeforeTheFieldCompareDtypeAlone) {
  test::TempDir dir;
  const auto m = load(test::write_tiny_quantized(dir, "q4_k_m"));
  const ModelIdentity here = identity_of(*m, dir / "tiny-q4_k_m.gguf");
  // A version-1 plan as sandwich-tune wrote it before: no "weights".
  const auto old_plan = [&](const std::string& dtype) {
    Plan p;
    p.version = kPlanVersion;
    p.model = model_identity(m->config, dtype, "");
    p.machine = this_machine_fingerprint("0-1");
    p.prefill = p.decode = single_rank_config(1);
    write_plan(p, dir / "old.json");
    std::ifstream in(dir / "old.json");
    nlohmann::json j = nlohmann::json::parse(in);
    j["model"].erase("weights");
    j["model"].erase("weights_name");
    std::ofstream(dir / "old.json") << j.dump(2);
    return load_plan(dir / "old.json");
  };
  const Plan bf16 = old_plan("bf16");
  ASSERT_TRUE(bf16.model);
  EXPECT_EQ(bf16.model->weights, "");
  EXPECT_EQ(here.mismatch(*bf16.model), "");  // as before: its dtype is the model's
  EXPECT_NE(here.mismatch(*old_plan("f32").model).find("dtype is \"bf16\", the plan's \"f32\""),
            std::string::npos);
  // A plan written now keeps both fields.
  Plan p;
  p.version = kPlanVersion;
  p.model = here;
  p.machine = this_machine_fingerprint("0-1");
  p.prefill = p.decode = single_rank_config(1);
  write_plan(p, dir / "new.json");
  const Plan r = load_plan(dir / "new.json");
  EXPECT_EQ(r.model->weights, here.weights);
  EXPECT_EQ(r.model->weights_name, "q4_k_m");
  EXPECT_EQ(here.mismatch(*r.model), "");
}

TEST(PlanIdentity, ApplyPlanRefusesAPlanForBf16WeightsInOneLine) {
  test::TempDir dir;
  const auto file = test::write_tiny_quantized(dir, "q4_k_m");
  const auto m = load(file);
  Plan p;
  p.version = kPlanVersion;
  p.model = model_identity(m->config, "bf16", "");
  p.machine = this_machine_fingerprint("0-1");
  p.prefill = p.decode = single_rank_config(1);
  write_plan(p, dir / "bf16.json");
  ResolvedPlan r;
  r.plan = load_plan(dir / "bf16.json");
  std::ostringstream log;
  try {
    apply_plan(r, *m, file.string(), "test", log);
    ADD_FAILURE() << "the BF16 plan was applied";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find((dir / "bf16.json").string() +
                        " was made for another model (the plan was made for bf16 weights, this "
                        "model is q4_k_m (q4_k x "),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("--plan-mismatch warn"), std::string::npos) << what;
  }
  r.mismatch = PlanMismatch::Warn;
  EXPECT_NO_THROW(apply_plan(r, *m, file.string(), "test", log));
  EXPECT_NE(log.str().find("test: warning: "), std::string::npos) << log.str();
}

}  // namespace
}  // namespace sandwich::engine
