#pragma once
// RFC 6902 JSON patches computed from two documents, for mutating admission webhooks: the
// handler returns the object it wants stored, the server answers with the patch from the
// object kube-apiserver sent to it.
//
//   base::Json patch = webhook::CreateJsonPatch(request_object, mutated_object);
//   // [{"op":"add","path":"/metadata/finalizers","value":["spiderpool.spidernet.io"]}, ...]
//
// Applying the result to `from` (base::ApplyJsonPatch) yields a document equal to `to`.
// Object members are compared key by key (removals and replacements in key order, then
// additions); arrays element by element over their common prefix, then the surplus elements
// of `from` are removed from the end backwards and the surplus of `to` appended by index.
// Numbers compare by value (4 == 4.0 == 4u), as nlohmann does. Keys are escaped as JSON
// pointer tokens ("~" -> "~0", "/" -> "~1").

#include <string>
#include <string_view>

#include "base/json.h"

namespace spiderpool::kube::webhook {

// The operations that turn `from` into `to` (an array; empty when they are equal). A change of
// the root itself is one "replace" at path "".
base::Json CreateJsonPatch(const base::Json& from, const base::Json& to);

// `patch` without the operations that also appear, identically, in `round_trip_patch`: the
// patch from the request object to the same object decoded and re-encoded by the handler's
// types without any mutation. Those operations only record what the types do not model
// (unknown fields, `"ips": []` that omitempty drops, a value of the wrong JSON type) and would
// otherwise erase it from the stored object. controller-runtime's defaulter drops such
// "remove" operations the same way.
base::Json DropRoundTripOperations(const base::Json& patch, const base::Json& round_trip_patch);

// One JSON pointer reference token: "a/b~c" -> "a~1b~0c".
std::string EscapeJsonPointerToken(std::string_view token);

}  // namespace spiderpool::kube::webhook
