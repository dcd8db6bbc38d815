// The cuFFT shim's logic (client/cufft), linked from its objects with a fake of the runtime
// shim's agileos_library_call (fake_worker.h), which checks every call against the cuFFT
// adapter's declaration: the handle table, what each entry point sends, how replies map to
// cufftResult, and the fail-closed entry points.
#include <cufft.h>
#include <cufftXt.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/cufft/plan_table.h"
#include "cufft_api.gen.h"  // also declares cufftDebug and cufftXtMakePlanGuru64, which no header does
#include "proto/adapters/cufft_operations.h"
#include "tests/cpu/library_shims/fake_worker.h"

namespace {

using agileos::adapters::cufft::ExecKind;
using agileos::adapters::cufft::ShapeVariant;
using agileos::client::cufft_shim::PlanTable;
using agileos::test::Answer;
using agileos::test::Call;
using agileos::test::FakeWorker;
using agileos::test::Value;

constexpr std::uint64_t kFirstToken = 0x7000;
constexpr std::int64_t kWorkSize = 4096;

// ---------------------------------------------------------------------------------------------
// The handle table on its own

TEST(PlanTableTest, NumbersStartAtOneAndAreNeverReused) {
  PlanTable table;
  EXPECT_EQ(table.add(11), 1);
  EXPECT_EQ(table.add(12), 2);
  EXPECT_EQ(table.remove(1), 11u);
  EXPECT_EQ(table.add(13), 3);
  EXPECT_EQ(table.find(1), std::nullopt);
  EXPECT_EQ(table.find(2), 12u);
  EXPECT_EQ(table.find(3), 13u);
  EXPECT_EQ(table.size(), 2u);
}

TEST(PlanTableTest, UnknownNumbersAreNotFound) {
  PlanTable table;
  ASSERT_EQ(table.add(5), 1);
  for (int handle : {0, -1, 2, 1000, INT_MIN, INT_MAX}) {
    EXPECT_EQ(table.find(handle), std::nullopt) << handle;
    EXPECT_EQ(table.remove(handle), std::nullopt) << handle;
  }
  EXPECT_EQ(table.remove(1), 5u);
  EXPECT_EQ(table.remove(1), std::nullopt);
}

TEST(PlanTableTest, RunsOutAfterIntMaxInsteadOfWrapping) {
  PlanTable table(INT_MAX);
  EXPECT_EQ(table.add(1), INT_MAX);
  EXPECT_EQ(table.add(2), std::nullopt);
  EXPECT_EQ(table.add(3), std::nullopt);
  EXPECT_EQ(table.find(INT_MAX), 1u);
}

TEST(PlanTableTest, ConcurrentAddsGetDistinctNumbersAndOneRemovalWins) {
  PlanTable table;
  constexpr int kThreads = 8, kEach = 500;
  std::vector<std::vector<int>> handles(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i)
        handles[t].push_back(*table.add(static_cast<std::uint64_t>(t * kEach + i)));
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<int> all;
  for (const auto& list : handles) all.insert(list.begin(), list.end());
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kEach));
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kEach);

  std::atomic<int> winners{0};
  threads.clear();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      if (table.remove(7)) ++winners;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(winners.load(), 1);
}

// ---------------------------------------------------------------------------------------------
// The entry points, against the fake worker

// A well-behaved cuFFT worker: plans get tokens from kFirstToken up, sizes are kWorkSize.
Answer cufftWorker(const Call& call) {
  static std::atomic<std::uint64_t> next{kFirstToken};
  const std::string& op = call.operation;
  if (op == "create") return Answer::Ok({Value::Handle(next++)});
  if (op == "make_plan" || op == "estimate" || op == "get_size_for" || op == "work_size") {
    return Answer::Ok({Value::Integer(kWorkSize)});
  }
  if (op == "get_version") return Answer::Ok({Value::Integer(12000)});
  if (op == "get_property")
    return Answer::Ok({Value::Integer(call.args[0].integer == MAJOR_VERSION ? 12 : 0)});
  if (op == "get_plan_property") return Answer::Ok({Value::Integer(77)});
  return Answer::Ok();
}

class CufftShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeWorker::instance().reset();
    FakeWorker::instance().respond(cufftWorker);
  }
  void TearDown() override {
    EXPECT_EQ(FakeWorker::instance().outstandingReplies(), 0) << "a reply was not freed";
  }

  static std::vector<Call> calls() { return FakeWorker::instance().calls(); }
  static std::vector<std::string> operations() { return FakeWorker::instance().operations(); }
  static void forgetCalls() {
    FakeWorker::instance().reset();
    FakeWorker::instance().respond(cufftWorker);
  }

  // A plan made through cufftPlan1d; returns its handle.
  static cufftHandle madePlan() {
    cufftHandle plan = 0;
    EXPECT_EQ(cufftPlan1d(&plan, 256, CUFFT_C2C, 1), CUFFT_SUCCESS);
    return plan;
  }
  // The token the worker gave the plan most recently created.
  static std::uint64_t lastToken() {
    const std::vector<Call> all = calls();
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      if (it->operation == "make_plan") return it->args[0].word;
    }
    return 0;
  }

  // Checks the ten shape values starting at args[first].
  static void expectShape(const Call& call, std::size_t first, ShapeVariant variant,
                          std::vector<std::int64_t> n, std::optional<std::vector<std::int64_t>> inembed,
                          std::int64_t istride, std::int64_t idist,
                          std::optional<std::vector<std::int64_t>> onembed, std::int64_t ostride,
                          std::int64_t odist, std::int64_t type, std::int64_t batch) {
    ASSERT_EQ(call.args.size(), first + 10);
    const auto& a = call.args;
    EXPECT_EQ(a[first].integer, static_cast<std::int64_t>(variant));
    EXPECT_EQ(a[first + 1].integers, n);
    if (inembed) {
      EXPECT_EQ(a[first + 2].kind, AGILEOS_VALUE_INTEGERS);
      EXPECT_EQ(a[first + 2].integers, *inembed);
    } else {
      EXPECT_EQ(a[first + 2].kind, AGILEOS_VALUE_NONE);
    }
    EXPECT_EQ(a[first + 3].integer, istride);
    EXPECT_EQ(a[first + 4].integer, idist);
    if (onembed) {
      EXPECT_EQ(a[first + 5].kind, AGILEOS_VALUE_INTEGERS);
      EXPECT_EQ(a[first + 5].integers, *onembed);
    } else {
      EXPECT_EQ(a[first + 5].kind, AGILEOS_VALUE_NONE);
    }
    EXPECT_EQ(a[first + 6].integer, ostride);
    EXPECT_EQ(a[first + 7].integer, odist);
    EXPECT_EQ(a[first + 8].integer, type);
    EXPECT_EQ(a[first + 9].integer, batch);
  }
};

