#pragma once
// Kubernetes name and value formats (k8s.io/apimachinery/pkg/util/validation): the ONE place
// these rules and their messages live. Each Is* function returns every message kube-apiserver
// gives for the value, in its order and wording (empty = valid); callers that report field
// errors make one field.Invalid per message, as the apiserver does. The Matches* predicates are
// the bare patterns (no length limit) for code that mirrors a non-Kubernetes check using the same
// regex (Multus' network-selection names).

#include <string>
#include <string_view>
#include <vector>

namespace spiderpool::api {

inline constexpr size_t kDns1123LabelMaxLength = 63;
inline constexpr size_t kDns1123SubdomainMaxLength = 253;
inline constexpr size_t kQualifiedNameMaxLength = 63;  // the name part of a qualified name
inline constexpr size_t kLabelValueMaxLength = 63;

// IsDNS1123Label: <= 63, [a-z0-9]([-a-z0-9]*[a-z0-9])?; "must not contain dots" for a subdomain.
std::vector<std::string> IsDns1123Label(std::string_view value);
// IsDNS1123Subdomain: <= 253, dot-separated DNS-1123 labels.
std::vector<std::string> IsDns1123Subdomain(std::string_view value);
// IsDNS1035Label: <= 63, [a-z]([-a-z0-9]*[a-z0-9])?.
std::vector<std::string> IsDns1035Label(std::string_view value);
// IsQualifiedName: [DNS-subdomain prefix "/"] name part (<= 63, alphanumeric ends, [-_.]
// inside). The format of label keys, annotation keys and finalizers.
std::vector<std::string> IsQualifiedName(std::string_view value);
// IsValidLabelValue: empty, or <= 63 characters of the qualified name part's pattern.
std::vector<std::string> IsValidLabelValue(std::string_view value);
// IsCIdentifier: [A-Za-z_][A-Za-z0-9_]* (no length limit).
std::vector<std::string> IsCIdentifier(std::string_view value);

// The bare patterns.
bool MatchesDns1123Label(std::string_view s);      // [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool MatchesDns1123Subdomain(std::string_view s);  // labels joined by '.'
bool MatchesQualifiedNamePart(std::string_view s); // ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]

}  // namespace spiderpool::api
