// The declared adapters (proto/adapters/adapter_declaration.h): the names the daemon's config and
// the worker's dispatch rely on.
#include <gtest/gtest.h>

#include <array>
#include <set>

#include "agileos/v1/client_api.pb.h"
#include "proto/adapters/adapter_declaration.h"
#include "proto/adapters/cufft_operations.h"
#include "proto/adapters/nvrtc_operations.h"

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

TEST(AdapterCatalog, TheNamedConstantsAreTheDeclaredNames) {
  ASSERT_NE(findLibrary(cufft::names::kLibrary), nullptr);
  EXPECT_EQ(findLibrary(cufft::names::kLibrary)->operations.data(), cufft::kOperations.data());
  ASSERT_NE(findLibrary(nvrtc::names::kLibrary), nullptr);
  EXPECT_EQ(findLibrary(nvrtc::names::kLibrary)->operations.data(), nvrtc::kOperations.data());
  EXPECT_EQ(cufft::kOperations.size(), 15u);
  EXPECT_EQ(findOperation(cufft::kLibrary, cufft::names::kExec), 8);
  EXPECT_EQ(findOperation(nvrtc::kLibrary, nvrtc::names::kCompile), 0);
}

// AdapterValue's oneof (client_api.proto) is the one list of value kinds: every field of it is an
// ArgKind of the same number, and no ArgKind names another (adapter_catalog.cpp holds each kind
// equal to its field at compile time; this catches a field added without its kind).
TEST(AdapterCatalog, ArgumentKindsAreTheWireKinds) {
  constexpr std::array kWireKinds{ArgKind::kInteger, ArgKind::kIntegers, ArgKind::kDevicePointer,
                                  ArgKind::kHandle,  ArgKind::kStream,   ArgKind::kBlob,
                                  ArgKind::kText,    ArgKind::kTexts};
  const google::protobuf::OneofDescriptor* oneof = v1::AdapterValue::descriptor()->FindOneofByName("value");
  ASSERT_NE(oneof, nullptr);
  ASSERT_EQ(oneof->field_count(), static_cast<int>(kWireKinds.size()))
      << "AdapterValue changed: give ArgKind (proto/adapters/adapter_declaration.h) and "
         "agileos_value_kind (client/include/agileos/library_call.h) the new kind";
  for (int i = 0; i < oneof->field_count(); ++i) {
    EXPECT_EQ(valueCaseOf(kWireKinds[i]), oneof->field(i)->number()) << oneof->field(i)->name();
    EXPECT_FALSE(isOptional(kWireKinds[i]));
  }
  EXPECT_EQ(valueCaseOf(ArgKind::kOptionalIntegers), valueCaseOf(ArgKind::kIntegers));
  EXPECT_TRUE(isOptional(ArgKind::kOptionalIntegers));
}

}  // namespace
}  // namespace agileos::adapters
