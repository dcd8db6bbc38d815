// Which launch attributes a client's launch may carry into the driver (worker/handlers/launch_attributes.h).
#include "worker/handlers/launch_attributes.h"

#include <gtest/gtest.h>

#include <string>
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

TEST(LaunchAttributes, AdmittedKindsReachTheDriverWithTheirValues) {
  std::vector<CUlaunchAttribute> attributes;
  std::string reason;
  ASSERT_TRUE(
      readLaunchAttributes(list({{CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, 2, 1, 1},
                                 {CU_LAUNCH_ATTRIBUTE_PRIORITY, static_cast<std::uint32_t>(-3), 0, 0},
                                 {CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, 1, 0, 0},
                                 {CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP, 0, 1, 0},
                                 {CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, 2, 0, 0}}),
                           &attributes, &reason))
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
  EXPECT_TRUE(
      readLaunchAttributes(list({{CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, 0, 1, 1}}), &attributes, &reason));
  EXPECT_TRUE(readLaunchAttributes(list({{CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION, 1u << 31, 1, 1}}),
                                   &attributes, &reason));
}

TEST(LaunchAttributes, HandlesAddressesAndUnknownIdsAreRefused) {
  for (int id : {int{CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW}, int{CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT},
                 int{CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT},
                 int{CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE}, int{CU_LAUNCH_ATTRIBUTE_COOPERATIVE},
                 0, -1, 9999}) {
    std::vector<CUlaunchAttribute> attributes;
    std::string reason;
    EXPECT_FALSE(readLaunchAttributes(list({{id, 1, 0, 0}}), &attributes, &reason)) << "id " << id;
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
    EXPECT_FALSE(readLaunchAttributes(list({{id, value, 0, 0}}), &attributes, &reason))
        << id << " = " << value;
  }
}

TEST(LaunchAttributes, AtMostSixteen) {
  google::protobuf::RepeatedPtrField<v1::LaunchAttribute> wire;
  for (int i = 0; i < kMaxLaunchAttributes + 1; ++i) wire.Add()->set_id(CU_LAUNCH_ATTRIBUTE_PRIORITY);
  std::vector<CUlaunchAttribute> attributes;
  std::string reason;
  EXPECT_FALSE(readLaunchAttributes(wire, &attributes, &reason));
  wire.RemoveLast();
  EXPECT_TRUE(readLaunchAttributes(wire, &attributes, &reason)) << reason;
}

}  // namespace
}  // namespace agileos::worker
