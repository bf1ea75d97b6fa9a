// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The loader's counters (telemetry/stats.h) and the field lists that carry every result struct
// to Python (stoker/fields.h): a member missing from its struct's FieldsOf list would never
// reach stats(), so each list is checked against the struct's own member count.
#include "telemetry/stats.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "manifest/dataset_index.h"
#include "stoker/cpu_budget.h"
#include "stoker/flight_service.h"
#include "telemetry/fault_probe.h"

namespace stoker {
namespace member_count {

// Converts to any member type: an aggregate T takes as many of these as it has members.
// (Outside the anonymous namespace: the conversion is declared only, for the unevaluated
// checks below, and an undefined function with internal linkage draws a warning.)
struct AnyMember {
  template <typename M>
  operator M() const;  // NOLINT(google-explicit-constructor): declared only, never called
};

}  // namespace member_count

namespace {

using member_count::AnyMember;
using std::chrono::milliseconds;

template <typename T, typename... Given>
constexpr size_t MemberCount() {
  if constexpr (requires { T{Given{}..., AnyMember{}}; }) {
    return MemberCount<T, Given..., AnyMember>();
  } else {
    return sizeof...(Given);
  }
}

// The names in T's field list, each once.
template <typename T>
std::set<std::string_view> FieldNames() {
  std::set<std::string_view> names;
  std::apply([&](const auto&... field) { (names.insert(field.name), ...); }, FieldsOf(T{}));
  return names;
}

template <typename T>
void ExpectEveryMemberListed(const char* struct_name) {
  constexpr size_t listed = std::tuple_size_v<decltype(FieldsOf(T{}))>;
  EXPECT_EQ(listed, MemberCount<T>()) << struct_name << ": a member is missing from FieldsOf";
  EXPECT_EQ(FieldNames<T>().size(), listed) << struct_name << ": two fields share a name";
}

TEST(FieldsOfTest, EveryResultStructListsEachOfItsMembersOnce) {
  ExpectEveryMemberListed<StatsSnapshot>("StatsSnapshot");
  ExpectEveryMemberListed<WaitSummary>("WaitSummary");
  ExpectEveryMemberListed<SkippedUnit>("SkippedUnit");
  ExpectEveryMemberListed<ServeStats>("ServeStats");
  ExpectEveryMemberListed<CpuBudget>("CpuBudget");
  ExpectEveryMemberListed<ProbeTimings>("ProbeTimings");
  ExpectEveryMemberListed<FaultProbeSummary>("FaultProbeSummary");
  ExpectEveryMemberListed<IndexReport>("IndexReport");
}

TEST(FieldsOfTest, TheMemberCountSeesEveryKindOfMember) {
  // The counter the check above relies on, on structs whose count is known.
  struct Mixed {
    int64_t a = 0;
    double b = 0;
    std::string c;
    std::vector<SkippedUnit> d;
    WaitSummary e;
  };
  EXPECT_EQ(MemberCount<Mixed>(), 5u);
  EXPECT_EQ(MemberCount<SkippedUnit>(), 4u);
}

// The arithmetic fields of `value` by name.
template <typename T>
std::map<std::string, double> Numbers(const T& value) {
  std::map<std::string, double> out;
  std::apply(
      [&](const auto&... field) {
        (
            [&] {
              using Member = std::decay_t<decltype(value.*field.member)>;
              if constexpr (std::is_arithmetic_v<Member>) {
                out[std::string(field.name)] = static_cast<double>(value.*field.member);
              }
            }(),
            ...);
      },
      FieldsOf(value));
  return out;
}

TEST(FieldsOfTest, EachNameReadsItsOwnMember) {
  StatsSnapshot s;
  s.cache_hits = 7;
  s.cache_misses = 8;
  s.wait_per_batch.p99_seconds = 0.25;
  s.wait_per_batch.sum_seconds = 1.5;
  EXPECT_EQ(Numbers(s)["cache_hits"], 7);
  EXPECT_EQ(Numbers(s)["cache_misses"], 8);
  EXPECT_EQ(Numbers(s.wait_per_batch)["p99"], 0.25);
  EXPECT_EQ(Numbers(s.wait_per_batch)["sum"], 1.5);
  ProbeTimings t;
  t.slow = 3;
  t.slow_blocked = 2;
  EXPECT_EQ(Numbers(t)["over_1ms"], 3);
  EXPECT_EQ(Numbers(t)["over_1ms_blocked"], 2);
}

TEST(StatsTest, CountersAddUpInTheirSnapshot) {
  Stats stats;
  stats.AddRead(100, milliseconds(2));
  stats.AddRead(50, milliseconds(3));
  stats.AddRequest(4096);
  stats.AddMetadataRequest(64);
  stats.AddCacheHit(10);
  stats.AddCacheMiss();
  stats.AddCacheWrite(20);
  stats.AddCacheEviction();
  stats.AddCacheCorrupt();
  stats.AddDecode(milliseconds(4));
  stats.AddAssemble(milliseconds(5));
  stats.AddTransform(milliseconds(6));
  stats.AddWait(milliseconds(7));
  stats.AddSkippedRows(9);
  stats.SetPruned(3);
  stats.AddFiltered(40);
  stats.AddFiltered(2);
  stats.SetFilesPruned(2);
  stats.SetFilesOpened(5);
  stats.SetIndexUse(1, 1);
  *stats.retry_counter() += 2;
  const StatsSnapshot s = stats.Snapshot();
  EXPECT_EQ(s.units_read, 2);
  EXPECT_EQ(s.bytes_read, 150);
  EXPECT_NEAR(s.read_seconds, 0.005, 1e-9);
  EXPECT_EQ(s.requests, 1);
  EXPECT_EQ(s.bytes_fetched, 4096);
  EXPECT_EQ(s.metadata_requests, 1);
  EXPECT_EQ(s.metadata_bytes, 64);
  EXPECT_EQ(s.cache_hits, 1);
  EXPECT_EQ(s.cache_bytes_read, 10);
  EXPECT_EQ(s.cache_misses, 1);
  EXPECT_EQ(s.cache_bytes_written, 20);
  EXPECT_EQ(s.cache_evictions, 1);
  EXPECT_EQ(s.cache_corrupt, 1);
  EXPECT_NEAR(s.decode_seconds, 0.004, 1e-9);
  EXPECT_NEAR(s.assemble_seconds, 0.005, 1e-9);
  EXPECT_NEAR(s.transform_seconds, 0.006, 1e-9);
  EXPECT_NEAR(s.wait_seconds, 0.007, 1e-9);
  EXPECT_EQ(s.skipped_rows, 9);
  EXPECT_EQ(s.row_groups_pruned, 3);
  EXPECT_EQ(s.rows_filtered, 42);
  EXPECT_EQ(s.files_pruned, 2);
  EXPECT_EQ(s.files_opened, 5);
  EXPECT_EQ(s.index_used, 1);
  EXPECT_EQ(s.index_stale, 1);
  EXPECT_EQ(s.retries, 2);
  EXPECT_EQ(s.rows, 0);
  EXPECT_EQ(s.batches, 0);
}

TEST(StatsTest, DeliveredDigestDependsOnTheRowsAndTheirOrder) {
  Stats a, b, c;
  a.AddDelivered(10, 1);
  a.AddDelivered(5, 2);
  b.AddDelivered(10, 1);
  b.AddDelivered(5, 2);
  c.AddDelivered(5, 2);
  c.AddDelivered(10, 1);
  const auto sa = a.Snapshot(), sb = b.Snapshot(), sc = c.Snapshot();
  EXPECT_EQ(sa.rows, 15);
  EXPECT_EQ(sa.batches, 2);
  EXPECT_EQ(sa.delivered_digest, sb.delivered_digest);
  EXPECT_NE(sa.delivered_digest, sc.delivered_digest);
}

TEST(StatsTest, ARestoredDigestContinuesWhereTheSavedOneStopped) {
  Stats whole, first, resumed;
  whole.AddDelivered(10, 1);
  whole.AddDelivered(5, 2);
  first.AddDelivered(10, 1);
  ASSERT_TRUE(resumed.RestoreDigest(first.Snapshot().delivered_digest));
  resumed.AddDelivered(5, 2);
  EXPECT_EQ(resumed.Snapshot().delivered_digest, whole.Snapshot().delivered_digest);
  EXPECT_FALSE(resumed.RestoreDigest("not hex"));
}

TEST(StatsTest, UnitsInFlightKeepTheirPeak) {
  Stats stats;
  stats.AddUnitsInFlight(2);
  stats.AddUnitsInFlight(1);
  stats.AddUnitsInFlight(-3);
  stats.AddUnitsInFlight(1);
  stats.AddUnitsInFlight(-1);
  const auto s = stats.Snapshot();
  EXPECT_EQ(s.units_in_flight_peak, 3);
  EXPECT_GE(s.units_in_flight_mean, 0.0);
  EXPECT_LE(s.units_in_flight_mean, 3.0);
}

}  // namespace
}  // namespace stoker
