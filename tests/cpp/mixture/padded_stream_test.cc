// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// PaddedStream: a mixture's evaluation epoch padded to equal full batches, with the _valid mask.
#include "mixture/padded_stream.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/options.h"

namespace stoker {
namespace {

/// Delivers batches of the given sizes: an int64 column counting rows from 0, a string column
/// "r<row>" and a list column [row, row].
class CountingStream final : public BatchStream {
 public:
  explicit CountingStream(std::vector<int64_t> sizes) : sizes_(std::move(sizes)) {}

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() override {
    if (next_ == sizes_.size()) return nullptr;
    const int64_t rows = sizes_[next_++];
    arrow::Int64Builder ids;
    arrow::StringBuilder names;
    arrow::ListBuilder lists(arrow::default_memory_pool(), std::make_shared<arrow::Int64Builder>());
    auto* values = static_cast<arrow::Int64Builder*>(lists.value_builder());
    for (int64_t i = 0; i < rows; ++i, ++row_) {
      ARROW_RETURN_NOT_OK(ids.Append(row_));
      ARROW_RETURN_NOT_OK(names.Append("r" + std::to_string(row_)));
      ARROW_RETURN_NOT_OK(lists.Append());
      ARROW_RETURN_NOT_OK(values->AppendValues({row_, row_}));
    }
    arrow::ArrayVector columns(3);
    ARROW_RETURN_NOT_OK(ids.Finish(&columns[0]));
    ARROW_RETURN_NOT_OK(names.Finish(&columns[1]));
    ARROW_RETURN_NOT_OK(lists.Finish(&columns[2]));
    return arrow::RecordBatch::Make(Schema(), rows, std::move(columns));
  }
  bool WaitReady(std::chrono::milliseconds) override { return true; }
  int64_t num_batches() const override { return static_cast<int64_t>(sizes_.size()); }
  int64_t planned_rows_delivered() const override { return row_; }

  static std::shared_ptr<arrow::Schema> Schema() {
    return arrow::schema({arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8()),
                          arrow::field("list", arrow::list(arrow::int64()))});
  }

 private:
  std::vector<int64_t> sizes_;
  size_t next_ = 0;
  int64_t row_ = 0;
};

std::vector<std::shared_ptr<arrow::RecordBatch>> ReadAll(BatchStream& stream) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> out;
  while (true) {
    auto batch = stream.Next().ValueOrDie();
    if (batch == nullptr) return out;
    out.push_back(std::move(batch));
  }
}

std::vector<int64_t> Ids(const arrow::RecordBatch& batch) {
  const auto& ids = static_cast<const arrow::Int64Array&>(*batch.column(0));
  return {ids.raw_values(), ids.raw_values() + ids.length()};
}

std::vector<bool> Valid(const arrow::RecordBatch& batch) {
  const auto& valid = static_cast<const arrow::BooleanArray&>(*batch.GetColumnByName(kValidColumn));
  std::vector<bool> out;
  for (int64_t i = 0; i < valid.length(); ++i) out.push_back(valid.Value(i));
  return out;
}

/// A pad row reader that hands out row `id` (a CountingStream's, so "r<id>" and [id, id])
/// and counts its calls.
PaddedStream::PadRow PadRowOf(int64_t id, int* calls) {
  return [id, calls]() -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
    ++*calls;
    CountingStream rows({id + 1});
    ARROW_ASSIGN_OR_RAISE(auto batch, rows.Next());
    return batch->Slice(id, 1);
  };
}

