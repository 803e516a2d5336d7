// Integration test against the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG).

#include "kube/events/recorder.h"

#include <vector>
#include <gtest/gtest.h>

#include "kube/testing/test_cluster.h"

namespace spiderpool::kube {
namespace {

TEST(EventRecorder, WritesAndAggregatesRepeats) {
  auto cluster = testing::TestCluster::Start();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  base::SimulatedClock clock;
  metrics::Registry registry;
  EventRecorder rec((*cluster)->rest(), {.component = "spiderpool-controller",
                                         .host = "node-1",
                                         .clock = &clock,
                                         .registry = &registry});
  api::ObjectReference pod{.kind = "Pod", .namespace_ = (*cluster)->ns(), .name = "web-0",
                           .uid = "1111", .api_version = "v1"};
  for (int i = 0; i < 3; ++i) {
    rec.Event(pod, "Warning", "IPPoolExhausted", "no free IP in pool ippool-test");
    clock.Advance(absl::Seconds(1));
  }
  rec.Event(pod, "Normal", "IPAllocated", "172.18.30.131 from ippool-test");
  rec.Flush();

  Client<api::Event> events((*cluster)->rest());
  auto list = events.List((*cluster)->ns());
  ASSERT_TRUE(list.ok()) << list.status();
  // Only the events recorded here (a real namespace has events of its own).
  std::vector<api::Event> ours;
  for (const api::Event& e : list->items) {
    if (e.source.component == "spiderpool-controller") ours.push_back(e);
  }
  ASSERT_EQ(ours.size(), 2u);
  int exhausted = 0, allocated = 0;
  for (const api::Event& e : ours) {
    EXPECT_EQ(e.involved_object.name, "web-0");
    EXPECT_EQ(e.source.component, "spiderpool-controller");
    if (e.reason == "IPPoolExhausted") {
      ++exhausted;
      EXPECT_EQ(e.count, 3);
      EXPECT_EQ(e.type, "Warning");
      ASSERT_TRUE(e.first_timestamp && e.last_timestamp);
      EXPECT_EQ(e.last_timestamp->value - e.first_timestamp->value, absl::Seconds(2));
    } else if (e.reason == "IPAllocated") {
      ++allocated;
      EXPECT_EQ(e.count, 1);
    }
  }
  EXPECT_EQ(exhausted, 1);
  EXPECT_EQ(allocated, 1);
  EXPECT_EQ(rec.dropped(), 0u);
}

TEST(EventRecorder, RateLimitsTheSameObjectAndReasonAndFoldsTheCount) {
  auto cluster = testing::TestCluster::Start();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  base::SimulatedClock clock;
  metrics::Registry registry;
  EventRecorder rec((*cluster)->rest(), {.component = "spiderpool-agent",
                                         .host = "node-1",
                                         .min_interval = absl::Seconds(30),
                                         .clock = &clock,
                                         .registry = &registry});
  api::ObjectReference pod{.kind = "Pod", .namespace_ = (*cluster)->ns(), .name = "web-1",
                           .uid = "3333", .api_version = "v1"};
  // 5 failures within 30 s (the message varies): one Event, written once.
  for (int i = 0; i < 5; ++i) {
    rec.Event(pod, "Warning", "IPPoolExhausted", "pool full, attempt " + std::to_string(i));
    clock.Advance(absl::Seconds(2));
  }
  rec.Event(pod, "Warning", "OtherReason", "another reason is not limited by the first");
  rec.Flush();
  Client<api::Event> events((*cluster)->rest());
  auto ours = [&](const std::string& reason) {
    std::vector<api::Event> out;
    auto list = events.List((*cluster)->ns());
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return out;
    for (const api::Event& e : list->items) {
      if (e.involved_object.uid == "3333" && e.reason == reason) out.push_back(e);
    }
    return out;
  };
  auto exhausted = ours("IPPoolExhausted");
  ASSERT_EQ(exhausted.size(), 1u);
  EXPECT_EQ(exhausted[0].count, 1);
  EXPECT_EQ(exhausted[0].message, "pool full, attempt 0");
  EXPECT_EQ(ours("OtherReason").size(), 1u);

  // After the interval the same message is written again (a count patch of the first Event)
  // with the 4 occurrences kept back folded in.
  clock.Advance(absl::Seconds(30));
  rec.Event(pod, "Warning", "IPPoolExhausted", "pool full, attempt 0");
  rec.Flush();
  exhausted = ours("IPPoolExhausted");
  ASSERT_EQ(exhausted.size(), 1u);
  EXPECT_EQ(exhausted[0].count, 6);
}

TEST(EventRecorder, DropsInsteadOfBlockingWhenTheQueueIsFull) {
  auto cluster = testing::TestCluster::Start();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  if ((*cluster)->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  metrics::Registry registry;
  (*cluster)->loopback()->InjectDelay(absl::Milliseconds(200));
  EventRecorder rec((*cluster)->rest(), {.component = "c", .max_queue = 2, .registry = &registry});
  api::ObjectReference node{.kind = "Node", .name = "n1", .uid = "2", .api_version = "v1"};
  for (int i = 0; i < 50; ++i) rec.Event(node, "Normal", "R", "message " + std::to_string(i));
  EXPECT_GE(rec.dropped(), 40u);  // the caller never waited for the slow server
  (*cluster)->loopback()->InjectDelay(absl::ZeroDuration());
  rec.Flush();
  EXPECT_NE(registry.Expose().find("spiderpool_events_dropped_total{component=\"c\"}"),
            std::string::npos);
}

}  // namespace
}  // namespace spiderpool::kube
