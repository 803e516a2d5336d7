#pragma once
// The subset of CEL that DRA device selectors use here (our DeviceClass and the selectors the
// controller's ResourceClaim webhook adds, dra/README.md "Claims"), evaluated against one device
// the way kube-scheduler's structured-parameters allocator does. For the loopback API server,
// which has no scheduler (the demo and tests allocate claims with dra/allocator).
//
//   expr    := or
//   or      := and { "||" and }
//   and     := unary { "&&" unary }
//   unary   := "!" unary | rel
//   rel     := operand [ ("==" | "!=" | "in") operand ]
//   operand := "(" expr ")" | literal | "[" [ literal { "," literal } ] "]" | access
//   literal := "..." string (escapes \\ \" \n \r \t \xNN) | integer | true | false
//   access  := "device" { "." ident | "[" string "]" }
//
// Values: device.driver (string), device.attributes (map: domain -> map: id -> value),
// device.attributes["<domain>"] (map), device.attributes["<domain>"].<id> (bool, int or
// string; versions are unsupported). A missing map key is a runtime error ("no such key"),
// as in CEL; `&&` / `||` absorb an error when the other side decides the result (CEL's
// commutative short-circuit). Anything else — other identifiers, functions (`.matches()`,
// `has()`, `.?`), arithmetic, `<`, ternaries — is a parse error: an unsupported expression is
// never a silent match. The result of a selector must be a bool.

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/resource_slice.h"

namespace spiderpool::dra::allocator {

// A device as selectors see it: the slice's driver, attributes keyed by fully qualified
// name (bare ids of the slice are put in the driver's domain).
struct DeviceView {
  std::string driver;
  std::map<std::string, std::map<std::string, api::DeviceAttribute>> attributes;  // domain -> id
  static DeviceView Of(std::string_view driver, const api::Device& device);
};

class Expression {
 public:
  // Parses `text` (InvalidArgument with the offset and what was expected on a syntax error or an
  // unsupported construct).
  static absl::StatusOr<Expression> Parse(std::string_view text);
  // true / false, or the runtime error (InvalidArgument "no such key: ...", a type mismatch).
  absl::StatusOr<bool> Evaluate(const DeviceView& device) const;
  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace spiderpool::dra::allocator