// Every entry point that takes a plan refuses a number this process never got, without a call.
TEST_F(CufftShimTest, UnknownHandleIsInvalidPlanWithoutCallingTheWorker) {
  const cufftHandle unknown = 424242;
  int n[] = {16};
  long long n64[] = {16};
  size_t size = 0;
  long long value = 0;
  const std::vector<std::pair<const char*, std::function<cufftResult()>>> entryPoints = {
      {"cufftDestroy", [&] { return cufftDestroy(unknown); }},
      {"cufftMakePlan1d", [&] { return cufftMakePlan1d(unknown, 16, CUFFT_C2C, 1, &size); }},
      {"cufftMakePlan2d", [&] { return cufftMakePlan2d(unknown, 16, 16, CUFFT_C2C, &size); }},
      {"cufftMakePlan3d", [&] { return cufftMakePlan3d(unknown, 4, 4, 4, CUFFT_C2C, &size); }},
      {"cufftMakePlanMany",
       [&] { return cufftMakePlanMany(unknown, 1, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, &size); }},
      {"cufftMakePlanMany64",
       [&] {
         return cufftMakePlanMany64(unknown, 1, n64, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, &size);
       }},
      {"cufftGetSize1d", [&] { return cufftGetSize1d(unknown, 16, CUFFT_C2C, 1, &size); }},
      {"cufftGetSize2d", [&] { return cufftGetSize2d(unknown, 16, 16, CUFFT_C2C, &size); }},
      {"cufftGetSize3d", [&] { return cufftGetSize3d(unknown, 4, 4, 4, CUFFT_C2C, &size); }},
      {"cufftGetSizeMany",
       [&] { return cufftGetSizeMany(unknown, 1, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, &size); }},
      {"cufftGetSizeMany64",
       [&] {
         return cufftGetSizeMany64(unknown, 1, n64, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, &size);
       }},
      {"cufftGetSize", [&] { return cufftGetSize(unknown, &size); }},
      {"cufftSetAutoAllocation", [&] { return cufftSetAutoAllocation(unknown, 0); }},
      {"cufftSetWorkArea", [&] { return cufftSetWorkArea(unknown, reinterpret_cast<void*>(0x1000)); }},
      {"cufftSetStream", [&] { return cufftSetStream(unknown, nullptr); }},
      {"cufftExecC2C", [&] { return cufftExecC2C(unknown, nullptr, nullptr, CUFFT_FORWARD); }},
      {"cufftExecR2C", [&] { return cufftExecR2C(unknown, nullptr, nullptr); }},
      {"cufftExecC2R", [&] { return cufftExecC2R(unknown, nullptr, nullptr); }},
      {"cufftExecZ2Z", [&] { return cufftExecZ2Z(unknown, nullptr, nullptr, CUFFT_INVERSE); }},
      {"cufftExecD2Z", [&] { return cufftExecD2Z(unknown, nullptr, nullptr); }},
      {"cufftExecZ2D", [&] { return cufftExecZ2D(unknown, nullptr, nullptr); }},
      {"cufftSetPlanPropertyInt64",
       [&] { return cufftSetPlanPropertyInt64(unknown, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT, 1); }},
      {"cufftGetPlanPropertyInt64",
       [&] { return cufftGetPlanPropertyInt64(unknown, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT, &value); }},
      {"cufftResetPlanProperty",
       [&] { return cufftResetPlanProperty(unknown, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT); }},
  };
  for (const auto& [name, run] : entryPoints) EXPECT_EQ(run(), CUFFT_INVALID_PLAN) << name;
  for (cufftHandle handle : {0, -2, INT_MAX})
    EXPECT_EQ(cufftExecC2C(handle, nullptr, nullptr, -1), CUFFT_INVALID_PLAN);
  EXPECT_TRUE(calls().empty()) << "the worker was called for an unknown handle";
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(value, 0);
}

TEST_F(CufftShimTest, DestroyingPlanNullSucceedsWithoutACall) {
  EXPECT_EQ(cufftDestroy(CUFFT_PLAN_NULL), CUFFT_SUCCESS);
  EXPECT_TRUE(calls().empty());
}

TEST_F(CufftShimTest, CreateRegistersIncreasingNumbersForTheWorkersTokens) {
  cufftHandle first = 0, second = 0;
  ASSERT_EQ(cufftCreate(&first), CUFFT_SUCCESS);
  ASSERT_EQ(cufftCreate(&second), CUFFT_SUCCESS);
  EXPECT_GT(first, 0);
  EXPECT_GT(second, first);
  ASSERT_EQ(operations(), (std::vector<std::string>{"create", "create"}));

  size_t size = 0;
  ASSERT_EQ(cufftMakePlan1d(second, 64, CUFFT_Z2Z, 3, &size), CUFFT_SUCCESS);
  EXPECT_EQ(size, static_cast<size_t>(kWorkSize));
  const Call make = calls().back();
  EXPECT_EQ(make.operation, "make_plan");
  ASSERT_EQ(make.args[0].kind, AGILEOS_VALUE_HANDLE);
  EXPECT_TRUE(calls()[0].args.empty()) << "create takes no argument";
  EXPECT_NE(make.args[0].word, 0u);
  expectShape(make, 1, ShapeVariant::kOne, {64}, std::nullopt, 1, 0, std::nullopt, 1, 0, CUFFT_Z2Z, 3);
  EXPECT_EQ(cufftCreate(nullptr), CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftDestroy(first), CUFFT_SUCCESS);
  EXPECT_EQ(cufftDestroy(second), CUFFT_SUCCESS);
}

TEST_F(CufftShimTest, CreateKeepsEachPlansOwnToken) {
  cufftHandle a = 0, b = 0;
  ASSERT_EQ(cufftCreate(&a), CUFFT_SUCCESS);
  ASSERT_EQ(cufftCreate(&b), CUFFT_SUCCESS);
  size_t size = 0;
  ASSERT_EQ(cufftGetSize(a, &size), CUFFT_SUCCESS);
  ASSERT_EQ(cufftGetSize(b, &size), CUFFT_SUCCESS);
  const auto all = calls();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[2].operation, "work_size");
  EXPECT_EQ(all[3].operation, "work_size");
  EXPECT_NE(all[2].args[0].word, all[3].args[0].word);
  EXPECT_EQ(size, static_cast<size_t>(kWorkSize));
  cufftDestroy(a);
  cufftDestroy(b);
}

