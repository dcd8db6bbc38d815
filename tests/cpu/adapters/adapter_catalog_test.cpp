// The declared adapters (adapters/adapter_declaration.h): the names the daemon's config and the
// worker's dispatch rely on.
#include <gtest/gtest.h>

#include <set>

#include "adapters/adapter_declaration.h"

namespace agileos::adapters {
namespace {

TEST(AdapterCatalog, DeclaresCufftAndNvrtcWithUniqueOperationNames) {
  ASSERT_NE(findLibrary("cufft"), nullptr);
  ASSERT_NE(findLibrary("nvrtc"), nullptr);
  EXPECT_EQ(findLibrary("cublas"), nullptr);
  for (const LibraryDecl& library : knownLibraries()) {
    std::set<std::string_view> names;
    for (const OperationDecl& operation : library.operations) {
      EXPECT_TRUE(names.insert(operation.name).second) << library.name << "." << operation.name;
      EXPECT_NE(operation.name, "*");
    }
  }
}

TEST(AdapterCatalog, FindsOperationsByName) {
  const LibraryDecl& cufft = *findLibrary("cufft");
  const int exec = findOperation(cufft, "exec");
  ASSERT_GE(exec, 0);
  EXPECT_EQ(cufft.operations[exec].args.size(), 5u);
  EXPECT_FALSE(cufft.operations[exec].invalidates);
  EXPECT_TRUE(cufft.operations[findOperation(cufft, "destroy")].invalidates);
  EXPECT_EQ(findOperation(cufft, "setCallback"), -1);
}

}  // namespace
}  // namespace agileos::adapters
