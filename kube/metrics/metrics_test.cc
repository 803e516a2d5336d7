#include "kube/metrics/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace spiderpool::kube::metrics {
namespace {

TEST(FormatValue, MatchesGoShortestG) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(1), "1");
  EXPECT_EQ(FormatValue(22), "22");
  EXPECT_EQ(FormatValue(-3.5), "-3.5");
  EXPECT_EQ(FormatValue(0.005), "0.005");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(2.5), "2.5");
  EXPECT_EQ(FormatValue(0.0001), "0.0001");
  EXPECT_EQ(FormatValue(1e-5), "1e-05");
  EXPECT_EQ(FormatValue(1e-8), "1e-08");
  EXPECT_EQ(FormatValue(100000), "100000");
  EXPECT_EQ(FormatValue(1e6), "1e+06");
  EXPECT_EQ(FormatValue(1234567), "1.234567e+06");
  EXPECT_EQ(FormatValue(1.7e9), "1.7e+09");
  EXPECT_EQ(FormatValue(1e100), "1e+100");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
}

TEST(Buckets, Helpers) {
  EXPECT_EQ(DefaultBuckets(),
            (std::vector<double>{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}));
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_EQ(LinearBuckets(1, 5, 3), (std::vector<double>{1, 6, 11}));
  std::vector<double> exp = ExponentialBuckets(10e-9, 10, 12);
  ASSERT_EQ(exp.size(), 12u);
  EXPECT_EQ(FormatValue(exp[0]), "1e-08");
  EXPECT_EQ(FormatValue(exp[11]), "1000");
}

TEST(Counter, IncAndIgnoreNegative) {
  Counter c;
  c.Inc();
  c.Inc(2.5);
  c.Inc(-10);
  EXPECT_DOUBLE_EQ(c.Value(), 3.5);
}

TEST(Gauge, SetAddSub) {
  Gauge g;
  g.Set(10);
  g.Inc();
  g.Dec();
  g.Dec();
  g.Add(0.5);
  g.Sub(2);
  EXPECT_DOUBLE_EQ(g.Value(), 7.5);
}

TEST(Histogram, BucketsAreInclusiveAndCumulative) {
  std::vector<double> bounds = {1, 2, 5};
  Histogram h(&bounds);
  h.Observe(0.5);
  h.Observe(1);  // le="1" is inclusive
  h.Observe(1.5);
  h.Observe(5);
  h.Observe(7);
  h.Observe(std::nan(""));  // +Inf only
  Histogram::Snapshot s = h.Snap();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 3, 4, 6}));
  EXPECT_EQ(s.count, 6u);
  EXPECT_EQ(h.Count(), 6u);
  EXPECT_TRUE(std::isnan(s.sum));
}

TEST(Registry, ExposesExactText) {
  Registry r;
  auto& adds = r.AddCounter("workqueue_adds_total", "Total number of adds handled by workqueue");
  adds.WithLabels({{"name", "b"}}).Inc(3);
  adds.WithLabels({{"name", "a"}}).Inc();
  auto& depth = r.AddGauge("workqueue_depth", "Current depth of workqueue");
  depth.WithLabels({{"name", "a"}}).Set(2);
  auto& lat = r.AddHistogram("req_seconds", "Latency.", {0.1, 1});
  auto& h = lat.WithLabels({{"path", "/x"}, {"code", "200"}});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(3);
  r.AddGauge("up", "").WithLabels().Set(1);
  r.AddCounter("never_used_total", "Families without children are not exposed.");

  EXPECT_EQ(r.Expose(),
            "# HELP req_seconds Latency.\n"
            "# TYPE req_seconds histogram\n"
            "req_seconds_bucket{code=\"200\",path=\"/x\",le=\"0.1\"} 1\n"
            "req_seconds_bucket{code=\"200\",path=\"/x\",le=\"1\"} 2\n"
            "req_seconds_bucket{code=\"200\",path=\"/x\",le=\"+Inf\"} 3\n"
            "req_seconds_sum{code=\"200\",path=\"/x\"} 3.55\n"
            "req_seconds_count{code=\"200\",path=\"/x\"} 3\n"
            "# TYPE up gauge\n"
            "up 1\n"
            "# HELP workqueue_adds_total Total number of adds handled by workqueue\n"
            "# TYPE workqueue_adds_total counter\n"
            "workqueue_adds_total{name=\"a\"} 1\n"
            "workqueue_adds_total{name=\"b\"} 3\n"
            "# HELP workqueue_depth Current depth of workqueue\n"
            "# TYPE workqueue_depth gauge\n"
            "workqueue_depth{name=\"a\"} 2\n");
}

