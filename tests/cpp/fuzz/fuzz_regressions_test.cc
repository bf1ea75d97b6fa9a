// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Replays the inputs the fuzz targets keep (tests/fuzz/regressions/<target>/: every input
// that once broke a contract, and a few that reach deep) and the parquet-testing corpus
// through the same target code `make fuzz` runs. A broken contract aborts the test binary
// with the target's message; bad input must only ever produce an error Status.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_targets.h"
#include "manifest/summary_skim.h"
#include "memory_filesystem.h"

namespace stoker::fuzz {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = STOKER_SOURCE_DIR;

// The files under `dir` (recursively, sorted); none when it does not exist.
std::vector<fs::path> FilesUnder(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().filename() != "README.md") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A 4 KiB file whose strings decode to about 2 GiB before Arrow refuses them: half a minute
// and more memory than a fuzz run allows. tests/python/test_corpus.py covers it (with its own
// timeout); `make fuzz` leaves it out of the parquet seeds too.
constexpr const char* kDecompressionBomb = "large_string_map.brotli.parquet";

// Runs every file under `dir` through `target`; the number of files run.
size_t Replay(const fs::path& dir, int (*target)(const uint8_t*, size_t)) {
  EXPECT_TRUE(RegisterMemoryFileSystem().ok());
  auto files = FilesUnder(dir);
  std::erase_if(files, [](const fs::path& file) { return file.filename() == kDecompressionBomb; });
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    const std::string bytes = ReadAll(file);
    EXPECT_EQ(target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
  }
  return files.size();
}

// Replays the kept inputs of one target, which must find some: a folder moved, renamed or
// emptied would otherwise pass having checked nothing.
void ReplayKept(const std::string& target_name, int (*target)(const uint8_t*, size_t)) {
  const fs::path dir = kSourceDir / "tests" / "fuzz" / "regressions" / target_name;
  EXPECT_GT(Replay(dir, target), 0u)
      << "no kept inputs in " << dir.string() << " (the folder is missing or empty)";
}

TEST(FuzzRegressions, ParquetInputs) { ReplayKept("parquet", ParquetInput); }
TEST(FuzzRegressions, FilterInputs) { ReplayKept("filter", FilterInput); }
TEST(FuzzRegressions, TicketInputs) { ReplayKept("ticket", TicketInput); }
TEST(FuzzRegressions, TransformInputs) { ReplayKept("transform", TransformInput); }
TEST(FuzzRegressions, CodecInputs) { ReplayKept("codec", CodecInput); }
TEST(FuzzRegressions, SummaryInputs) { ReplayKept("summary", SummaryInput); }

// The footers of the parquet-testing corpus (written by parquet-mr as Spark writes them,
// parquet-cpp, Impala, ...) through the summary skimmer: each cut must decode as Parquet
// decodes the original.
TEST(FuzzRegressions, SummarySkimOfCorpusFooters) {
  size_t skimmed = 0;
  for (const auto& file : FilesUnder(kSourceDir / "tests" / "data" / "parquet-testing")) {
    SCOPED_TRACE(file.string());
    const std::string bytes = ReadAll(file);
    auto footer = FooterBytes(bytes);
    if (!footer.ok()) continue;
    EXPECT_EQ(SummaryInput(reinterpret_cast<const uint8_t*>(footer->data()), footer->size()), 0);
    ++skimmed;
  }
  EXPECT_GT(skimmed, 50u);
}

// The parquet fuzz target's seeds: valid files of every encoding and the known-bad ones.
TEST(FuzzRegressions, ParquetTestingCorpus) {
  EXPECT_GT(Replay(kSourceDir / "tests" / "data" / "parquet-testing", ParquetInput), 50u);
}

}  // namespace
}  // namespace stoker::fuzz
