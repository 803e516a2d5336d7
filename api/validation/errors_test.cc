#include "api/validation/errors.h"

#include <gtest/gtest.h>

#include "api/codec.h"
#include "base/json.h"

namespace spiderpool::api::validation {
namespace {

TEST(GoQuote, EscapesLikeStrconvQuote) {
  EXPECT_EQ(GoQuote("10.0.0.1"), "\"10.0.0.1\"");
  EXPECT_EQ(GoQuote(""), "\"\"");
  EXPECT_EQ(GoQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(GoQuote("tab\there\nnl"), "\"tab\\there\\nnl\"");
  EXPECT_EQ(GoQuote(std::string("\x01\x7f", 2)), "\"\\x01\\x7f\"");
  EXPECT_EQ(GoQuote("\xff"), "\"\\xff\"");                 // invalid UTF-8
  EXPECT_EQ(GoQuote("\xc3\xa9t\xc3\xa9"), "\"\xc3\xa9t\xc3\xa9\"");  // printable UTF-8 kept
  EXPECT_EQ(GoQuote("\xc2\xa0"), "\"\\u00a0\"");          // no-break space
}

TEST(BadValue, RendersLikeErrorBody) {
  EXPECT_EQ(BadValue::String("x").rendered(), "\"x\"");
  EXPECT_EQ(BadValue::Int(-5).rendered(), "-5");
  EXPECT_EQ(BadValue::Bool(true).rendered(), "true");
  EXPECT_EQ(BadValue::Null().rendered(), "\"null\"");
  EXPECT_EQ(BadValue::Strings({"a", "b"}).rendered(), "[]string{\"a\", \"b\"}");
  EXPECT_EQ(BadValue::Strings({}).rendered(), "[]string(nil)");
  EXPECT_EQ(GoStringSlice({"10.0.0.1-10.0.0.9", "10.0.0.20"}), "[10.0.0.1-10.0.0.9 10.0.0.20]");
}

TEST(FieldError, BodiesOfEveryType) {
  EXPECT_EQ(Invalid("spec.gateway", BadValue::String("10.0.1.1"), "bad").ToString(),
            "spec.gateway: Invalid value: \"10.0.1.1\": bad");
  EXPECT_EQ(Required("spec.ips", "requires at least one item").ToString(),
            "spec.ips: Required value: requires at least one item");
  EXPECT_EQ(Forbidden("spec.subnet", "is not changeable").ToString(),
            "spec.subnet: Forbidden: is not changeable");
  EXPECT_EQ(NotSupported("spec.ipVersion", BadValue::Int(5), {"4", "6"}).ToString(),
            "spec.ipVersion: Unsupported value: 5: supported values: \"4\", \"6\"");
  EXPECT_EQ(Duplicate("spec.routes[1].dst", BadValue::String("10.0.0.0/8")).ToString(),
            "spec.routes[1].dst: Duplicate value: \"10.0.0.0/8\"");
  EXPECT_EQ(NotFound("spec.defaultNic.multusName", BadValue::String("m")).ToString(),
            "spec.defaultNic.multusName: Not found: \"m\"");
  EXPECT_EQ(TooMany("spec.ips", 5, 3).ToString(), "spec.ips: Too many: 5: must have at most 3 items");
  EXPECT_EQ(TooLong("metadata.name", 253).ToString(),
            "metadata.name: Too long: may not be more than 253 bytes");
  EXPECT_EQ(Internal("spec.ips", "boom").ToString(), "spec.ips: Internal error: boom");
  EXPECT_EQ(Forbidden("", "whole object").ToString(), "Forbidden: whole object");
  EXPECT_EQ(ErrorTypeReason(ErrorType::kInvalid), "FieldValueInvalid");
  EXPECT_EQ(ErrorTypeReason(ErrorType::kNotSupported), "FieldValueNotSupported");
  EXPECT_EQ(ErrorTypeReason(ErrorType::kTooMany), "FieldValueTooMany");
}

TEST(Aggregate, OneMessageOrBracketedListWithoutDuplicates) {
  FieldError a = Invalid("spec.gateway", BadValue::String("10.0.1.1"), "bad gw");
  FieldError b = Forbidden("spec.ips", "overlap");
  EXPECT_EQ(AggregateMessage({}), "");
  EXPECT_EQ(AggregateMessage({a}), "spec.gateway: Invalid value: \"10.0.1.1\": bad gw");
  EXPECT_EQ(AggregateMessage({a, b}),
            "[spec.gateway: Invalid value: \"10.0.1.1\": bad gw, spec.ips: Forbidden: overlap]");
  // utilerrors dedups identical messages; a list of one distinct message has no brackets.
  EXPECT_EQ(AggregateMessage({a, a}), "spec.gateway: Invalid value: \"10.0.1.1\": bad gw");
  EXPECT_EQ(AggregateMessage({a, b, a}),
            "[spec.gateway: Invalid value: \"10.0.1.1\": bad gw, spec.ips: Forbidden: overlap]");
}

TEST(InvalidStatus, MatchesApierrorsNewInvalid) {
  ErrorList errs = {Invalid("spec.gateway", BadValue::String("10.0.1.1"),
                            "not pertains to the 'spec.subnet' 10.0.0.0/24 of IPPool"),
                    Forbidden("spec.ips", "overlap")};
  EXPECT_EQ(InvalidMessage("spiderpool.spidernet.io", "SpiderIPPool", "pool1", errs),
            "SpiderIPPool.spiderpool.spidernet.io \"pool1\" is invalid: [spec.gateway: Invalid "
            "value: \"10.0.1.1\": not pertains to the 'spec.subnet' 10.0.0.0/24 of IPPool, "
            "spec.ips: Forbidden: overlap]");
  EXPECT_EQ(InvalidMessage("", "Pod", "p", {}), "Pod \"p\" is invalid");
  api::Status s = InvalidStatus("spiderpool.spidernet.io", "SpiderIPPool", "pool1", errs);
  base::Json want = *base::ParseJson(R"({
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "SpiderIPPool.spiderpool.spidernet.io \"pool1\" is invalid: [spec.gateway: Invalid value: \"10.0.1.1\": not pertains to the 'spec.subnet' 10.0.0.0/24 of IPPool, spec.ips: Forbidden: overlap]",
    "reason": "Invalid",
    "details": {"name": "pool1", "group": "spiderpool.spidernet.io", "kind": "SpiderIPPool",
      "causes": [
        {"reason": "FieldValueInvalid", "message": "Invalid value: \"10.0.1.1\": not pertains to the 'spec.subnet' 10.0.0.0/24 of IPPool", "field": "spec.gateway"},
        {"reason": "FieldValueForbidden", "message": "Forbidden: overlap", "field": "spec.ips"}]},
    "code": 422})");
  EXPECT_EQ(api::Encode(s), want) << base::DumpJsonPretty(api::Encode(s));
}

TEST(ForbiddenStatus, QualifiedAndUnqualified) {
  api::Status s = ForbiddenStatus("spiderpool.spidernet.io", "spiderippools", "pool1",
                                  "cannot delete an IPPool with allocated IPs(3)");
  EXPECT_EQ(s.code, 403);
  EXPECT_EQ(s.reason, "Forbidden");
  EXPECT_EQ(s.message,
            "spiderippools.spiderpool.spidernet.io \"pool1\" is forbidden: cannot delete an IPPool "
            "with allocated IPs(3)");
  ASSERT_TRUE(s.details.has_value());
  EXPECT_EQ(s.details->kind, "spiderippools");
  api::Status u = ForbiddenStatus("", "", "", "cannot update a terminating IPPool");
  EXPECT_EQ(u.message, "forbidden: cannot update a terminating IPPool");
  api::Status n = ForbiddenStatus("g", "things", "", "no");
  EXPECT_EQ(n.message, "things.g is forbidden: no");
}

TEST(AlreadyExistsStatus, Message) {
  api::Status s = AlreadyExistsStatus("spiderpool.spidernet.io", "SpiderIPPool", "pool1");
  EXPECT_EQ(s.code, 409);
  EXPECT_EQ(s.reason, "AlreadyExists");
  EXPECT_EQ(s.message, "SpiderIPPool.spiderpool.spidernet.io \"pool1\" already exists");
}

TEST(Result, StatusesAndAbslCodes) {
  Result ok;
  ok.group = "spiderpool.spidernet.io";
  ok.kind = "SpiderIPPool";
  ok.name = "p";
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.Message(), "");
  EXPECT_EQ(ok.ToStatus().status, "Success");
  EXPECT_TRUE(ok.ToAbslStatus().ok());

  Result invalid = ok;
  invalid.errors.push_back(Forbidden("spec.subnet", "is not changeable"));
  EXPECT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.Message(),
            "SpiderIPPool.spiderpool.spidernet.io \"p\" is invalid: spec.subnet: Forbidden: is not "
            "changeable");
  EXPECT_EQ(invalid.ToStatus().code, 422);
  EXPECT_TRUE(absl::IsInvalidArgument(invalid.ToAbslStatus()));

  Result denied = ok;
  denied.denied = ForbiddenStatus("", "", "", "cannot update a terminating IPPool");
  EXPECT_EQ(denied.Message(), "forbidden: cannot update a terminating IPPool");
  EXPECT_EQ(denied.ToStatus().code, 403);
  EXPECT_TRUE(absl::IsPermissionDenied(denied.ToAbslStatus()));

  Result exists = ok;
  exists.denied = AlreadyExistsStatus("g", "K", "p");
  EXPECT_TRUE(absl::IsAlreadyExists(exists.ToAbslStatus()));
}

}  // namespace
}  // namespace spiderpool::api::validation