TEST_F(CufftShimTest, PlanXdCreatesThenMakesWithTheBasicLayout) {
  cufftHandle p1 = 0, p2 = 0, p3 = 0;
  ASSERT_EQ(cufftPlan1d(&p1, 1000, CUFFT_R2C, 7), CUFFT_SUCCESS);
  ASSERT_EQ(cufftPlan2d(&p2, 32, 48, CUFFT_D2Z), CUFFT_SUCCESS);
  ASSERT_EQ(cufftPlan3d(&p3, 8, 16, 32, CUFFT_C2R), CUFFT_SUCCESS);
  const auto all = calls();
  ASSERT_EQ(operations(),
            (std::vector<std::string>{"create", "make_plan", "create", "make_plan", "create", "make_plan"}));
  expectShape(all[1], 1, ShapeVariant::kOne, {1000}, std::nullopt, 1, 0, std::nullopt, 1, 0, CUFFT_R2C, 7);
  expectShape(all[3], 1, ShapeVariant::kTwo, {32, 48}, std::nullopt, 1, 0, std::nullopt, 1, 0, CUFFT_D2Z, 1);
  expectShape(all[5], 1, ShapeVariant::kThree, {8, 16, 32}, std::nullopt, 1, 0, std::nullopt, 1, 0, CUFFT_C2R,
              1);
  EXPECT_TRUE(p1 > 0 && p2 > p1 && p3 > p2);
  for (cufftHandle p : {p1, p2, p3}) EXPECT_EQ(cufftDestroy(p), CUFFT_SUCCESS);
  EXPECT_EQ(cufftPlan1d(nullptr, 16, CUFFT_C2C, 1), CUFFT_INVALID_VALUE);
}

TEST_F(CufftShimTest, PlanManySendsSizesEmbedsStridesAndDistances) {
  int n[] = {10, 20};
  int inembed[] = {10, 24};
  cufftHandle plan = 0;
  ASSERT_EQ(cufftPlanMany(&plan, 2, n, inembed, 2, 480, nullptr, 3, 600, CUFFT_C2C, 5), CUFFT_SUCCESS);
  const auto all = calls();
  ASSERT_EQ(all.size(), 2u);
  expectShape(all[1], 1, ShapeVariant::kMany, {10, 20}, std::vector<std::int64_t>{10, 24}, 2, 480,
              std::nullopt, 3, 600, CUFFT_C2C, 5);
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
}

TEST_F(CufftShimTest, AFailedPlanIsDestroyedInTheWorkerAndNotRegistered) {
  FakeWorker::instance().respond([](const Call& call) {
    if (call.operation == "make_plan") return Answer::Status(CUFFT_INVALID_SIZE);
    return cufftWorker(call);
  });
  const std::size_t registered = agileos::client::cufft_shim::plans().size();
  cufftHandle plan = -77;
  EXPECT_EQ(cufftPlan1d(&plan, 0, CUFFT_C2C, 1), CUFFT_INVALID_SIZE);
  EXPECT_EQ(plan, -77) << "the handle was written although the plan failed";
  const auto all = calls();
  ASSERT_EQ(operations(), (std::vector<std::string>{"create", "make_plan", "destroy"}));
  EXPECT_EQ(all[2].args[0].word, all[1].args[0].word) << "destroyed another plan than the one created";
  EXPECT_EQ(agileos::client::cufft_shim::plans().size(), registered) << "the failed plan was registered";
}

TEST_F(CufftShimTest, ACreateFailureIsReturnedWithoutMaking) {
  FakeWorker::instance().respond([](const Call& call) {
    if (call.operation == "create") return Answer::Status(CUFFT_ALLOC_FAILED);
    return cufftWorker(call);
  });
  cufftHandle plan = 5;
  EXPECT_EQ(cufftPlan2d(&plan, 4, 4, CUFFT_C2C), CUFFT_ALLOC_FAILED);
  EXPECT_EQ(operations(), std::vector<std::string>{"create"});
  EXPECT_EQ(plan, 5);
}

TEST_F(CufftShimTest, MakePlanMany64KeepsSixtyFourBitValues) {
  cufftHandle plan = 0;
  ASSERT_EQ(cufftCreate(&plan), CUFFT_SUCCESS);
  long long n[] = {1LL << 20, 3};
  long long onembed[] = {1LL << 20, 4};
  size_t size = 0;
  ASSERT_EQ(cufftMakePlanMany64(plan, 2, n, nullptr, 1, 3LL << 20, onembed, 1, 1LL << 22, CUFFT_Z2Z,
                                1LL << 33, &size),
            CUFFT_SUCCESS);
  expectShape(calls().back(), 1, ShapeVariant::kMany64, {1LL << 20, 3}, std::nullopt, 1, 3LL << 20,
              std::vector<std::int64_t>{1LL << 20, 4}, 1, 1LL << 22, CUFFT_Z2Z, 1LL << 33);
  EXPECT_EQ(size, static_cast<size_t>(kWorkSize));
  size = 0;
  ASSERT_EQ(cufftGetSizeMany64(plan, 2, n, nullptr, 1, 3LL << 20, onembed, 1, 1LL << 22, CUFFT_Z2Z, 2, &size),
            CUFFT_SUCCESS);
  EXPECT_EQ(calls().back().operation, "get_size_for");
  EXPECT_EQ(calls().back().args[1].integer, static_cast<std::int64_t>(ShapeVariant::kMany64));
  EXPECT_EQ(size, static_cast<size_t>(kWorkSize));
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
}

