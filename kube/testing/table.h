#pragma once
// meta.k8s.io Table output, as kube-apiserver serves it to `kubectl get`:
//
//   * NegotiateTable reads the Accept header kubectl sends
//     (`application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;
//     g=meta.k8s.io,application/json`) and picks the Table version (or none: plain JSON).
//   * TableConvertor::ForCustomResource mirrors apiextensions-apiserver's tableconvertor: a
//     "Name" column, then the CRD version's additionalPrinterColumns (name, type, format,
//     description, priority; jsonPath evaluated by JsonPath, jsonpath.h), or, when
//     the version declares none, a single "Age" column (type date, .metadata.creationTimestamp).
//     Cells of type integer/number/boolean keep JSON types, "string" cells print the value like
//     kubectl's JSONPath printer (maps/arrays as JSON), "date" cells become ages ("5m", "3d").
//     Missing values are null cells (kubectl prints <none>).
//   * TableConvertor::ForBuiltin: a few of kube-apiserver's printers for the built-in types we
//     serve (namespaces, configmaps, secrets, pods, nodes, services, leases, deployments; CRD
//     objects get the server's default "Name"/"Created At"); every other resource gets Name + Age.
//   * Rows carry the object as PartialObjectMetadata (includeObject=Metadata, the default), the
//     full object (includeObject=Object) or null (None).

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/json.h"
#include "kube/testing/jsonpath.h"

namespace spiderpool::kube::testing {


// k8s.io/apimachinery/pkg/util/duration.HumanDuration ("45s", "5m10s", "3h", "2d4h", "3y").
std::string HumanDuration(absl::Duration d);

// The version of meta.k8s.io representation `as` ("Table", "PartialObjectMetadata",
// "PartialObjectMetadataList") an Accept header asks for ahead of plain JSON: "v1", "v1beta1",
// or nullopt (plain JSON, or an `as=` we do not serve, which falls back to plain JSON here).
std::optional<std::string> NegotiateAs(std::string_view accept, std::string_view as);
inline std::optional<std::string> NegotiateTable(std::string_view accept) {
  return NegotiateAs(accept, "Table");
}

// kube-apiserver's PartialObjectMetadata of `obj`: {"kind":"PartialObjectMetadata",
// "apiVersion":"meta.k8s.io/<version>","metadata":...} (client-go's metadata informers).
base::Json PartialObjectMetadata(const base::Json& obj, std::string_view version);

enum class IncludeObject { kNone, kMetadata, kObject };
// includeObject query parameter ("" -> Metadata).
IncludeObject ParseIncludeObject(std::string_view value);

struct TableColumn {
  std::string name;
  std::string type;    // string integer number boolean date
  std::string format;  // "name" for the Name column
  std::string description;
  int priority = 0;
};

class TableConvertor {
 public:
  // `additional_printer_columns`: spec.versions[].additionalPrinterColumns (null/[] = none).
  static TableConvertor ForCustomResource(const base::Json& additional_printer_columns);
  // Built-in resources, by group and plural.
  static TableConvertor ForBuiltin(std::string_view group, std::string_view plural);

  const std::vector<TableColumn>& columns() const { return columns_; }
  // One row's cells for `object` at time `now`.
  base::Json Cells(const base::Json& object, absl::Time now) const;
  // {"cells": [...], "object": ...}
  base::Json Row(const base::Json& object, absl::Time now, IncludeObject include,
                 std::string_view table_version) const;
  // A whole Table: `list_metadata` becomes its metadata (resourceVersion, continue,
  // remainingItemCount). `headers` = false leaves columnDefinitions null (watch events after
  // the first).
  base::Json ToTable(const std::vector<const base::Json*>& objects,
                     const base::Json& list_metadata, absl::Time now, IncludeObject include,
                     std::string_view table_version, bool headers = true) const;

 private:
  using CellFn = std::function<base::Json(const base::Json& object, absl::Time now)>;
  std::vector<TableColumn> columns_;
  std::vector<CellFn> cells_;  // one per column
};

}  // namespace spiderpool::kube::testing