TEST(PaddedStream, FillsTheLastRealBatchAndAddsWholeBatchesOfCopies) {
  // 10 real rows in batches of 4: 4, 4, 2; padded to 4 batches with row 9 (the share's last).
  int calls = 0;
  auto stream =
      PaddedStream::Make(std::make_unique<CountingStream>(std::vector<int64_t>{4, 4, 2}),
                         {4, 4, 2, 0}, 4, PadRowOf(9, &calls), arrow::default_memory_pool())
          .ValueOrDie();
  EXPECT_EQ(stream->num_batches(), 4);
  const auto batches = ReadAll(*stream);
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(Ids(*batches[0]), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(Ids(*batches[2]), (std::vector<int64_t>{8, 9, 9, 9}));
  EXPECT_EQ(Ids(*batches[3]), (std::vector<int64_t>{9, 9, 9, 9}));
  EXPECT_EQ(Valid(*batches[0]), (std::vector<bool>{true, true, true, true}));
  EXPECT_EQ(Valid(*batches[2]), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(Valid(*batches[3]), (std::vector<bool>{false, false, false, false}));
  for (const auto& batch : batches) {
    ASSERT_TRUE(batch->ValidateFull().ok());
    EXPECT_EQ(batch->num_rows(), 4);
    EXPECT_EQ(batch->schema()->field(3)->name(), kValidColumn);
    EXPECT_FALSE(batch->schema()->field(3)->nullable());
  }
  // Variable-width columns are copied whole: the padding's string and list are the pad row's.
  const auto& names = static_cast<const arrow::StringArray&>(*batches[3]->column(1));
  EXPECT_EQ(names.GetString(3), "r9");
  const auto& lists = static_cast<const arrow::ListArray&>(*batches[2]->column(2));
  EXPECT_EQ(lists.value_slice(3)->ToString(), lists.value_slice(1)->ToString());
  EXPECT_EQ(stream->planned_rows_delivered(), 16);
  EXPECT_EQ(calls, 1);  // read once, when the first copy was needed
}

TEST(PaddedStream, PadsWithThePadRowNotTheLastRowRead) {
  // A server's share of a rank's batches: batch 1 of 2 only (4 real rows, then padding).
  int calls = 0;
  auto stream = PaddedStream::Make(std::make_unique<CountingStream>(std::vector<int64_t>{1}), {1},
                                   3, PadRowOf(7, &calls), arrow::default_memory_pool())
                    .ValueOrDie();
  const auto batches = ReadAll(*stream);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(Ids(*batches[0]), (std::vector<int64_t>{0, 7, 7}));
  EXPECT_EQ(Valid(*batches[0]), (std::vector<bool>{true, false, false}));
}

TEST(PaddedStream, ARankWithoutRealRowsCopiesThePadRowOnly) {
  int calls = 0;
  auto stream = PaddedStream::Make(std::make_unique<CountingStream>(std::vector<int64_t>{}), {0, 0},
                                   3, PadRowOf(5, &calls), arrow::default_memory_pool())
                    .ValueOrDie();
  const auto batches = ReadAll(*stream);
  ASSERT_EQ(batches.size(), 2u);
  for (const auto& batch : batches) {
    EXPECT_EQ(Ids(*batch), (std::vector<int64_t>{5, 5, 5}));
    EXPECT_EQ(Valid(*batch), (std::vector<bool>{false, false, false}));
    EXPECT_EQ(batch->schema()->num_fields(), 4);
  }
  EXPECT_EQ(calls, 1);
}

TEST(PaddedStream, WholeRealBatchesPassThroughWithoutReadingThePadRow) {
  int calls = 0;
  auto stream = PaddedStream::Make(std::make_unique<CountingStream>(std::vector<int64_t>{3, 3}),
                                   {3, 3}, 3, PadRowOf(0, &calls), arrow::default_memory_pool())
                    .ValueOrDie();
  const auto batches = ReadAll(*stream);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(Ids(*batches[1]), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(Valid(*batches[1]), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(stream->planned_rows_delivered(), 6);
  EXPECT_EQ(calls, 0);
}

TEST(PaddedStream, RefusesWhatCannotBePadded) {
  int calls = 0;
  auto make = [&calls](std::vector<int64_t> real, int64_t batch) {
    return PaddedStream::Make(std::make_unique<CountingStream>(std::vector<int64_t>{}),
                              std::move(real), batch, PadRowOf(0, &calls),
                              arrow::default_memory_pool())
        .status();
  };
  EXPECT_TRUE(make({5}, 4).IsInvalid());  // more real rows than a batch holds
  EXPECT_TRUE(make({1}, 0).IsInvalid());
  // A stream that gives fewer rows than the batch's real ones: an error, not a crash.
  auto short_stream = PaddedStream::Make(std::make_unique<CountingStream>(std::vector<int64_t>{2}),
                                         {3}, 4, PadRowOf(0, &calls), arrow::default_memory_pool())
                          .ValueOrDie();
  auto next = short_stream->Next();
  ASSERT_FALSE(next.ok());
  EXPECT_NE(next.status().message().find("expected 3 real rows"), std::string::npos);
  // A pad row reader that gives no row: an error naming it.
  auto no_row = PaddedStream::Make(
                    std::make_unique<CountingStream>(std::vector<int64_t>{}), {0}, 2,
                    []() -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> { return nullptr; },
                    arrow::default_memory_pool())
                    .ValueOrDie();
  next = no_row->Next();
  ASSERT_FALSE(next.ok());
  EXPECT_NE(next.status().message().find("padding needs the one row"), std::string::npos);
}

}  // namespace
}  // namespace stoker