// cufftXt typed plans of single and double precision are the 64-bit "many" plans of the equal
// cufftType; cufftXtExec runs the transform of the type the plan was made with, and sends the
// direction as given (the worker's cuFFT decides what it means for a real transform).
TEST_F(CufftShimTest, TypedPlansAreTheirCufftTypesAndXtExecRunsThePlansTransform) {
  struct Row {
    cudaDataType input, output, execution;
    cufftType type;
    ExecKind kind;
  };
  const Row rows[] = {
      {CUDA_C_32F, CUDA_C_32F, CUDA_C_32F, CUFFT_C2C, ExecKind::kC2C},
      {CUDA_R_32F, CUDA_C_32F, CUDA_C_32F, CUFFT_R2C, ExecKind::kR2C},
      {CUDA_C_32F, CUDA_R_32F, CUDA_C_32F, CUFFT_C2R, ExecKind::kC2R},
      {CUDA_C_64F, CUDA_C_64F, CUDA_C_64F, CUFFT_Z2Z, ExecKind::kZ2Z},
      {CUDA_R_64F, CUDA_C_64F, CUDA_C_64F, CUFFT_D2Z, ExecKind::kD2Z},
      {CUDA_C_64F, CUDA_R_64F, CUDA_C_64F, CUFFT_Z2D, ExecKind::kZ2D},
  };
  long long n[] = {64, 48};
  long long inembed[] = {64, 50};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.type);
    cufftHandle plan = 0;
    ASSERT_EQ(cufftCreate(&plan), CUFFT_SUCCESS);
    EXPECT_EQ(
        cufftXtExec(plan, reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x1000), CUFFT_FORWARD),
        CUFFT_INVALID_PLAN)
        << "a plan never made has no transform";
    size_t size = 0;
    ASSERT_EQ(cufftXtGetSizeMany(plan, 2, n, inembed, 2, 6400, row.input, nullptr, 1, 3072, row.output, 5,
                                 &size, row.execution),
              CUFFT_SUCCESS);
    EXPECT_EQ(calls().back().operation, "get_size_for");
    expectShape(calls().back(), 1, ShapeVariant::kMany64, {64, 48}, std::vector<std::int64_t>{64, 50}, 2,
                6400, std::nullopt, 1, 3072, row.type, 5);
    ASSERT_EQ(cufftXtMakePlanMany(plan, 2, n, inembed, 2, 6400, row.input, nullptr, 1, 3072, row.output, 5,
                                  &size, row.execution),
              CUFFT_SUCCESS);
    EXPECT_EQ(calls().back().operation, "make_plan");
    expectShape(calls().back(), 1, ShapeVariant::kMany64, {64, 48}, std::vector<std::int64_t>{64, 50}, 2,
                6400, std::nullopt, 1, 3072, row.type, 5);
    EXPECT_EQ(size, static_cast<size_t>(kWorkSize));
    const std::uint64_t token = lastToken();
    ASSERT_EQ(
        cufftXtExec(plan, reinterpret_cast<void*>(0x10000), reinterpret_cast<void*>(0x20000), CUFFT_INVERSE),
        CUFFT_SUCCESS);
    const Call exec = calls().back();
    EXPECT_EQ(exec.operation, "exec");
    EXPECT_EQ(exec.args[0].word, token);
    EXPECT_EQ(exec.args[1].integer, static_cast<std::int64_t>(row.kind));
    EXPECT_EQ(exec.args[2].word, 0x10000u);
    EXPECT_EQ(exec.args[3].word, 0x20000u);
    EXPECT_EQ(exec.args[4].integer, CUFFT_INVERSE);
    EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
    EXPECT_EQ(cufftXtExec(plan, nullptr, nullptr, CUFFT_FORWARD), CUFFT_INVALID_PLAN);
  }
  // A plan made by cufftPlan1d runs its type through cufftXtExec too.
  const cufftHandle plan = madePlan();
  ASSERT_EQ(
      cufftXtExec(plan, reinterpret_cast<void*>(0x10000), reinterpret_cast<void*>(0x10000), CUFFT_FORWARD),
      CUFFT_SUCCESS);
  EXPECT_EQ(calls().back().args[1].integer, static_cast<std::int64_t>(ExecKind::kC2C));
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
}

TEST_F(CufftShimTest, XtSetWorkAreaSetsTheOnlyGpusWorkArea) {
  const cufftHandle plan = madePlan();
  const std::uint64_t token = lastToken();
  forgetCalls();
  void* areas[1] = {reinterpret_cast<void*>(0x7000)};
  ASSERT_EQ(cufftXtSetWorkArea(plan, areas), CUFFT_SUCCESS);
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_EQ(calls()[0].operation, "set_work_area");
  EXPECT_EQ(calls()[0].args[0].word, token);
  EXPECT_EQ(calls()[0].args[1].word, 0x7000u);
  EXPECT_EQ(cufftXtSetWorkArea(plan, nullptr), CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftXtSetWorkArea(plan + 1000, areas), CUFFT_INVALID_PLAN);
  EXPECT_EQ(calls().size(), 1u);
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
}

// Half and bfloat16 plans are typed shapes (kTyped) whose type value carries the transform and the
// precision; cufftXtExec runs their transform's kind.
TEST_F(CufftShimTest, HalfAndBFloat16PlansAreTypedShapes) {
  using agileos::adapters::cufft::Precision;
  using agileos::adapters::cufft::typedTransform;
  struct Row {
    cudaDataType input, output, execution;
    std::int64_t type;
    ExecKind kind;
  };
  const Row rows[] = {
      {CUDA_C_16F, CUDA_C_16F, CUDA_C_16F, typedTransform(CUFFT_C2C, Precision::kHalf), ExecKind::kC2C},
      {CUDA_R_16F, CUDA_C_16F, CUDA_C_16F, typedTransform(CUFFT_R2C, Precision::kHalf), ExecKind::kR2C},
      {CUDA_C_16F, CUDA_R_16F, CUDA_C_16F, typedTransform(CUFFT_C2R, Precision::kHalf), ExecKind::kC2R},
      {CUDA_C_16BF, CUDA_C_16BF, CUDA_C_16BF, typedTransform(CUFFT_C2C, Precision::kBFloat16),
       ExecKind::kC2C},
      {CUDA_R_16BF, CUDA_C_16BF, CUDA_C_16BF, typedTransform(CUFFT_R2C, Precision::kBFloat16),
       ExecKind::kR2C},
      {CUDA_C_16BF, CUDA_R_16BF, CUDA_C_16BF, typedTransform(CUFFT_C2R, Precision::kBFloat16),
       ExecKind::kC2R},
  };
  long long n[] = {256};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.type);
    cufftHandle plan = 0;
    ASSERT_EQ(cufftCreate(&plan), CUFFT_SUCCESS);
    size_t size = 0;
    ASSERT_EQ(cufftXtMakePlanMany(plan, 1, n, nullptr, 1, 256, row.input, nullptr, 1, 129, row.output, 3,
                                  &size, row.execution),
              CUFFT_SUCCESS);
    expectShape(calls().back(), 1, ShapeVariant::kTyped, {256}, std::nullopt, 1, 256, std::nullopt, 1, 129,
                row.type, 3);
    ASSERT_EQ(
        cufftXtExec(plan, reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x2000), CUFFT_FORWARD),
        CUFFT_SUCCESS);
    EXPECT_EQ(calls().back().args[1].integer, static_cast<std::int64_t>(row.kind));
    EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
  }
}

