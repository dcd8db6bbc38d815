// The generated stubs (cudart_api.gen.cpp), linked straight into this test with a
// reportUnsupported that records its calls: every kind of stub (cudaError_t, void and pointer
// results, per-thread-stream variants) must report its own name and fail closed, and the
// generated table of fail-closed rows must hold exactly the reasons and codes of the table the
// stubs were generated from (AGILEOS_CUDART_API_TABLE).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "client/cudart/unsupported_calls.h"
#include "client/library_shim/unsupported.h"
#include "cudart_api.gen.h"

namespace agileos::client {

std::vector<std::string>& reportedSymbols() {
  static std::vector<std::string> symbols;
  return symbols;
}

// Test double of the shim's reportUnsupported: records the symbol, fails closed like the real one.
cudaError_t reportUnsupported(const char* symbol) {
  reportedSymbols().emplace_back(symbol);
  return cudaErrorNotSupported;
}

}  // namespace agileos::client

namespace {

using agileos::client::reportedSymbols;

// The reason of `symbol`'s fail-closed row, or null.
const char* reasonOf(const char* symbol) {
  const auto* row = agileos::client::library_shim::findUnsupported(
      agileos::client::cudart_api::failClosedEntries(), symbol);
  return row != nullptr ? row->reason : nullptr;
}

class GeneratedStubsTest : public ::testing::Test {
 protected:
  void SetUp() override { reportedSymbols().clear(); }
};

TEST_F(GeneratedStubsTest, ErrorStubReportsItsNameAndReturnsNotSupported) {
  EXPECT_EQ(cudaGraphExecChildGraphNodeSetParams(nullptr, nullptr, nullptr), cudaErrorNotSupported);
  EXPECT_EQ(reportedSymbols(), std::vector<std::string>{"cudaGraphExecChildGraphNodeSetParams"});
}

TEST_F(GeneratedStubsTest, PerThreadStreamStubReportsItsOwnName) {
  EXPECT_EQ(cudaMemPrefetchBatchAsync_ptsz(nullptr, nullptr, 0, nullptr, nullptr, 0, 0, nullptr),
            cudaErrorNotSupported);
  EXPECT_EQ(reportedSymbols(), std::vector<std::string>{"cudaMemPrefetchBatchAsync_ptsz"});
}

TEST_F(GeneratedStubsTest, VoidStubReportsItsName) {
  __cudaRegisterUnifiedTable(nullptr, nullptr, 0, nullptr, 0);
  EXPECT_EQ(reportedSymbols(), std::vector<std::string>{"__cudaRegisterUnifiedTable"});
}

TEST_F(GeneratedStubsTest, PointerStubReportsItsNameAndReturnsNull) {
  EXPECT_EQ(__cudaGetProcAddress(), nullptr);
  EXPECT_EQ(reportedSymbols(), std::vector<std::string>{"__cudaGetProcAddress"});
}

struct TableRow {
  std::string symbol;
  std::string support;
  std::string note;
};

std::vector<TableRow> readTable(const char* path) {
  std::ifstream table(path);
  std::vector<TableRow> rows;
  std::string line;
  while (std::getline(table, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '@') continue;
    std::istringstream fields(line);
    TableRow row;
    std::string family;
    std::getline(fields, row.symbol, '\t');
    std::getline(fields, family, '\t');
    std::getline(fields, row.support, '\t');
    std::getline(fields, row.note);
    rows.push_back(row);
  }
  return rows;
}

TEST(FailClosedRowsTest, MatchEveryRowOfTheTable) {
  const std::vector<TableRow> rows = readTable(AGILEOS_CUDART_API_TABLE);
  ASSERT_EQ(rows.size(), 422u) << "libcudart.so.13 exports 422 functions";
  int failClosed = 0;
  for (const TableRow& row : rows) {
    const char* reason = reasonOf(row.symbol.c_str());
    if (row.support == "unsupported" || row.support == "refused") {
      ++failClosed;
      ASSERT_NE(reason, nullptr) << row.symbol;
      EXPECT_EQ(std::string(reason), row.note) << row.symbol;
    } else {
      EXPECT_EQ(reason, nullptr) << row.symbol << " works (" << row.support << ") and has no reason to fail";
    }
  }
  EXPECT_EQ(static_cast<size_t>(failClosed), agileos::client::cudart_api::failClosedEntries().size());
  for (const auto& entry : agileos::client::cudart_api::failClosedEntries()) {
    EXPECT_EQ(entry.result, cudaErrorNotSupported) << entry.symbol;
    EXPECT_STREQ(entry.result_name, "cudaErrorNotSupported") << entry.symbol;
  }
}

TEST(FailClosedRowsTest, UnknownNamesHaveNoRow) {
  EXPECT_EQ(reasonOf(nullptr), nullptr);
  EXPECT_EQ(reasonOf(""), nullptr);
  EXPECT_EQ(reasonOf("cudaGraphExecChildGraphNodeSetParam"), nullptr);
  EXPECT_EQ(reasonOf("cudaGraphExecChildGraphNodeSetParamsX"), nullptr);
  EXPECT_EQ(reasonOf("cudaNoSuchFunction"), nullptr);
  EXPECT_NE(reasonOf("cudaGraphExecChildGraphNodeSetParams"), nullptr);
  EXPECT_NE(reasonOf("__cudaRegisterHostVar"), nullptr) << "a refused row has its reason too";
}

}  // namespace
