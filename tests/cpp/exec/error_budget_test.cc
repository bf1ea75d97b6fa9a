// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/error_budget.h"

#include <gtest/gtest.h>

#include "common/fixtures.h"

namespace stoker {
namespace {

class ErrorBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteDataset(dir_.path(), 2, 10, 2);  // ten units of two rows
    manifest_ = Manifest::Make({dir_.path().string()}, {}).ValueOrDie();
  }

  arrow::Status Skip(ErrorBudget* budget, int32_t unit) {
    return budget->Skip(unit, *manifest_, manifest_->units()[unit],
                        arrow::Status::IOError("bad bytes ", unit));
  }

  std::string File(int f) const {
    return (dir_.path() / ("part-" + std::to_string(f) + ".parquet")).string();
  }

  testing::TempDir dir_;
  std::shared_ptr<Manifest> manifest_;
};

TEST_F(ErrorBudgetTest, ACountLimitAllowsThatManyDistinctUnits) {
  ErrorBudget budget(10, 2, std::nullopt);
  EXPECT_TRUE(Skip(&budget, 7).ok());
  EXPECT_TRUE(Skip(&budget, 7).ok());  // the same unit again counts once
  EXPECT_TRUE(Skip(&budget, 1).ok());
  const auto skipped = budget.skipped();
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].file, File(1));  // unit 7: file 1, row group 2
  EXPECT_EQ(skipped[0].row_group, 2);
  EXPECT_EQ(skipped[0].rows, 2);
  EXPECT_EQ(skipped[0].error, "IOError: bad bytes 7");
  EXPECT_EQ(skipped[1].file, File(0));
  const arrow::Status over = Skip(&budget, 3);
  ASSERT_TRUE(over.IsIOError());
  EXPECT_EQ(over.message(),
            "3 of 10 units (row groups) could not be read, over the error budget "
            "(on_error='skip', max_bad_units=2): '" +
                File(1) + "' row group 2 (2 rows): IOError: bad bytes 7; '" + File(0) +
                "' row group 1 (2 rows): IOError: bad bytes 1; '" + File(0) +
                "' row group 3 (2 rows): IOError: bad bytes 3");
  EXPECT_EQ(budget.skipped().size(), 3u);
}

TEST_F(ErrorBudgetTest, AFractionLimitIsOfTheDatasetsUnits) {
  ErrorBudget budget(10, std::nullopt, 0.25);
  EXPECT_TRUE(Skip(&budget, 0).ok());
  EXPECT_TRUE(Skip(&budget, 1).ok());  // 2 <= 2.5
  const arrow::Status over = Skip(&budget, 2);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.message().find("(on_error='skip', max_bad_fraction=0.25):"), std::string::npos)
      << over.message();
  ErrorBudget none(10, 0, std::nullopt);
  EXPECT_FALSE(Skip(&none, 4).ok());
  ErrorBudget unlimited(10, std::nullopt, std::nullopt);
  for (int32_t u = 0; u < 10; ++u) EXPECT_TRUE(Skip(&unlimited, u).ok());
}

TEST_F(ErrorBudgetTest, BothLimitsApplyAndAtMostFiveUnitsAreNamed) {
  ErrorBudget budget(10, 6, 1.0);
  for (int32_t u = 0; u < 6; ++u) ASSERT_TRUE(Skip(&budget, u).ok());
  const arrow::Status over = Skip(&budget, 6);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.message().find("max_bad_units=6, max_bad_fraction=1):"), std::string::npos)
      << over.message();
  EXPECT_NE(over.message().find("bad bytes 4; and 2 more"), std::string::npos) << over.message();
  EXPECT_EQ(over.message().find("bad bytes 5"), std::string::npos);
}

TEST_F(ErrorBudgetTest, AFileLeftOutUnreadCountsAsOneUnitAndSaysItWasItsFooter) {
  ErrorBudget budget(11, 1, std::nullopt);  // ten units and one unreadable file
  ASSERT_TRUE(budget.SkipFile({"/data/bad.parquet", arrow::Status::Invalid("no magic")}).ok());
  const auto over = Skip(&budget, 3);
  ASSERT_TRUE(over.IsIOError());
  EXPECT_NE(over.message().find("2 of 11 units (row groups) could not be read"), std::string::npos)
      << over.message();
  EXPECT_NE(over.message().find("'/data/bad.parquet' (its footer): Invalid: no magic"),
            std::string::npos)
      << over.message();
  const auto skipped = budget.skipped();
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].file, "/data/bad.parquet");
  EXPECT_EQ(skipped[0].row_group, -1);
  EXPECT_EQ(skipped[0].rows, 0);
  EXPECT_EQ(skipped[1].row_group, manifest_->units()[3].row_group);
}

}  // namespace
}  // namespace stoker