TEST_F(CufftShimTest, TypedPlansOfUndocumentedTypeCombinationsFailClosedWithoutACall) {
  cufftHandle plan = 0;
  ASSERT_EQ(cufftCreate(&plan), CUFFT_SUCCESS);
  forgetCalls();
  long long n[] = {256};
  size_t size = 0;
  const cudaDataType triples[][3] = {
      {CUDA_R_32F, CUDA_C_32F, CUDA_R_32F}, {CUDA_C_32F, CUDA_C_64F, CUDA_C_64F},
      {CUDA_R_32F, CUDA_R_32F, CUDA_C_32F}, {CUDA_C_16F, CUDA_C_16BF, CUDA_C_16F},
      {CUDA_R_16F, CUDA_C_16F, CUDA_C_32F}, {CUDA_R_8I, CUDA_C_8I, CUDA_C_8I}};
  for (const auto& t : triples) {
    EXPECT_EQ(cufftXtMakePlanMany(plan, 1, n, nullptr, 1, 256, t[0], nullptr, 1, 256, t[1], 1, &size, t[2]),
              CUFFT_NOT_SUPPORTED);
    EXPECT_EQ(cufftXtGetSizeMany(plan, 1, n, nullptr, 1, 256, t[0], nullptr, 1, 256, t[1], 1, &size, t[2]),
              CUFFT_NOT_SUPPORTED);
  }
  EXPECT_TRUE(calls().empty());
  EXPECT_EQ(cufftXtMakePlanMany(plan + 1000, 1, n, nullptr, 1, 256, CUDA_C_32F, nullptr, 1, 256, CUDA_C_32F,
                                1, &size, CUDA_C_32F),
            CUFFT_INVALID_PLAN);
  EXPECT_EQ(cufftXtMakePlanMany(plan, 4, n, nullptr, 1, 256, CUDA_C_16F, nullptr, 1, 256, CUDA_C_16F, 1,
                                &size, CUDA_C_16F),
            CUFFT_INVALID_SIZE);
  EXPECT_TRUE(calls().empty());
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
}

TEST_F(CufftShimTest, MakePlanVariantsSendTheirShapes) {
  cufftHandle plan = 0;
  ASSERT_EQ(cufftCreate(&plan), CUFFT_SUCCESS);
  ASSERT_EQ(cufftMakePlan2d(plan, 6, 7, CUFFT_C2C, nullptr), CUFFT_SUCCESS);  // workSize may be null
  expectShape(calls().back(), 1, ShapeVariant::kTwo, {6, 7}, std::nullopt, 1, 0, std::nullopt, 1, 0,
              CUFFT_C2C, 1);
  size_t size = 0;
  ASSERT_EQ(cufftMakePlan3d(plan, 2, 3, 4, CUFFT_Z2D, &size), CUFFT_SUCCESS);
  expectShape(calls().back(), 1, ShapeVariant::kThree, {2, 3, 4}, std::nullopt, 1, 0, std::nullopt, 1, 0,
              CUFFT_Z2D, 1);
  int n[] = {9};
  int onembed[] = {12};
  ASSERT_EQ(cufftMakePlanMany(plan, 1, n, nullptr, 1, 9, onembed, 2, 12, CUFFT_R2C, 4, &size), CUFFT_SUCCESS);
  expectShape(calls().back(), 1, ShapeVariant::kMany, {9}, std::nullopt, 1, 9, std::vector<std::int64_t>{12},
              2, 12, CUFFT_R2C, 4);
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
}

TEST_F(CufftShimTest, ManyShapesWithAnImpossibleRankOrNoSizesFailLocally) {
  cufftHandle plan = 0;
  ASSERT_EQ(cufftCreate(&plan), CUFFT_SUCCESS);
  forgetCalls();
  int n[] = {4, 4, 4, 4};
  long long n64[] = {4, 4, 4, 4};
  size_t size = 0;
  cufftHandle made = 0;
  EXPECT_EQ(cufftPlanMany(&made, 4, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1), CUFFT_INVALID_SIZE);
  EXPECT_EQ(cufftPlanMany(&made, 0, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1), CUFFT_INVALID_SIZE);
  EXPECT_EQ(cufftPlanMany(&made, 1, nullptr, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1),
            CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftMakePlanMany(plan, -1, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, &size),
            CUFFT_INVALID_SIZE);
  EXPECT_EQ(cufftMakePlanMany64(plan, 4, n64, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, &size),
            CUFFT_INVALID_SIZE);
  EXPECT_EQ(cufftEstimateMany(9, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, &size), CUFFT_INVALID_SIZE);
  EXPECT_EQ(cufftGetSizeMany(plan, 1, nullptr, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, &size),
            CUFFT_INVALID_VALUE);
  EXPECT_TRUE(calls().empty());
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
}

TEST_F(CufftShimTest, EstimatesNeedNoPlanAndSizeQueriesNameTheirPlan) {
  size_t size = 0;
  ASSERT_EQ(cufftEstimate1d(128, CUFFT_C2C, 2, &size), CUFFT_SUCCESS);
  EXPECT_EQ(size, static_cast<size_t>(kWorkSize));
  expectShape(calls().back(), 0, ShapeVariant::kOne, {128}, std::nullopt, 1, 0, std::nullopt, 1, 0, CUFFT_C2C,
              2);
  ASSERT_EQ(cufftEstimate2d(8, 8, CUFFT_R2C, &size), CUFFT_SUCCESS);
  expectShape(calls().back(), 0, ShapeVariant::kTwo, {8, 8}, std::nullopt, 1, 0, std::nullopt, 1, 0,
              CUFFT_R2C, 1);
  ASSERT_EQ(cufftEstimate3d(2, 4, 8, CUFFT_Z2Z, &size), CUFFT_SUCCESS);
  int n[] = {5, 6};
  ASSERT_EQ(cufftEstimateMany(2, n, nullptr, 1, 30, nullptr, 1, 30, CUFFT_C2C, 3, &size), CUFFT_SUCCESS);
  expectShape(calls().back(), 0, ShapeVariant::kMany, {5, 6}, std::nullopt, 1, 30, std::nullopt, 1, 30,
              CUFFT_C2C, 3);
  for (const Call& call : calls()) EXPECT_EQ(call.operation, "estimate");

  cufftHandle plan = 0;
  ASSERT_EQ(cufftCreate(&plan), CUFFT_SUCCESS);
  forgetCalls();
  ASSERT_EQ(cufftGetSize1d(plan, 100, CUFFT_D2Z, 4, &size), CUFFT_SUCCESS);
  expectShape(calls().back(), 1, ShapeVariant::kOne, {100}, std::nullopt, 1, 0, std::nullopt, 1, 0, CUFFT_D2Z,
              4);
  ASSERT_EQ(cufftGetSize2d(plan, 10, 10, CUFFT_C2C, &size), CUFFT_SUCCESS);
  ASSERT_EQ(cufftGetSize3d(plan, 3, 3, 3, CUFFT_C2C, &size), CUFFT_SUCCESS);
  ASSERT_EQ(cufftGetSizeMany(plan, 2, n, nullptr, 1, 30, nullptr, 1, 30, CUFFT_C2C, 3, &size), CUFFT_SUCCESS);
  for (const Call& call : calls()) {
    EXPECT_EQ(call.operation, "get_size_for");
    EXPECT_EQ(call.args[0].kind, AGILEOS_VALUE_HANDLE);
  }
  ASSERT_EQ(cufftGetSize(plan, &size), CUFFT_SUCCESS);
  EXPECT_EQ(calls().back().operation, "work_size");
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
}

