// Which launch attributes a client's launch may carry into the driver (worker/handlers/launch_attributes.h).
#include "worker/handlers/launch_attributes.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace agileos::worker {
namespace {

google::protobuf::RepeatedPtrField<v1::LaunchAttribute> list(
    std::initializer_list<std::tuple<int, std::uint32_t, std::uint32_t, std::uint32_t>> values) {
  google::protobuf::RepeatedPtrField<v1::LaunchAttribute> wire;
  for (const auto& [id, x, y, z] : values) {
    v1::LaunchAttribute* attribute = wire.Add();
    attribute->set_id(id);
    attribute->set_x(x);
    attribute->set_y(y);
    attribute->set_z(z);
  }
  return wire;
}

// A window check that fails the test if it is asked (no list here carries a window).
const WindowCheck kNoWindow = [](std::uint64_t, std::uint64_t*) {
  ADD_FAILURE() << "an access policy window was checked";
  return false;
};

v1::LaunchAttribute window(std::uint64_t base, std::uint64_t bytes, float ratio, std::uint32_t hit,
                           std::uint32_t miss) {
  v1::LaunchAttribute wire;
  wire.set_id(CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW);
  wire.set_window_base(base);
  wire.set_window_bytes(bytes);
  wire.set_hit_ratio(ratio);
  wire.set_x(hit);
  wire.set_y(miss);
  return wire;
}

TEST(LaunchAttributes, AdmittedKindsReachTheDriverWithTheirValues) {
  std::vector<CUlaunchAttribute> attributes;
  std::string reason;
  ASSERT_TRUE(
      readLaunchAttributes(list({{CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, 2, 1, 1},
                                 {CU_LAUNCH_ATTRIBUTE_PRIORITY, static_cast<std::uint32_t>(-3), 0, 0},
                                 {CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, 1, 0, 0},
                                 {CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, 0, 1, 0},
                                 {CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, 2, 0, 0}}),
                           &attributes, &reason, kNoWindow))
      << reason;
  ASSERT_EQ(attributes.size(), 5u);
  EXPECT_EQ(attributes[0].id, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  EXPECT_EQ(attributes[0].value.clusterDim.x, 2u);
  EXPECT_EQ(attributes[0].value.clusterDim.y, 1u);
  EXPECT_EQ(attributes[1].value.priority, -3) << "a signed value travels as its two's complement";
  EXPECT_EQ(attributes[2].value.programmaticStreamSerializationAllowed, 1);
  EXPECT_EQ(attributes[3].value.memSyncDomainMap.remote, 1);
  EXPECT_EQ(attributes[4].value.clusterSchedulingPolicyPreference,
            CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING);
}

TEST(LaunchAttributes, ClusterSizesAreTheDriversToJudge) {
  std::vector<CUlaunchAttribute> attributes;
  std::string reason;
  EXPECT_TRUE(readLaunchAttributes(list({{CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, 0, 1, 1}}), &attributes,
                                   &reason, kNoWindow));
  EXPECT_TRUE(readLaunchAttributes(list({{CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION, 1u << 31, 1, 1}}),
                                   &attributes, &reason, kNoWindow));
}

TEST(LaunchAttributes, HandlesAddressesAndUnknownIdsAreRefused) {
  for (int id :
       {int{CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT}, int{CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT},
        int{CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE}, int{CU_LAUNCH_ATTRIBUTE_COOPERATIVE}, 0, -1,
        9999}) {
    std::vector<CUlaunchAttribute> attributes;
    std::string reason;
    EXPECT_FALSE(readLaunchAttributes(list({{id, 1, 0, 0}}), &attributes, &reason, kNoWindow)) << "id " << id;
    EXPECT_NE(reason.find("not offered"), std::string::npos) << reason;
  }
}

TEST(LaunchAttributes, EnumValuesMustBeMembers) {
  for (auto [id, value] : {std::pair{int{CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE}, 3u},
                           std::pair{int{CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION}, 2u},
                           std::pair{int{CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN}, 2u},
                           std::pair{int{CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY}, 0u},
                           std::pair{int{CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP}, 256u}}) {
    std::vector<CUlaunchAttribute> attributes;
    std::string reason;
    EXPECT_FALSE(readLaunchAttributes(list({{id, value, 0, 0}}), &attributes, &reason, kNoWindow))
        << id << " = " << value;
  }
}

TEST(LaunchAttributes, AtMostSixteen) {
  google::protobuf::RepeatedPtrField<v1::LaunchAttribute> wire;
  for (int i = 0; i < kMaxLaunchAttributes + 1; ++i) wire.Add()->set_id(CU_LAUNCH_ATTRIBUTE_PRIORITY);
  std::vector<CUlaunchAttribute> attributes;
  std::string reason;
  EXPECT_FALSE(readLaunchAttributes(wire, &attributes, &reason, kNoWindow));
  wire.RemoveLast();
  EXPECT_TRUE(readLaunchAttributes(wire, &attributes, &reason, kNoWindow)) << reason;
}

// The window reaches the driver as the check confined it; the check's refusal refuses it; a window
// of no bytes is the hint turned off, never checked, and names no address.
TEST(LaunchAttributes, AccessPolicyWindowIsConfinedByTheCheck) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> asked;
  const WindowCheck halve = [&](std::uint64_t base, std::uint64_t* bytes) {
    asked.emplace_back(base, *bytes);
    *bytes /= 2;
    return base == 0x7000;
  };
  CUlaunchAttribute out;
  std::string reason;
  ASSERT_TRUE(readLaunchAttribute(
      window(0x7000, 4096, 0.5f, CU_ACCESS_PROPERTY_PERSISTING, CU_ACCESS_PROPERTY_STREAMING), &out, &reason,
      halve))
      << reason;
  EXPECT_EQ(out.id, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW);
  EXPECT_EQ(reinterpret_cast<std::uint64_t>(out.value.accessPolicyWindow.base_ptr), 0x7000u);
  EXPECT_EQ(out.value.accessPolicyWindow.num_bytes, 2048u);
  EXPECT_EQ(out.value.accessPolicyWindow.hitRatio, 0.5f);
  EXPECT_EQ(out.value.accessPolicyWindow.hitProp, CU_ACCESS_PROPERTY_PERSISTING);
  EXPECT_EQ(out.value.accessPolicyWindow.missProp, CU_ACCESS_PROPERTY_STREAMING);

  EXPECT_FALSE(readLaunchAttribute(window(0x9000, 4096, 0.5f, 0, 0), &out, &reason, halve));
  EXPECT_NE(reason.find("outside the client's memory"), std::string::npos) << reason;

  asked.clear();
  ASSERT_TRUE(readLaunchAttribute(window(0xdead0000, 0, 0.f, 0, 0), &out, &reason, halve)) << reason;
  EXPECT_TRUE(asked.empty());
  EXPECT_EQ(out.value.accessPolicyWindow.base_ptr, nullptr);

  v1::LaunchAttribute back;
  writeLaunchAttribute(out, &back);
  EXPECT_EQ(back.id(), CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW);
  EXPECT_EQ(back.window_bytes(), 0u);
}

TEST(LaunchAttributes, AccessPolicyWindowValuesMustBeInRange) {
  const WindowCheck any = [](std::uint64_t, std::uint64_t*) { return true; };
  CUlaunchAttribute out;
  std::string reason;
  for (const v1::LaunchAttribute& bad : {window(0x7000, 64, 1.5f, 0, 0), window(0x7000, 64, -0.1f, 0, 0),
                                         window(0x7000, 64, std::numeric_limits<float>::quiet_NaN(), 0, 0),
                                         window(0x7000, 64, 0.5f, 3, 0), window(0x7000, 64, 0.5f, 0, 7)}) {
    EXPECT_FALSE(readLaunchAttribute(bad, &out, &reason, any)) << bad.ShortDebugString();
  }
}

}  // namespace
}  // namespace agileos::worker
