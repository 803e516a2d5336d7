// The SpiderReservedIP rules of reference §5 and the mutating defaults.

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/validation/test_objects.h"
#include "api/validation/validation.h"

namespace spiderpool::api::validation {
namespace {

using namespace testing_objects;  // NOLINT(build/namespaces)

// ---- SpiderReservedIP ---------------------------------------------------------------------------

api::SpiderReservedIP Reserved() {
  api::SpiderReservedIP r;
  r.SetTypeMeta();
  r.metadata.name = "rip";
  r.spec.ip_version = 4;
  r.spec.ips = {"10.0.0.5", "10.0.0.8-10.0.0.9"};
  return r;
}

TEST(ReservedIP, CreateRules) {
  Context ctx;
  EXPECT_TRUE(ValidateReservedIPCreate(Reserved(), ctx).ok());

  api::SpiderReservedIP r = Reserved();
  r.spec.ip_version.reset();
  EXPECT_EQ(Strings(ValidateReservedIPCreate(r, ctx).errors),
            (std::vector<std::string>{"spec.ipVersion: Invalid value: \"null\": is not generated "
                                      "correctly, 'spec.ips' is empty or 'spec.ips[0]' may be "
                                      "invalid"}));
  r.spec.ip_version = 7;
  EXPECT_EQ(Strings(ValidateReservedIPCreate(r, ctx).errors),
            (std::vector<std::string>{
                "spec.ipVersion: Unsupported value: 7: supported values: \"4\", \"6\""}));
  r = Reserved();
  ctx.config.enable_ipv4 = false;
  EXPECT_EQ(Strings(ValidateReservedIPCreate(r, ctx).errors),
            (std::vector<std::string>{"spec.ipVersion: Forbidden: IPv4 is disabled"}));
  ctx.config.enable_ipv4 = true;
  r.spec.ips = {"10.0.0.1", "fd00::1", "10.0.0.9-10.0.0.2"};
  EXPECT_EQ(Strings(ValidateReservedIPCreate(r, ctx).errors),
            (std::vector<std::string>{
                "spec.ips[1]: Invalid value: \"fd00::1\": invalid IP range format in IPv4 "
                "'fd00::1'",
                "spec.ips[2]: Invalid value: \"10.0.0.9-10.0.0.2\": invalid IP range format in "
                "IPv4 '10.0.0.9-10.0.0.2'"}));
}

TEST(ReservedIP, UpdateRules) {
  api::SpiderReservedIP old_r = Reserved();
  api::SpiderReservedIP r = Reserved();
  r.spec.ip_version = 6;
  r.spec.ips = {"fd00::1"};
  EXPECT_EQ(Strings(ValidateReservedIPUpdate(old_r, r, {}).errors),
            (std::vector<std::string>{"spec.ipVersion: Forbidden: is not changeable"}));

  // Being deleted now: allowed. Already being deleted: forbidden.
  api::SpiderReservedIP deleting = Reserved();
  deleting.metadata.deletion_timestamp = api::Time{};
  EXPECT_TRUE(ValidateReservedIPUpdate(old_r, deleting, {}).ok());
  Result res = ValidateReservedIPUpdate(deleting, deleting, {});
  EXPECT_EQ(res.Message(), "forbidden: cannot update a terminating ReservedIP");
}

TEST(MutateReservedIP, VersionFromFirstIPAndMerge) {
  api::SpiderReservedIP r;
  EXPECT_EQ(MutateReservedIP(&r, {}).message(), "empty 'spec.ips', noting to mutate");
  r.spec.ips = {"fd00::3", "fd00::1-fd00::2"};
  ASSERT_TRUE(MutateReservedIP(&r, {}).ok());
  EXPECT_EQ(r.spec.ip_version, 6);
  EXPECT_EQ(r.spec.ips, std::vector<std::string>{"fd00::1-fd00::3"});
  api::SpiderReservedIP bad;
  bad.spec.ips = {"x"};
  EXPECT_EQ(MutateReservedIP(&bad, {}).message(),
            "failed to generate 'spec.ipVersion' from 'spec.ips[0]' x, nothing to mutate");
}


}  // namespace
}  // namespace spiderpool::api::validation