TEST_F(CufftShimTest, ExecSendsItsKindBuffersAndDirection) {
  const cufftHandle plan = madePlan();
  const std::uint64_t token = lastToken();
  auto* in = reinterpret_cast<cufftComplex*>(0x10000);
  auto* out = reinterpret_cast<cufftComplex*>(0x20000);
  auto* zin = reinterpret_cast<cufftDoubleComplex*>(0x30000);
  auto* rin = reinterpret_cast<cufftReal*>(0x40000);
  auto* din = reinterpret_cast<cufftDoubleReal*>(0x50000);
  forgetCalls();
  ASSERT_EQ(cufftExecC2C(plan, in, out, CUFFT_INVERSE), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecR2C(plan, rin, out), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecC2R(plan, in, rin), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecZ2Z(plan, zin, zin, CUFFT_FORWARD), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecD2Z(plan, din, zin), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecZ2D(plan, zin, din), CUFFT_SUCCESS);
  struct Expected {
    ExecKind kind;
    std::uint64_t in, out;
    std::int64_t direction;
  };
  const Expected expected[] = {
      {ExecKind::kC2C, 0x10000, 0x20000, CUFFT_INVERSE}, {ExecKind::kR2C, 0x40000, 0x20000, CUFFT_FORWARD},
      {ExecKind::kC2R, 0x10000, 0x40000, CUFFT_INVERSE}, {ExecKind::kZ2Z, 0x30000, 0x30000, CUFFT_FORWARD},
      {ExecKind::kD2Z, 0x50000, 0x30000, CUFFT_FORWARD}, {ExecKind::kZ2D, 0x30000, 0x50000, CUFFT_INVERSE}};
  const auto all = calls();
  ASSERT_EQ(all.size(), 6u);
  for (std::size_t i = 0; i < all.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(all[i].operation, "exec");
    EXPECT_EQ(all[i].args[0].word, token);
    EXPECT_EQ(all[i].args[1].integer, static_cast<std::int64_t>(expected[i].kind));
    EXPECT_EQ(all[i].args[2].word, expected[i].in);
    EXPECT_EQ(all[i].args[3].word, expected[i].out);
    EXPECT_EQ(all[i].args[4].integer, expected[i].direction);
  }
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
}

// An execution the worker accepted is sent without waiting when repeated unchanged; anything
// that may have invalidated it (other buffers, a release, a plan change, a refusal) waits again.
TEST_F(CufftShimTest, OnlyARepeatedAcceptedExecIsSentWithoutWaiting) {
  const cufftHandle plan = madePlan();
  auto* in = reinterpret_cast<cufftComplex*>(0x10000);
  auto* out = reinterpret_cast<cufftComplex*>(0x20000);
  forgetCalls();
  auto asyncFlags = [&] {
    std::vector<bool> flags;
    for (const Call& call : calls()) flags.push_back(call.async);
    forgetCalls();
    return flags;
  };
  ASSERT_EQ(cufftExecC2C(plan, in, out, CUFFT_FORWARD), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecC2C(plan, in, out, CUFFT_FORWARD), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecC2C(plan, in, out, CUFFT_FORWARD), CUFFT_SUCCESS);
  EXPECT_EQ(asyncFlags(), (std::vector<bool>{false, true, true}));
  ASSERT_EQ(cufftExecC2C(plan, out, in, CUFFT_FORWARD), CUFFT_SUCCESS);  // other buffers
  ASSERT_EQ(cufftExecC2C(plan, out, in, CUFFT_INVERSE), CUFFT_SUCCESS);  // other direction
  EXPECT_EQ(asyncFlags(), (std::vector<bool>{false, false}));
  FakeWorker::instance().bumpEpoch();  // cudaFree somewhere in the process
  ASSERT_EQ(cufftExecC2C(plan, out, in, CUFFT_INVERSE), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecC2C(plan, out, in, CUFFT_INVERSE), CUFFT_SUCCESS);
  EXPECT_EQ(asyncFlags(), (std::vector<bool>{false, true}));
  ASSERT_EQ(cufftSetStream(plan, nullptr), CUFFT_SUCCESS);
  ASSERT_EQ(cufftExecC2C(plan, out, in, CUFFT_INVERSE), CUFFT_SUCCESS);
  EXPECT_EQ(asyncFlags(), (std::vector<bool>{false, false}));
  // A refusal is never remembered: the same call waits again.
  FakeWorker::instance().respond([](const Call&) { return Answer::Status(CUFFT_INVALID_VALUE); });
  EXPECT_EQ(cufftExecC2C(plan, in, in, CUFFT_FORWARD), CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftExecC2C(plan, in, in, CUFFT_FORWARD), CUFFT_INVALID_VALUE);
  EXPECT_EQ(asyncFlags(), (std::vector<bool>{false, false}));
}

// cuFFT's work runs in the worker and cannot become a graph node: an exec on a plan whose stream
// captures is refused before anything is sent (and the runtime shim invalidates the capture).
TEST_F(CufftShimTest, ExecOnACapturingStreamIsRefusedWithoutACall) {
  const cufftHandle plan = madePlan();
  auto* stream = reinterpret_cast<cudaStream_t>(0xc0);
  ASSERT_EQ(cufftSetStream(plan, stream), CUFFT_SUCCESS);
  forgetCalls();
  FakeWorker::instance().setCapturingStream(stream);
  auto* data = reinterpret_cast<cufftComplex*>(0x7000000);
  EXPECT_EQ(cufftExecC2C(plan, data, data, CUFFT_FORWARD), CUFFT_EXEC_FAILED);
  EXPECT_TRUE(calls().empty()) << "an exec on a capturing stream reached the worker";
  FakeWorker::instance().setCapturingStream(nullptr);
  EXPECT_EQ(cufftExecC2C(plan, data, data, CUFFT_FORWARD), CUFFT_SUCCESS);
  EXPECT_EQ(calls().size(), 1u);
}

