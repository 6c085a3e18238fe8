// --filter expressions: comparisons, boolean logic, word columns, and errors.
#include <gtest/gtest.h>

#include "harness/sweep/filter.hpp"
#include "harness/sweep/sweep.hpp"

using namespace fa;

static Problem prob(int64_t S, DType t, bool causal) {
  Problem p;
  p.S = S, p.Sk = 2 * S, p.dtype = t, p.causal = causal, p.name = "enc-b1";
  return p;
}

TEST(Filter, ComparesNumericColumns) {
  EXPECT_TRUE(Filter("S>=1024")(prob(1024, DType::fp16, false)));
  EXPECT_FALSE(Filter("S>=1024")(prob(1023, DType::fp16, false)));
  EXPECT_TRUE(Filter("Sk>S")(prob(5, DType::fp16, false)));
  EXPECT_TRUE(Filter("S<2")(prob(1, DType::fp16, false)));
}

TEST(Filter, CombinesWithAndOrNotAndParentheses) {
  const Filter f("(S>=1024 && dtype==bf16) || !causal");
  EXPECT_TRUE(f(prob(2048, DType::bf16, true)));
  EXPECT_FALSE(f(prob(2048, DType::fp16, true)));
  EXPECT_TRUE(f(prob(16, DType::fp16, false)));
  EXPECT_FALSE(Filter("causal && S<10")(prob(16, DType::fp16, true)));
}

TEST(Filter, ComparesWordColumnsWithWords) {
  EXPECT_TRUE(Filter("name==enc-b1")(prob(1, DType::fp16, false)));
  EXPECT_TRUE(Filter("layout!=bhsd")(prob(1, DType::fp16, false)));
}

TEST(Filter, RejectsUnknownColumnsAndBadSyntaxAtParseTime) {
  EXPECT_THROW(Filter("SS>=3"), InputError);
  EXPECT_THROW(Filter("S>="), InputError);
  EXPECT_THROW(Filter("(S>3"), InputError);
  EXPECT_THROW(Filter("dtype<3"), InputError);
  try {
    Filter("Q>1");
    FAIL() << "Q>1 parsed";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field, "--filter");
    EXPECT_NE(std::string(e.what()).find("'Q'"), std::string::npos) << e.what();
  }
}

TEST(Filter, NestingBeyondTheDepthLimitIsAnInputErrorNotAStackOverflow) {
  const std::string deep = std::string(20000, '(') + "S>1" + std::string(20000, ')');
  const std::string nots = std::string(20000, '!') + "causal";
  std::string chain = "S>1";
  for (int i = 0; i < 20000; ++i) chain += " && S>1";
  for (const std::string& expr : {deep, nots, chain}) {
    try {
      Filter f(expr);
      FAIL() << "no error for an expression of " << expr.size() << " characters";
    } catch (const InputError& e) {
      EXPECT_EQ(e.field, "--filter");
      EXPECT_NE(std::string(e.what()).find("deep"), std::string::npos) << std::string(e.what()).substr(0, 200);
    }
  }
  EXPECT_TRUE(Filter(std::string(50, '(') + "S>0" + std::string(50, ')'))(prob(1, DType::fp16, false)));
}

TEST(Filter, AMisspeltWordColumnIsAnErrorNotAFilterThatKeepsNothing) {
  try {
    Filter("dtpye==bf16");
    FAIL() << "dtpye==bf16 parsed";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field, "--filter");
    EXPECT_NE(std::string(e.what()).find("unknown column 'dtpye'"), std::string::npos) << e.what();
  }
}

TEST(Filter, AValueAColumnCanNeverTakeIsAnError) {
  EXPECT_THROW(Filter("dtype==fp8"), InputError);
  try {
    Filter("layout!=bsdh");
    FAIL() << "bsdh is no layout";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(bshd, bhsd, thd)"), std::string::npos) << "every layout is named: " << e.what();
  }
  EXPECT_NO_THROW(Filter("dtype==bf16 && layout==bhsd || layout==thd"));
  EXPECT_THROW(Filter("dtype==fp8_e4m3fnz"), InputError);
}

TEST(Filter, SelectsTheFnuzDtypesByName) {
  const Filter f("dtype==fp8_e4m3fnuz");
  EXPECT_TRUE(f(prob(16, DType::fp8_e4m3fnuz, false)));
  EXPECT_FALSE(f(prob(16, DType::fp8_e4m3, false)));
  EXPECT_TRUE(Filter("dtype!=fp8_e5m2fnuz")(prob(16, DType::fp8_e5m2, false)));
}

TEST(Filter, ErrorsBehindAShortCircuitSurfaceAtParseTimeToo) {
  EXPECT_THROW(Filter("S>0 || dtype==fp8"), InputError);
  EXPECT_THROW(Filter("S<0 && Sq>3"), InputError);
}
