// The generated stubs (cudart_unsupported.gen.cpp), linked straight into this test with a
// reportUnsupported that records its calls: every kind of stub (cudaError_t, void and pointer
// results, per-thread-stream variants) must report its own name and fail closed, and
// unsupportedReason() must return exactly the reasons of the table the stubs were generated
// from (AGILEOS_CUDART_API_TABLE).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "client/cudart/api/unsupported_reason.h"
#include "client/cudart/error_state.h"
#include "cudart_extra_prototypes.gen.h"

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
using agileos::client::unsupportedReason;

class GeneratedStubsTest : public ::testing::Test {
 protected:
  void SetUp() override { reportedSymbols().clear(); }
};

TEST_F(GeneratedStubsTest, ErrorStubReportsItsNameAndReturnsNotSupported) {
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaGraphCreate(&graph, 0), cudaErrorNotSupported);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(reportedSymbols(), std::vector<std::string>{"cudaGraphCreate"});
}

TEST_F(GeneratedStubsTest, PerThreadStreamStubReportsItsOwnName) {
  void* pointer = nullptr;
  EXPECT_EQ(cudaMallocAsync_ptsz(&pointer, 64, nullptr), cudaErrorNotSupported);
  EXPECT_EQ(reportedSymbols(), std::vector<std::string>{"cudaMallocAsync_ptsz"});
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
    if (line.empty() || line[0] == '#') continue;
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

TEST(UnsupportedReasonTest, MatchesEveryRowOfTheTable) {
  const std::vector<TableRow> rows = readTable(AGILEOS_CUDART_API_TABLE);
  ASSERT_EQ(rows.size(), 422u) << "libcudart.so.13 exports 422 functions";
  int unsupported = 0;
  for (const TableRow& row : rows) {
    const char* reason = unsupportedReason(row.symbol.c_str());
    if (row.support == "unsupported") {
      ++unsupported;
      ASSERT_NE(reason, nullptr) << row.symbol;
      EXPECT_EQ(std::string(reason), row.note) << row.symbol;
    } else {
      EXPECT_EQ(reason, nullptr) << row.symbol << " is implemented and has no stub";
    }
  }
  EXPECT_GT(unsupported, 0);
}

TEST(UnsupportedReasonTest, UnknownNamesHaveNoReason) {
  EXPECT_EQ(unsupportedReason(nullptr), nullptr);
  EXPECT_EQ(unsupportedReason(""), nullptr);
  EXPECT_EQ(unsupportedReason("cudaGraphCreat"), nullptr);
  EXPECT_EQ(unsupportedReason("cudaGraphCreateX"), nullptr);
  EXPECT_EQ(unsupportedReason("cudaNoSuchFunction"), nullptr);
  EXPECT_NE(unsupportedReason("cudaGraphCreate"), nullptr);
}

}  // namespace