TEST_F(CufftShimTest, StreamWorkAreaAllocationAndPropertiesReachThePlan) {
  const cufftHandle plan = madePlan();
  const std::uint64_t token = lastToken();
  forgetCalls();
  auto* stream = reinterpret_cast<cudaStream_t>(0xabc0);
  ASSERT_EQ(cufftSetStream(plan, stream), CUFFT_SUCCESS);
  ASSERT_EQ(cufftSetWorkArea(plan, reinterpret_cast<void*>(0x7000000)), CUFFT_SUCCESS);
  ASSERT_EQ(cufftSetAutoAllocation(plan, 0), CUFFT_SUCCESS);
  ASSERT_EQ(cufftSetPlanPropertyInt64(plan, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT, 1), CUFFT_SUCCESS);
  long long value = 0;
  ASSERT_EQ(cufftGetPlanPropertyInt64(plan, NVFFT_PLAN_PROPERTY_INT64_MAX_NUM_HOST_THREADS, &value),
            CUFFT_SUCCESS);
  EXPECT_EQ(value, 77);
  ASSERT_EQ(cufftResetPlanProperty(plan, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT), CUFFT_SUCCESS);
  EXPECT_EQ(cufftGetPlanPropertyInt64(plan, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT, nullptr),
            CUFFT_INVALID_VALUE);

  const auto all = calls();
  ASSERT_EQ(operations(),
            (std::vector<std::string>{"set_stream", "set_work_area", "set_auto_allocation",
                                      "set_plan_property", "get_plan_property", "reset_plan_property"}));
  for (const Call& call : all) EXPECT_EQ(call.args[0].word, token) << call.operation;
  EXPECT_EQ(all[0].args[1].kind, AGILEOS_VALUE_STREAM);
  EXPECT_EQ(all[0].args[1].stream, static_cast<void*>(stream));
  EXPECT_EQ(all[1].args[1].kind, AGILEOS_VALUE_DEVICE_POINTER);
  EXPECT_EQ(all[1].args[1].word, 0x7000000u);
  EXPECT_EQ(all[2].args[1].integer, 0);
  EXPECT_EQ(all[3].args[1].integer, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT);
  EXPECT_EQ(all[3].args[2].integer, 1);
  EXPECT_EQ(all[4].args[1].integer, NVFFT_PLAN_PROPERTY_INT64_MAX_NUM_HOST_THREADS);
  EXPECT_EQ(all[5].args[1].integer, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT);
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
}

TEST_F(CufftShimTest, VersionAndPropertyAnswers) {
  int version = 0;
  ASSERT_EQ(cufftGetVersion(&version), CUFFT_SUCCESS);
  EXPECT_EQ(version, 12000);
  int major = -1;
  ASSERT_EQ(cufftGetProperty(MAJOR_VERSION, &major), CUFFT_SUCCESS);
  EXPECT_EQ(major, 12);
  EXPECT_EQ(calls().back().args[0].integer, MAJOR_VERSION);
  forgetCalls();
  EXPECT_EQ(cufftGetVersion(nullptr), CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftGetProperty(MINOR_VERSION, nullptr), CUFFT_INVALID_VALUE);
  EXPECT_TRUE(calls().empty());
}

TEST_F(CufftShimTest, DestroyForgetsTheNumberEvenWhenTheWorkerIsGone) {
  const cufftHandle plan = madePlan();
  const std::uint64_t token = lastToken();
  forgetCalls();
  ASSERT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
  ASSERT_EQ(operations(), std::vector<std::string>{"destroy"});
  EXPECT_EQ(calls()[0].args[0].word, token);
  EXPECT_EQ(cufftDestroy(plan), CUFFT_INVALID_PLAN);
  EXPECT_EQ(cufftExecC2C(plan, nullptr, nullptr, CUFFT_FORWARD), CUFFT_INVALID_PLAN);
  EXPECT_EQ(calls().size(), 1u);

  const cufftHandle other = madePlan();
  EXPECT_GT(other, plan) << "a destroyed number was handed out again";
  FakeWorker::instance().respond([](const Call&) { return Answer::NoSession(); });
  EXPECT_EQ(cufftDestroy(other), CUFFT_INTERNAL_ERROR);
  EXPECT_EQ(cufftDestroy(other), CUFFT_INVALID_PLAN);
}