TEST(Registry, UnlabeledHistogramAndDefaultBuckets) {
  Registry r;
  r.AddHistogram("h", "x").WithLabels().Observe(0.01);
  EXPECT_EQ(r.Expose(),
            "# HELP h x\n"
            "# TYPE h histogram\n"
            "h_bucket{le=\"0.005\"} 0\n"
            "h_bucket{le=\"0.01\"} 1\n"
            "h_bucket{le=\"0.025\"} 1\n"
            "h_bucket{le=\"0.05\"} 1\n"
            "h_bucket{le=\"0.1\"} 1\n"
            "h_bucket{le=\"0.25\"} 1\n"
            "h_bucket{le=\"0.5\"} 1\n"
            "h_bucket{le=\"1\"} 1\n"
            "h_bucket{le=\"2.5\"} 1\n"
            "h_bucket{le=\"5\"} 1\n"
            "h_bucket{le=\"10\"} 1\n"
            "h_bucket{le=\"+Inf\"} 1\n"
            "h_sum 0.01\n"
            "h_count 1\n");
}

TEST(Registry, EscapesLabelValuesAndHelp) {
  Registry r;
  r.AddCounter("c_total", "a \\ back\nslash \"quoted\"")
      .WithLabels({{"v", "x\\y\"z\nw"}})
      .Inc();
  EXPECT_EQ(r.Expose(),
            "# HELP c_total a \\\\ back\\nslash \"quoted\"\n"
            "# TYPE c_total counter\n"
            "c_total{v=\"x\\\\y\\\"z\\nw\"} 1\n");
}

TEST(Registry, GetOrCreateReturnsSameFamilyAndChild) {
  Registry r;
  auto& a = r.AddCounter("x_total", "first");
  auto& b = r.AddCounter("x_total", "second");
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(b.help(), "first");
  Counter& c1 = a.WithLabels({{"name", "q"}});
  Counter& c2 = b.WithLabels({{"name", "q"}});
  EXPECT_EQ(&c1, &c2);
  EXPECT_EQ(a.size(), 1u);
  EXPECT_TRUE(a.Remove({{"name", "q"}}));
  EXPECT_FALSE(a.Remove({{"name", "q"}}));
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(r.Expose(), "");
}

TEST(RegistryDeathTest, TypeClashAndBadNamesAbort) {
  Registry r;
  r.AddCounter("m", "");
  EXPECT_DEATH(r.AddGauge("m", ""), "different types");
  EXPECT_DEATH(r.AddGauge("1bad", ""), "invalid metric name");
  EXPECT_DEATH(r.AddGauge("g", "").WithLabels({{"bad-name", "x"}}), "invalid label name");
  EXPECT_DEATH(r.AddHistogram("h", "").WithLabels({{"le", "x"}}), "reserved");
  EXPECT_DEATH(r.AddHistogram("h2", "", {2, 1}), "strictly increasing");
}

TEST(Registry, CollectHooksRunBeforeExposeAndCanBeRemoved) {
  Registry r;
  Gauge& g = r.AddGauge("g", "").WithLabels();
  int calls = 0;
  Registry::HookId id = r.AddCollectHook([&] { g.Set(++calls); });
  EXPECT_EQ(r.Expose(), "# TYPE g gauge\ng 1\n");
  EXPECT_EQ(r.Expose(), "# TYPE g gauge\ng 2\n");
  r.RemoveCollectHook(id);
  r.RemoveCollectHook(id);  // no-op
  EXPECT_EQ(r.Expose(), "# TYPE g gauge\ng 2\n");
  EXPECT_EQ(calls, 2);
}

TEST(Registry, DefaultIsAProcessSingleton) {
  EXPECT_EQ(&Registry::Default(), &Registry::Default());
}

TEST(Registry, ConcurrentUpdatesAreNotLost) {
  Registry r;
  auto& counters = r.AddCounter("c_total", "");
  auto& hist = r.AddHistogram("h", "", {0.5});
  constexpr int kThreads = 4;
  constexpr int kIters = 10000;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        Counter& c = counters.WithLabels({{"name", "shared"}});
        Histogram& h = hist.WithLabels();
        for (int i = 0; i < kIters; ++i) {
          c.Inc();
          h.Observe(t % 2 == 0 ? 0.25 : 1.0);
          if (i % 1000 == 0) (void)r.Expose();  // scrapes race with updates
        }
      });
    }
  }
  EXPECT_DOUBLE_EQ(counters.WithLabels({{"name", "shared"}}).Value(), kThreads * kIters);
  Histogram::Snapshot s = hist.WithLabels().Snap();
  EXPECT_EQ(s.cumulative[0], static_cast<uint64_t>(kThreads / 2 * kIters));
  EXPECT_EQ(s.count, static_cast<uint64_t>(kThreads * kIters));
  EXPECT_DOUBLE_EQ(s.sum, kThreads / 2 * kIters * 0.25 + kThreads / 2 * kIters * 1.0);
}

}  // namespace
}  // namespace spiderpool::kube::metrics