TEST_F(CufftShimTest, RepliesMapToCufftResults) {
  const cufftHandle plan = madePlan();
  const auto respondWith = [](Answer answer) {
    FakeWorker::instance().respond([answer](const Call&) { return answer; });
  };
  // No session or a lost connection: no reply at all.
  respondWith(Answer::NoSession());
  EXPECT_EQ(cufftExecC2C(plan, nullptr, nullptr, CUFFT_FORWARD), CUFFT_INTERNAL_ERROR);
  cufftHandle created = 31;
  EXPECT_EQ(cufftCreate(&created), CUFFT_INTERNAL_ERROR);
  EXPECT_EQ(created, 31);
  // An argument the runtime shim rejected before sending (an unknown stream).
  Answer rejected;
  rejected.callError = 400;  // cudaErrorInvalidResourceHandle
  respondWith(rejected);
  EXPECT_EQ(cufftSetStream(plan, reinterpret_cast<cudaStream_t>(0x1234)), CUFFT_INVALID_VALUE);
  // The library's own status, whatever the cudaError_t beside it.
  respondWith(Answer::Status(CUFFT_EXEC_FAILED));
  EXPECT_EQ(cufftExecC2C(plan, nullptr, nullptr, CUFFT_FORWARD), CUFFT_EXEC_FAILED);
  Answer statusWithoutError = Answer::Status(CUFFT_NO_WORKSPACE);
  statusWithoutError.error = 0;
  respondWith(statusWithoutError);
  EXPECT_EQ(cufftExecC2C(plan, nullptr, nullptr, CUFFT_FORWARD), CUFFT_NO_WORKSPACE);
  // Refused by the worker before cuFFT saw it (not admitted, wrong argument kind).
  respondWith(Answer::Refused(800, "cufft.exec is not admitted for this client"));
  EXPECT_EQ(cufftExecC2C(plan, nullptr, nullptr, CUFFT_FORWARD), CUFFT_INVALID_VALUE);
  // Success without the declared result.
  respondWith(Answer::Ok());
  size_t size = 123;
  EXPECT_EQ(cufftGetSize(plan, &size), CUFFT_INTERNAL_ERROR);
  EXPECT_EQ(size, 123u);
  respondWith(Answer::Ok({Value::Integer(-1)}));
  EXPECT_EQ(cufftGetSize(plan, &size), CUFFT_INTERNAL_ERROR);
  respondWith(Answer::Ok({Value::Text("4096")}));
  EXPECT_EQ(cufftGetSize(plan, &size), CUFFT_INTERNAL_ERROR);
  EXPECT_EQ(size, 123u);
  cufftHandle noToken = 9;
  EXPECT_EQ(cufftCreate(&noToken), CUFFT_INTERNAL_ERROR);
  EXPECT_EQ(noToken, 9);
  respondWith(Answer::Ok());
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// The fail-closed entry points

// Calls every unsupported entry point once; returns the names called and checks each result.
std::set<std::string> callEveryUnsupportedEntryPoint() {
  cudaLibXtDesc* descriptor = reinterpret_cast<cudaLibXtDesc*>(0x5a5a);
  size_t size = 99;
  void* pointers[1] = {nullptr};
  const std::vector<std::pair<const char*, std::function<cufftResult()>>> entryPoints = {
      {"cufftXtSetCallback", [&] { return cufftXtSetCallback(1, pointers, CUFFT_CB_LD_COMPLEX, pointers); }},
      {"cufftXtSetJITCallback",
       [&] { return cufftXtSetJITCallback(1, "cb", pointers, 16, CUFFT_CB_LD_COMPLEX, pointers); }},
      {"cufftXtClearCallback", [&] { return cufftXtClearCallback(1, CUFFT_CB_LD_COMPLEX); }},
      {"cufftXtSetCallbackSharedSize",
       [&] { return cufftXtSetCallbackSharedSize(1, CUFFT_CB_LD_COMPLEX, 64); }},
      {"cufftXtSetGPUs",
       [&] {
         int gpus[] = {0, 1};
         return cufftXtSetGPUs(1, 2, gpus);
       }},
      {"cufftXtMalloc", [&] { return cufftXtMalloc(1, &descriptor, CUFFT_XT_FORMAT_INPLACE); }},
      {"cufftXtFree", [&] { return cufftXtFree(descriptor); }},
      {"cufftXtMemcpy", [&] { return cufftXtMemcpy(1, pointers, pointers, CUFFT_COPY_HOST_TO_DEVICE); }},
      {"cufftXtExecDescriptor",
       [&] { return cufftXtExecDescriptor(1, descriptor, descriptor, CUFFT_FORWARD); }},
      {"cufftXtExecDescriptorC2C",
       [&] { return cufftXtExecDescriptorC2C(1, descriptor, descriptor, CUFFT_FORWARD); }},
      {"cufftXtExecDescriptorR2C", [&] { return cufftXtExecDescriptorR2C(1, descriptor, descriptor); }},
      {"cufftXtExecDescriptorC2R", [&] { return cufftXtExecDescriptorC2R(1, descriptor, descriptor); }},
      {"cufftXtExecDescriptorZ2Z",
       [&] { return cufftXtExecDescriptorZ2Z(1, descriptor, descriptor, CUFFT_FORWARD); }},
      {"cufftXtExecDescriptorD2Z", [&] { return cufftXtExecDescriptorD2Z(1, descriptor, descriptor); }},
      {"cufftXtExecDescriptorZ2D", [&] { return cufftXtExecDescriptorZ2D(1, descriptor, descriptor); }},
      {"cufftXtQueryPlan",
       [&] {
         cufftXt1dFactors factors{};
         return cufftXtQueryPlan(1, &factors, CUFFT_QUERY_1D_FACTORS);
       }},
      {"cufftXtMakePlanGuru64", [&] { return cufftXtMakePlanGuru64(); }},
      {"cufftXtSetWorkAreaPolicy",
       [&] { return cufftXtSetWorkAreaPolicy(1, CUFFT_WORKAREA_MINIMAL, &size); }},
      {"cufftDebug", [&] { return cufftDebug(); }},
  };
  std::set<std::string> names;
  for (const auto& [name, run] : entryPoints) {
    EXPECT_EQ(run(), CUFFT_NOT_SUPPORTED) << name;
    names.insert(name);
  }
  EXPECT_EQ(descriptor, reinterpret_cast<cudaLibXtDesc*>(0x5a5a)) << "an output argument was written";
  EXPECT_EQ(size, 99u) << "an output argument was written";
  EXPECT_EQ(pointers[0], nullptr) << "an output argument was written";
  return names;
}

TEST_F(CufftShimTest, UnsupportedEntryPointsFailClosedAndLogTheTablesReasonOnce) {
  const auto rows = agileos::client::cufft_shim::failClosedEntries();
  ::testing::internal::CaptureStderr();
  const std::set<std::string> called = callEveryUnsupportedEntryPoint();
  const std::string firstLog = ::testing::internal::GetCapturedStderr();
  ::testing::internal::CaptureStderr();
  callEveryUnsupportedEntryPoint();
  const std::string secondLog = ::testing::internal::GetCapturedStderr();

  std::set<std::string> tableNames;
  for (const auto& row : rows) {
    tableNames.insert(row.symbol);
    EXPECT_EQ(row.result, CUFFT_NOT_SUPPORTED) << row.symbol;
    const std::string line = std::string(row.symbol) + " is not supported by AgileOS (" + row.reason +
                             "); returning CUFFT_NOT_SUPPORTED";
    const auto at = firstLog.find(line);
    EXPECT_NE(at, std::string::npos) << "not logged: " << line << "\nlog:\n" << firstLog;
    if (at != std::string::npos) {
      EXPECT_EQ(firstLog.find(line, at + 1), std::string::npos) << "logged twice: " << line;
    }
  }
  EXPECT_EQ(called, tableNames) << "the test and the table disagree on which entry points are unsupported";
  EXPECT_EQ(rows.size(), 19u);
  EXPECT_EQ(firstLog.find("has no row"), std::string::npos) << firstLog;
  EXPECT_EQ(secondLog, "") << "an unsupported entry point logged again";
  EXPECT_TRUE(calls().empty()) << "an unsupported entry point called the worker";
}

}  // namespace
